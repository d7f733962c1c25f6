//! The per-replica Prometheus series of the report, thinned to about one point per second; the
//! stretches each replica's polls failed ([`StaleInterval`]), the attempts that lost a target
//! while they measured ([`TargetLoss`]), and the notes about NaN/±Inf metric values and
//! unusable pages (HTML, no engine series).

use crate::cell::context::CellEnv;
use crate::load::sample::ErrorKind;
use crate::metrics::poller::UNUSABLE_BACKOFF_MAX;
use crate::metrics::snapshot::Outage;
use crate::metrics::window::{History, ReplicaHistory};
use crate::report::json::{SeriesPoint, SessionReport, StaleInterval, TargetLoss};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::Instant;

/// Keep at most one point per this interval in the report.
pub(crate) const REPORT_STEP: Duration = Duration::from_secs(1);

/// Thins one replica's points to one per [`REPORT_STEP`], times relative to `origin`.
pub(crate) fn thin(h: &ReplicaHistory, origin: Instant) -> Vec<SeriesPoint> {
    let mut out = Vec::new();
    let mut next: Option<Instant> = None;
    for p in &h.points {
        if next.is_some_and(|n| p.at < n) {
            continue;
        }
        next = Some(p.at + REPORT_STEP);
        out.push(SeriesPoint {
            t_s: p.at.saturating_duration_since(origin).as_secs_f64(),
            running: p.running,
            waiting: p.waiting,
            kv_usage: p.kv_usage,
            generation_tokens: p.generation_tokens,
            prefix_hits_tokens: p.prefix_hits_tokens,
            preemptions: p.preemptions,
        });
    }
    out
}

/// Every polled replica's thinned series.
pub(crate) fn replica_series(env: &CellEnv) -> BTreeMap<String, Vec<SeriesPoint>> {
    let Some(poller) = &env.poller else { return BTreeMap::new() };
    poller.history().replicas.iter().map(|h| (h.name.clone(), thin(h, env.started))).collect()
}

/// Every replica's failed-poll stretches, seconds since `origin`.
pub(crate) fn replica_stale(h: &History, origin: Instant) -> BTreeMap<String, Vec<StaleInterval>> {
    let secs = |t: Instant| t.saturating_duration_since(origin).as_secs_f64();
    let interval = |o: &Outage| StaleInterval { from_s: secs(o.from), to_s: o.to.map(secs), error: o.error.clone() };
    let stale = h.outages.iter().filter(|(_, list)| !list.is_empty());
    stale.map(|(name, list)| (name.clone(), list.iter().map(interval).collect())).collect()
}

/// One note per replica and metric that was NaN or ±Inf in some poll.
pub(crate) fn nonfinite_notes(h: &History) -> Vec<String> {
    let per_metric = h.nonfinite.iter().flat_map(|(r, m)| m.iter().map(move |(name, n)| (r, name, n)));
    per_metric
        .map(|(r, name, n)| format!("replica {r}: `{name}` was NaN or Inf in {n} poll(s); those values were left out"))
        .collect()
}

/// One note per replica whose page was unusable in some poll: why (the first poll's reason),
/// and that it was polled less often meanwhile (up to every [`UNUSABLE_BACKOFF_MAX`] instead of
/// `interval`). The text stays the same as polls go on, so it is said once.
pub(crate) fn unusable_notes(h: &History, interval: Duration) -> Vec<String> {
    let every = |d: Duration| humantime::format_duration(d).to_string();
    let (slowest, interval) = (every(UNUSABLE_BACKOFF_MAX.max(interval)), every(interval));
    let note = |(r, (_, why)): (&String, &(u64, String))| {
        format!(
            "replica {r}: its metrics page is unusable ({why}); its engine figures are missing, \
             and it is polled at most every {slowest} instead of every {interval} while so"
        )
    };
    h.unusable.iter().map(note).collect()
}

/// Shortest stretch of failed polls that counts as a lost target, seconds. A shorter one is a
/// blip (one or a few scrapes failed between answered ones, as a 1% scrape failure rate gives
/// over a long window): the replica kept serving, so the attempt's figures are not suspect.
pub(crate) const LOST_MIN_S: f64 = 2.0;

/// Length of a stale stretch, seconds (an open one runs to `now_s`).
fn length(i: &StaleInterval, now_s: f64) -> f64 {
    i.to_s.unwrap_or(now_s) - i.from_s
}

/// Seconds of `[from, to]` covered by the stretches of `stale` of at least [`LOST_MIN_S`].
fn overlap(stale: &[StaleInterval], from: f64, to: f64, now_s: f64) -> f64 {
    let lost = stale.iter().filter(|i| length(i, now_s) >= LOST_MIN_S);
    lost.map(|i| (i.to_s.unwrap_or(now_s).min(to) - i.from_s.max(from)).max(0.0)).sum()
}

/// One warning per stretch of at least [`LOST_MIN_S`], and one per replica for its blips.
fn stale_warnings(stale: &BTreeMap<String, Vec<StaleInterval>>, now_s: f64) -> Vec<String> {
    let mut out = Vec::new();
    for (name, list) in stale {
        let (long, blips): (Vec<&StaleInterval>, Vec<&StaleInterval>) =
            list.iter().partition(|i| length(i, now_s) >= LOST_MIN_S);
        for i in long {
            let to = i.to_s.map_or("the end".to_string(), |t| format!("{t:.1} s"));
            out.push(format!("replica {name}: metrics polls failed from {:.1} s to {to} ({})", i.from_s, i.error));
        }
        if let Some(first) = blips.first() {
            out.push(format!(
                "replica {name}: {} short metrics poll failure(s) (each under {LOST_MIN_S} s, e.g. {}); \
                 not counted as a lost target",
                blips.len(),
                first.error
            ));
        }
    }
    out
}

/// The losses of one attempt measuring over `[from, to]` with `connect_errors` failed connections.
fn losses(
    stale: &BTreeMap<String, Vec<StaleInterval>>,
    span: (f64, f64),
    now_s: f64,
    connect: (&str, u64),
) -> Vec<TargetLoss> {
    let mut out: Vec<TargetLoss> = stale
        .iter()
        .map(|(name, list)| TargetLoss {
            replica: name.clone(),
            lost_s: overlap(list, span.0, span.1, now_s),
            connect_errors: 0,
        })
        .filter(|l| l.lost_s > 0.0)
        .collect();
    if connect.1 > 0 {
        out.push(TargetLoss { replica: connect.0.to_string(), lost_s: 0.0, connect_errors: connect.1 });
    }
    out
}

fn loss_warning(what: &str, span_s: f64, lost: &[TargetLoss]) -> String {
    let parts: Vec<String> = lost
        .iter()
        .map(|l| match l.connect_errors {
            0 => format!("replica {} stale for {:.1} s", l.replica, l.lost_s),
            n => format!("{n} connection error(s) to {}", l.replica),
        })
        .collect();
    format!(
        "{what}: target lost during its {span_s:.1} s of measurement ({}); its figures are unreliable",
        parts.join(", ")
    )
}

/// Fills `target_lost` of every decode and burst attempt from the report's stale intervals and
/// connection errors, and adds one warning per flagged attempt. `target` names the load target.
pub(crate) fn flag_lost_targets(report: &mut SessionReport, now_s: f64, target: &str) {
    let stale = report.replica_stale.clone();
    let mut notes = Vec::new();
    for cell in report.decode.iter_mut().flat_map(|d| d.cells.iter_mut()) {
        for a in &mut cell.attempts {
            let from = a.started_s + a.warmup_s;
            let connect = a.errors.get(&ErrorKind::Connect).copied().unwrap_or(0);
            a.target_lost = losses(&stale, (from, from + a.window_s), now_s, (target, connect));
            if !a.target_lost.is_empty() {
                let what = format!("decode {} conc {} attempt {}", cell.ctx_label, cell.conc, a.attempt);
                notes.push(loss_warning(&what, a.window_s, &a.target_lost));
            }
        }
    }
    for cell in report.burst.iter_mut().flat_map(|b| b.cells.iter_mut()) {
        for a in &mut cell.attempts {
            let connect = a.errors.get(&ErrorKind::Connect).copied().unwrap_or(0);
            a.target_lost = losses(&stale, (a.started_s, a.started_s + a.makespan_s), now_s, (target, connect));
            if !a.target_lost.is_empty() {
                let what = format!("burst {} x{} attempt {}", cell.ctx_label, cell.conc, a.attempt);
                notes.push(loss_warning(&what, a.makespan_s, &a.target_lost));
            }
        }
    }
    report.warnings.extend(notes);
}

/// Adds the stale intervals, the attempts' target losses and the poll notes to `report`.
pub(crate) fn add_poll_facts(env: &CellEnv, report: &mut SessionReport) {
    let Some(poller) = &env.poller else { return };
    let h = poller.history();
    report.replica_stale = replica_stale(&h, env.started);
    let now_s = env.since_start(Instant::now());
    report.warnings.extend(stale_warnings(&report.replica_stale, now_s));
    report.warnings.extend(nonfinite_notes(&h));
    report.warnings.extend(unusable_notes(&h, env.cfg.poll_interval));
    flag_lost_targets(report, now_s, crate::net::host_port(&env.target.base));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::window::Point;

    fn stretch(from_s: f64, to_s: Option<f64>) -> StaleInterval {
        StaleInterval { from_s, to_s, error: "HTTP 500".into() }
    }

    #[test]
    fn blips_are_not_a_lost_target_but_a_real_outage_is() {
        let blips: Vec<StaleInterval> =
            (0..70).map(|i| stretch(f64::from(i) * 20.0, Some(f64::from(i) * 20.0 + 0.25))).collect();
        assert_eq!(overlap(&blips, 0.0, 1800.0, 1800.0), 0.0, "70 single failed scrapes lose nothing");
        let mut with_outage = blips.clone();
        with_outage.push(stretch(100.0, Some(106.5)));
        with_outage.push(stretch(1790.0, None));
        assert_eq!(overlap(&with_outage, 0.0, 1800.0, 1800.0), 16.5, "6.5 s down, and down since 1790 s");
        let stale: BTreeMap<String, Vec<StaleInterval>> = [("a".to_string(), with_outage)].into();
        let w = stale_warnings(&stale, 1800.0);
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w[0].contains("from 100.0 s to 106.5 s") && w[1].contains("from 1790.0 s to the end"), "{w:?}");
        assert!(w[2].contains("70 short metrics poll failure(s)"), "{w:?}");
    }

    #[test]
    fn thinning_keeps_one_point_per_second() {
        let t0 = Instant::now();
        let points = (0..40)
            .map(|i| {
                let mut p = Point::from_sample(t0 + Duration::from_millis(250 * i), &Default::default());
                p.running = Some(i as f64);
                p
            })
            .collect();
        let h = ReplicaHistory { name: "a".into(), points, dropped: 0 };
        let s = thin(&h, t0);
        assert_eq!(s.len(), 10);
        assert_eq!(s[1].t_s, 1.0);
        assert_eq!(s[1].running, Some(4.0));
    }
}
