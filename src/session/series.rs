//! The per-replica Prometheus series of the report, thinned to about one point per second.

use crate::cell::context::CellEnv;
use crate::metrics::window::ReplicaHistory;
use crate::report::json::SeriesPoint;
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::Instant;

/// Keep at most one point per this interval in the report.
pub const REPORT_STEP: Duration = Duration::from_secs(1);

/// Thins one replica's points to one per [`REPORT_STEP`], times relative to `origin`.
pub fn thin(h: &ReplicaHistory, origin: Instant) -> Vec<SeriesPoint> {
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
pub fn replica_series(env: &CellEnv) -> BTreeMap<String, Vec<SeriesPoint>> {
    let Some(poller) = &env.poller else { return BTreeMap::new() };
    poller.history().replicas.iter().map(|h| (h.name.clone(), thin(h, env.started))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::window::Point;

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
