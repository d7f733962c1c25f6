//! The distributions of a repeated cell's mean: every percentile (and mean, min, max) of each
//! latency summary averaged over the runs, so the mean the tables show keeps its percentiles
//! in order (a mean of ordered values is ordered) instead of mixing the block's means with one
//! run's other percentiles. Counts stay the last run's.

use crate::report::json::{BurstAttempt, DecodeAttempt};
use crate::report::phase::{PhaseLatency, RoutingPhase};
use crate::report::serve::{ServeAttempt, ServeMetrics};
use crate::stats::Summary;

/// The mean of the values `get` reads from `runs` that have one; None when none has.
fn mean_of<T>(runs: &[&T], get: impl Fn(&T) -> Option<f64>) -> Option<f64> {
    let values: Vec<f64> = runs.iter().filter_map(|r| get(r)).filter(|v| v.is_finite()).collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Every field of a summary averaged over the runs that have one (count: the last run's).
fn summary<T>(runs: &[&T], get: impl Fn(&T) -> Option<Summary>) -> Option<Summary> {
    let have: Vec<Summary> = runs.iter().filter_map(|r| get(r)).collect();
    let last = *have.last()?;
    let avg = |f: fn(&Summary) -> f64| have.iter().map(f).sum::<f64>() / have.len() as f64;
    Some(Summary {
        count: last.count,
        mean: avg(|s| s.mean),
        min: avg(|s| s.min),
        max: avg(|s| s.max),
        p50: avg(|s| s.p50),
        p90: avg(|s| s.p90),
        p95: avg(|s| s.p95),
        p99: avg(|s| s.p99),
    })
}

/// Sets `slot` to the summary over `runs`, when the shown run has one.
fn put<T>(slot: &mut Option<Summary>, runs: &[&T], get: impl Fn(&T) -> Option<Summary>) {
    if slot.is_some() {
        *slot = summary(runs, get);
    }
}

/// `a`'s latency summaries averaged over `runs`.
pub(super) fn decode(a: &mut DecodeAttempt, runs: &[&DecodeAttempt]) {
    put(&mut a.ttft_ms, runs, |r| r.ttft_ms);
    put(&mut a.itl_ms, runs, |r| r.itl_ms);
    put(&mut a.itl_token_ms, runs, |r| r.itl_token_ms);
    put(&mut a.itl_chunk_ms, runs, |r| r.itl_chunk_ms);
    put(&mut a.tpot_ms, runs, |r| r.tpot_ms);
    put(&mut a.latency_ms, runs, |r| r.latency_ms);
}

/// `a`'s latency summaries averaged over `runs`.
pub(super) fn burst(a: &mut BurstAttempt, runs: &[&BurstAttempt]) {
    put(&mut a.e2e_ms, runs, |r| r.e2e_ms);
    put(&mut a.ttft_ms, runs, |r| r.ttft_ms);
    put(&mut a.itl_token_ms, runs, |r| r.itl_token_ms);
    put(&mut a.tpot_ms, runs, |r| r.tpot_ms);
}

/// The latency figures of vLLM's result, each a place in [`ServeMetrics`].
const SERVE_LATENCIES: [fn(&mut ServeMetrics) -> &mut Option<f64>; 20] = [
    |m| &mut m.mean_ttft_ms,
    |m| &mut m.median_ttft_ms,
    |m| &mut m.std_ttft_ms,
    |m| &mut m.p99_ttft_ms,
    |m| &mut m.mean_tpot_ms,
    |m| &mut m.median_tpot_ms,
    |m| &mut m.std_tpot_ms,
    |m| &mut m.p99_tpot_ms,
    |m| &mut m.mean_itl_ms,
    |m| &mut m.median_itl_ms,
    |m| &mut m.std_itl_ms,
    |m| &mut m.p99_itl_ms,
    |m| &mut m.mean_itl_token_ms,
    |m| &mut m.median_itl_token_ms,
    |m| &mut m.std_itl_token_ms,
    |m| &mut m.p99_itl_token_ms,
    |m| &mut m.mean_e2el_ms,
    |m| &mut m.median_e2el_ms,
    |m| &mut m.std_e2el_ms,
    |m| &mut m.p99_e2el_ms,
];

/// `a`'s latency figures averaged over `runs`.
pub(super) fn serve(a: &mut ServeAttempt, runs: &[&ServeAttempt]) {
    let metrics: Vec<ServeMetrics> = runs.iter().map(|r| r.metrics.clone()).collect();
    let refs: Vec<&ServeMetrics> = metrics.iter().collect();
    for place in SERVE_LATENCIES {
        if place(&mut a.metrics).is_some() {
            *place(&mut a.metrics) = mean_of(&refs, |m| *place(&mut m.clone()));
        }
    }
}

/// A phase latency averaged over the runs.
fn latency(runs: &[&RoutingPhase], get: fn(&RoutingPhase) -> &PhaseLatency) -> PhaseLatency {
    PhaseLatency {
        p50: mean_of(runs, |p| get(p).p50),
        p95: mean_of(runs, |p| get(p).p95),
        p99: mean_of(runs, |p| get(p).p99),
    }
}

/// `p`'s latencies averaged over `runs`.
pub(super) fn routing(p: &mut RoutingPhase, runs: &[&RoutingPhase]) {
    p.ttft = latency(runs, |p| &p.ttft);
    p.tpot = latency(runs, |p| &p.tpot);
    p.e2e = latency(runs, |p| &p.e2e);
    p.itl = latency(runs, |p| &p.itl);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::status::AttemptStatus;
    use crate::report::tests_schema::{full_attempt, summary as base};

    #[test]
    fn every_percentile_is_averaged_so_they_stay_in_order() {
        let (mut a, mut b) = (full_attempt(1, AttemptStatus::Measured), full_attempt(2, AttemptStatus::Measured));
        (a.ttft_ms, b.ttft_ms) = (Some(base(100.0)), Some(base(300.0)));
        let mut shown = b.clone();
        decode(&mut shown, &[&a, &b]);
        let s = shown.ttft_ms.unwrap();
        let want = base(200.0);
        assert!((s.p50 - want.p50).abs() < 1e-9 && (s.p95 - want.p95).abs() < 1e-9 && (s.p99 - want.p99).abs() < 1e-9);
        assert!(s.p50 <= s.p90 && s.p90 <= s.p95 && s.p95 <= s.p99, "{s:?}");
        assert_eq!(s.count, b.ttft_ms.unwrap().count, "counts are the last run's");
    }

    #[test]
    fn serve_and_routing_latencies_are_averaged_and_absent_ones_stay_absent() {
        let run = |ttft: f64| {
            let metrics =
                ServeMetrics { median_ttft_ms: Some(ttft), p99_ttft_ms: Some(ttft * 2.0), ..ServeMetrics::default() };
            let report = crate::report::tests_shapes::with_serve();
            ServeAttempt { metrics, ..report.serve.unwrap().cells[0].attempts[0].clone() }
        };
        let (a, b) = (run(10.0), run(30.0));
        let mut shown = b.clone();
        serve(&mut shown, &[&a, &b]);
        assert_eq!((shown.metrics.median_ttft_ms, shown.metrics.p99_ttft_ms), (Some(20.0), Some(40.0)));
        assert_eq!(shown.metrics.mean_itl_ms, None, "no run had it");
        let phase = |p95: f64| RoutingPhase {
            ttft: PhaseLatency { p50: Some(1.0), p95: Some(p95), p99: Some(9.0) },
            ..Default::default()
        };
        let (x, y) = (phase(2.0), phase(4.0));
        let mut p = y.clone();
        routing(&mut p, &[&x, &y]);
        assert_eq!(p.ttft, PhaseLatency { p50: Some(1.0), p95: Some(3.0), p99: Some(9.0) });
    }
}
