//! Whether a cell's shards ran it together: each shard records the slot every attempt had on
//! the session's timeline (`shard.timeline`, `run --start-at`). A shard resumed with a new
//! `--start-at` (`run --resume`) runs its unfinished cells on its own new timeline, so those
//! cells' windows did not open with the other shards'; the merge names them, and the shards
//! that ran without `--start-at` (no timeline, nothing aligned).

use crate::report::json::SessionReport;
use crate::report::shard::SlotRecord;
use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

/// Slot starts further apart than this are different timelines (shards of one timeline
/// compute the same instants, to float rounding).
const SAME_SLOT_S: f64 = 0.001;

/// One note per cell whose shards started an attempt of it at different instants of the
/// timeline: the cell, its attempt and each shard's slot start (`parts`: shard index, report);
/// then one naming the shards that had no timeline at all (no --start-at).
pub(super) fn notes(parts: &[(u32, &SessionReport)]) -> Vec<String> {
    let mut by_cell: BTreeMap<(&str, u32), Vec<(u32, f64)>> = BTreeMap::new();
    for (i, r) in parts {
        for slot in r.shard.iter().flat_map(|s| last_slots(&s.timeline)) {
            by_cell.entry((slot.cell.as_str(), slot.attempt)).or_default().push((*i, slot.slot_start_unix_s));
        }
    }
    let mut named: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for ((cell, attempt), starts) in by_cell {
        if named.contains(&cell) || !apart(&starts) {
            continue;
        }
        named.push(cell);
        let each: Vec<String> = starts.iter().map(|(i, t)| format!("shard {i} at {}", wall(*t))).collect();
        out.push(format!(
            "{cell} attempt {attempt}: its shards ran it at different timeline starts ({}; a shard resumed with a \
             new --start-at runs it alone): their windows did not open together, and its figures add shards \
             that did not load the server at the same time",
            each.join(", ")
        ));
    }
    out.extend(unaligned(parts));
    out
}

/// A note naming the shards that ran without --start-at, if any: they ran their cells whenever
/// each got to them, so nothing says they overlapped and their added figures may be of load the
/// server never saw at once.
fn unaligned(parts: &[(u32, &SessionReport)]) -> Option<String> {
    let shards: Vec<String> = parts
        .iter()
        .filter(|(_, r)| r.shard.as_ref().is_some_and(|s| s.start_at_unix_s.is_none()))
        .map(|(i, _)| i.to_string())
        .collect();
    (!shards.is_empty()).then(|| {
        format!(
            "shard {} ran without --start-at: its cells were not aligned with the other shards', so the added figures may be of load that did not reach the server at once",
            shards.join(", ")
        )
    })
}

/// The last slot of each attempt in `timeline` (a resumed shard's holds the saved run's first).
fn last_slots(timeline: &[SlotRecord]) -> impl Iterator<Item = &SlotRecord> {
    let last =
        |i: usize, s: &SlotRecord| !timeline[i + 1..].iter().any(|l| (&l.cell, l.attempt) == (&s.cell, s.attempt));
    timeline.iter().enumerate().filter(move |(i, s)| last(*i, s)).map(|(_, s)| s)
}

/// True when two shards' slot starts are further apart than [`SAME_SLOT_S`].
fn apart(starts: &[(u32, f64)]) -> bool {
    let lo = starts.iter().map(|s| s.1).fold(f64::INFINITY, f64::min);
    let hi = starts.iter().map(|s| s.1).fold(f64::NEG_INFINITY, f64::max);
    starts.len() > 1 && hi - lo > SAME_SLOT_S
}

/// A unix instant as RFC 3339 to the second.
fn wall(unix_s: f64) -> String {
    let at = UNIX_EPOCH + Duration::from_secs_f64(unix_s.max(0.0));
    humantime::format_rfc3339_seconds(at).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(index: u32, timeline: Vec<SlotRecord>) -> SessionReport {
        let mut r = crate::report::tests_schema::minimal_report();
        r.shard = Some(crate::report::shard::ShardSection {
            index,
            count: 2,
            session_id: "s".into(),
            start_at_unix_s: Some(1_800_000_000.0),
            clock: None,
            timeline,
        });
        r
    }

    #[test]
    fn a_cell_run_on_another_timeline_is_named_with_its_shards() {
        let t0 = 1_800_000_000.0;
        let a = shard(
            0,
            vec![SlotRecord::on_time("ctx=64 conc=2", 1, t0), SlotRecord::on_time("ctx=64 conc=4", 1, t0 + 16.0)],
        );
        // Shard 1 was killed in the second cell and resumed 100 s later: its saved slot of the
        // second cell comes first, the resumed run's last.
        let b = shard(
            1,
            vec![
                SlotRecord::on_time("ctx=64 conc=2", 1, t0),
                SlotRecord::on_time("ctx=64 conc=4", 1, t0 + 16.0),
                SlotRecord::on_time("ctx=64 conc=4", 1, t0 + 116.0),
            ],
        );
        let notes = notes(&[(0, &a), (1, &b)]);
        assert_eq!(notes.len(), 1, "{notes:?}");
        let n = &notes[0];
        assert!(n.starts_with("ctx=64 conc=4 attempt 1: its shards ran it at different timeline starts"), "{n}");
        assert!(n.contains("shard 0 at 2027-01-15T08:00:16Z") && n.contains("shard 1 at 2027-01-15T08:01:56Z"), "{n}");
    }

    #[test]
    fn shards_of_one_timeline_say_nothing() {
        let t0 = 1_800_000_000.0;
        let a = shard(0, vec![SlotRecord::on_time("c", 1, t0), SlotRecord::on_time("c", 2, t0 + 16.0)]);
        let b = shard(1, vec![SlotRecord::on_time("c", 1, t0 + 0.0004), SlotRecord::on_time("c", 2, t0 + 16.0)]);
        assert!(notes(&[(0, &a), (1, &b)]).is_empty());
        assert!(notes(&[(0, &a)]).is_empty(), "one shard alone");
        let c = shard(1, vec![SlotRecord::on_time("c", 2, t0 + 20.0)]);
        assert_eq!(notes(&[(0, &a), (1, &c)]).len(), 1, "a later attempt apart is named too");
    }
}
