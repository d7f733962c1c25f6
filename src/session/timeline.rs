//! The session's cell timeline (`run --start-at`, issue 27): every shard computes the same
//! fixed slot for each planned attempt, from the plan and the flags alone, so cells start
//! (and decode windows open) at the same wall-clock instants on every shard without the shards
//! talking. A decode cell's slot is its longest warmup, its window, then a drain allowance; a
//! serve or conversation cell's is its schedule's span within `--request-timeout`
//! and a burst's its requests within `--request-timeout` (`timeline_open`); a routing phase's
//! is shard 0's priming, then its measured part (`routing::shard_slot`). A cell with no bound
//! fixed in advance (no `--request-timeout`, an unbounded think time) ends the timeline: the
//! cells from there on start when the one before ends, and the log says why.

use super::timeline_open::{SlotShape, burst_slot, conversation_slot, serve_slot};
use crate::cell::control::CellId;
use crate::cell::spec::{CellKey, CellSpec};
use crate::config::{Rate, RunConfig};
use crate::report::kind::ExperimentKind;
use std::time::{Duration, SystemTime};

/// What a decode slot leaves after its window: the streams' cut, bounded by the attempt's
/// grace before it aborts them, then the closing metrics scrape and the prefix-cache check,
/// each bounded by the poller's 2 s request timeout.
pub(crate) const DRAIN_ALLOWANCE: Duration =
    crate::experiment::decode::attempt::STOP_GRACE.saturating_add(Duration::from_secs(4));

/// One attempt's place on the timeline: offsets from `--start-at`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Slot {
    /// The cell.
    pub cell: CellId,
    /// The attempt, 1-based.
    pub attempt: u32,
    /// When the slot begins, after the timeline's start.
    pub offset: Duration,
    /// The slot's length.
    pub len: Duration,
    /// When the window opens, after the slot's start (None: the cell opens none).
    pub window_at: Option<Duration>,
}

/// The slots of a session's planned attempts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Timeline {
    /// `--start-at`.
    pub start: SystemTime,
    /// In run order.
    pub slots: Vec<Slot>,
    /// The first planned cell without a slot (the timeline ends before it) and why it has
    /// none, if any.
    pub ends_before: Option<(CellId, String)>,
    /// True once the runner has reached the start (every later wait is for a slot).
    pub reached: bool,
}

/// A cell's slot under `cfg`: its length and when its window (a serve or conversation cell's
/// schedule) opens in it; or why its length cannot be bounded in advance.
pub(crate) fn cell_slot(cfg: &RunConfig, spec: &CellSpec) -> SlotShape {
    let rate = match spec.key {
        CellKey::Grid { rate, .. } => rate.unwrap_or(Rate::Inf),
        _ => Rate::Inf,
    };
    match spec.kind {
        ExperimentKind::Decode => {
            let warmup = cfg.decode.warmup_timeout;
            Ok((warmup + cfg.window + DRAIN_ALLOWANCE, Some(warmup)))
        }
        ExperimentKind::Serve => serve_slot(cfg, rate),
        ExperimentKind::Burst => burst_slot(cfg),
        ExperimentKind::Extension(name) if name.as_str() == crate::experiment::conversation::NAME => {
            conversation_slot(cfg, rate)
        }
        // Priming on shard 0, then the measured part from the same instant on every shard.
        ExperimentKind::Routing => Ok(crate::experiment::routing::shard_slot::slot(cfg)),
        other => Err(format!("a {} cell's length is not known in advance", other.as_str())),
    }
}

/// One planned cell: its id, the attempt it starts at (1-based), how many attempts it plans
/// (its runs) and its slot's length and window offset (or why it has no slot).
pub(crate) type PlannedCell = (CellId, u32, u32, SlotShape);

impl Timeline {
    /// The timeline of `cells` in run order from `start`: each attempt's slot right after the
    /// one before; it ends at the first cell without a slot.
    pub(crate) fn plan(start: SystemTime, cells: impl IntoIterator<Item = PlannedCell>) -> Self {
        let (mut slots, mut at) = (Vec::new(), Duration::ZERO);
        for (cell, first, runs, slot) in cells {
            let (len, window_at) = match slot {
                Ok(s) => s,
                Err(why) => return Self { start, slots, ends_before: Some((cell, why)), reached: false },
            };
            for attempt in first..first + runs.max(1) {
                slots.push(Slot { cell, attempt, offset: at, len, window_at });
                at = at.saturating_add(len);
            }
        }
        Self { start, slots, ends_before: None, reached: false }
    }

    /// The slot of `cell`'s attempt `attempt`, when it has one.
    pub(crate) fn slot(&self, cell: CellId, attempt: u32) -> Option<Slot> {
        self.slots.iter().find(|s| s.cell == cell && s.attempt == attempt).copied()
    }
}

/// The timeline of the session's queued cells under `cfg`, when `--start-at` asks for one.
pub(crate) fn of_state(cfg: &RunConfig, state: &super::state::SessionState) -> Option<Timeline> {
    let start = cfg.start_at?;
    let cells = state.queue.iter().filter_map(|&id| {
        let c = state.cells.get(id)?;
        let runs = c.run_progress().map_or(1, |p| p.planned.saturating_sub(p.done).max(1));
        Some((id, c.attempts.len() as u32 + 1, runs, cell_slot(cfg, &c.spec)))
    });
    Some(Timeline::plan(start, cells))
}

/// How late `now` is for `due`, zero when not late.
pub(crate) fn lateness(due: SystemTime, now: SystemTime) -> Duration {
    now.duration_since(due).unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn decode_slots_follow_each_other_and_repeat_for_runs() {
        let mut cfg = crate::cli::run::tests_support::config();
        (cfg.decode.warmup_timeout, cfg.window) = (S(5), S(10));
        let slot = cell_slot(&cfg, &CellSpec::grid(ExperimentKind::Decode, 0, 4));
        assert_eq!(slot, Ok((S(5) + S(10) + DRAIN_ALLOWANCE, Some(S(5)))));
        assert_eq!(DRAIN_ALLOWANCE, S(14), "README and --help say 14 s");
        let t = Timeline::plan(SystemTime::UNIX_EPOCH, [(0, 1, 1, slot.clone()), (2, 1, 2, slot)]);
        let len = S(15) + DRAIN_ALLOWANCE;
        let offsets: Vec<_> = t.slots.iter().map(|s| (s.cell, s.attempt, s.offset)).collect();
        assert_eq!(offsets, [(0, 1, S(0)), (2, 1, len), (2, 2, len * 2)]);
        assert_eq!(t.slot(2, 2).map(|s| t.start + s.offset), Some(SystemTime::UNIX_EPOCH + len * 2));
        assert_eq!(t.slot(1, 1), None);
    }

    #[test]
    fn the_timeline_ends_at_the_first_cell_without_a_bound() {
        let mut cfg = crate::cli::run::tests_support::config();
        let serve = CellSpec { kind: ExperimentKind::Serve, key: CellKey::Grid { ctx: 8, conc: 2, rate: None } };
        let why = cell_slot(&cfg, &serve).unwrap_err();
        assert!(why.contains("--request-timeout"), "{why}");
        let routing = cell_slot(&cfg, &CellSpec::grid(ExperimentKind::Routing, 0, 4));
        assert!(routing.is_ok(), "routing: priming, then the measured part");
        let burst = cell_slot(&cfg, &CellSpec::grid(ExperimentKind::Burst, 0, 4)).unwrap_err();
        assert!(burst.contains("--request-timeout"), "{burst}");
        let d = cell_slot(&cfg, &CellSpec::grid(ExperimentKind::Decode, 0, 4));
        let t = Timeline::plan(
            SystemTime::UNIX_EPOCH,
            [(0, 1, 1, d.clone()), (1, 1, 1, Err(why.clone())), (2, 1, 1, d.clone())],
        );
        assert_eq!((t.slots.len(), &t.ends_before), (1, &Some((1, why.clone()))));
        assert_eq!(t.slot(2, 1), None, "no slot after the end");
        // With --request-timeout the serve cell has its slot, right after the decode cell's.
        cfg.request_timeout = Some(S(20));
        let s = cell_slot(&cfg, &serve);
        let t = Timeline::plan(SystemTime::UNIX_EPOCH, [(0, 1, 1, d.clone()), (1, 1, 1, s.clone()), (2, 1, 1, d)]);
        assert_eq!((t.slots.len(), &t.ends_before), (3, &None));
        let (len, opens) = s.unwrap();
        assert_eq!(t.slot(1, 1).map(|x| (x.len, x.window_at)), Some((len, opens)));
        assert_eq!(t.slot(2, 1).unwrap().offset, t.slot(1, 1).unwrap().offset + len);
    }

    #[test]
    fn lateness_is_zero_when_early() {
        let due = SystemTime::UNIX_EPOCH + S(10);
        assert_eq!(lateness(due, due - S(1)), Duration::ZERO);
        assert_eq!(lateness(due, due + Duration::from_millis(7)), Duration::from_millis(7));
    }

    proptest! {
        /// Two shards planning from the same flags get the same slots, which never overlap.
        #[test]
        fn every_shard_plans_the_same_slots_and_they_never_overlap(
            lens in proptest::collection::vec((1u64..600, 0u64..60, 1u32..4), 1..30),
            start in 0u64..4_000_000_000,
        ) {
            let cells = || lens.iter().enumerate().map(|(i, (len, w, runs))| (i, 1, *runs, Ok((S(*len), Some(S(*w))))));
            let start = SystemTime::UNIX_EPOCH + S(start);
            let (a, b) = (Timeline::plan(start, cells()), Timeline::plan(start, cells()));
            prop_assert_eq!(&a, &b);
            let planned: u32 = lens.iter().map(|l| l.2).sum();
            prop_assert_eq!(a.slots.len() as u32, planned);
            for w in a.slots.windows(2) {
                prop_assert_eq!(w[0].offset + w[0].len, w[1].offset);
            }
        }
    }
}
