//! Per-replica live figures of the running attempt: gauges now, counter deltas since the
//! attempt started, a tok/s sparkline per replica, and the gateway's routing-counter deltas.

use super::control::ReplicaLive;
use crate::metrics::gateway::{CounterDelta, deltas};
use crate::metrics::poller::MetricsSnapshot;
use crate::stats::Ring;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use tokio::time::Instant;

/// Points kept in each replica's tok/s sparkline.
const SPARK_POINTS: usize = 120;

/// Remembers the attempt's first metrics round and recent generation counters.
#[derive(Debug, Default)]
pub(crate) struct ReplicaTracker {
    start: Option<Arc<MetricsSnapshot>>,
    last_seq: Option<u64>,
    last_gen: HashMap<String, (Instant, f64)>,
    spark: HashMap<String, Ring<f64>>,
}

fn delta(now: Option<f64>, then: Option<f64>) -> Option<f64> {
    Some(now? - then.unwrap_or(0.0)).filter(|d| *d >= 0.0)
}

impl ReplicaTracker {
    /// Counts the deltas from `snap` (the attempt's own opening scrape) rather than from the
    /// first round the view sees, which may come after its first requests.
    pub(crate) fn start_at(&mut self, snap: Arc<MetricsSnapshot>) {
        self.start = Some(snap);
    }

    /// Folds in the latest round; `served` counts requests per replica from response headers.
    pub(crate) fn update(
        &mut self,
        snap: &Arc<MetricsSnapshot>,
        served: &BTreeMap<String, u64>,
    ) -> (Vec<ReplicaLive>, Vec<CounterDelta>) {
        let start = self.start.get_or_insert_with(|| snap.clone()).clone();
        if self.last_seq != Some(snap.seq) {
            self.last_seq = Some(snap.seq);
            self.sample_rates(snap);
        }
        let replicas = snap.replicas.iter().map(|r| {
            let now = r.sample.as_ref();
            let then = start.replica(&r.name).and_then(|v| v.sample.as_ref());
            let hits = delta(now.and_then(|s| s.prefix_hits_tokens), then.and_then(|s| s.prefix_hits_tokens));
            let queries = delta(now.and_then(|s| s.prefix_queries_tokens), then.and_then(|s| s.prefix_queries_tokens));
            ReplicaLive {
                name: r.name.clone(),
                running: now.and_then(|s| s.running),
                waiting: now.and_then(|s| s.waiting),
                kv_usage: now.and_then(|s| s.kv_usage),
                hit_ratio: hits.zip(queries).filter(|(_, q)| *q > 0.0).map(|(h, q)| h / q),
                preemptions: delta(now.and_then(|s| s.preemptions), then.and_then(|s| s.preemptions)),
                requests: served.get(&r.name).copied().unwrap_or(0),
                tps_history: self.spark.get(&r.name).map(Ring::to_vec).unwrap_or_default(),
                stale: r.stale,
            }
        });
        let replicas = replicas.collect();
        let routing = match (&start.gateway, &snap.gateway) {
            (Some(a), Some(b)) => deltas(&a.series, &b.series),
            (None, Some(b)) => deltas(&[], &b.series),
            _ => Vec::new(),
        };
        (replicas, routing)
    }

    fn sample_rates(&mut self, snap: &MetricsSnapshot) {
        for r in &snap.replicas {
            let (Some(tokens), Some(at)) = (r.sample.as_ref().and_then(|s| s.live_generation_tokens), r.last_ok) else {
                continue;
            };
            if let Some((t0, g0)) = self.last_gen.get(&r.name)
                && at > *t0
            {
                let rate = ((tokens - g0) / at.saturating_duration_since(*t0).as_secs_f64()).max(0.0);
                self.spark.entry(r.name.clone()).or_insert_with(|| Ring::new(SPARK_POINTS)).push(rate);
            }
            self.last_gen.insert(r.name.clone(), (at, tokens));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::gateway::CounterSeries;
    use crate::metrics::snapshot::GatewayView;

    fn round(seq: u64, requests: f64) -> Arc<MetricsSnapshot> {
        let series =
            vec![CounterSeries { name: "gateway_request_total".into(), labels: Default::default(), value: requests }];
        let gateway = Some(GatewayView { series, ..GatewayView::default() });
        Arc::new(MetricsSnapshot { seq, at: Instant::now(), replicas: Vec::new(), gateway })
    }

    /// The phase's opening scrape read 100, the first round the view saw 103 (three requests
    /// already routed), the closing one 196: the panel's Δ is the phase's 96, not 93.
    #[test]
    fn deltas_count_from_the_opening_scrape_when_given() {
        let served = BTreeMap::new();
        let mut late = ReplicaTracker::default();
        late.update(&round(2, 103.0), &served);
        assert_eq!(late.update(&round(3, 196.0), &served).1[0].delta, 93.0);
        let mut opened = ReplicaTracker::default();
        opened.start_at(round(1, 100.0));
        opened.update(&round(2, 103.0), &served);
        assert_eq!(opened.update(&round(3, 196.0), &served).1[0].delta, 96.0);
    }
}
