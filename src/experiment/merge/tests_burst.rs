//! Tests of merging burst cells: one burst's requests split over N shards (each shard's
//! attempt summarized as a run summarizes it, `burst::attempt::summarize_burst`) merge back to
//! the figures of the whole burst summarized at once.

use super::burst::merge_attempt;
use crate::experiment::burst::attempt::summarize_burst;
use crate::load::sample::{ErrorKind, Mark, Outcome, RequestSample, TokenSource};
use crate::report::json::BurstAttempt;
use crate::stats::{Slo, Summary};
use proptest::prelude::*;
use std::time::Duration;
use tokio::time::Instant;

/// (TTFT ms, tokens, ms a token, tokens a chunk).
type Shape = (u64, u64, u64, u64);

/// Request `i` of a burst sent at `origin`: its first token after `ttft_ms`, then `n` more
/// tokens `every_ms` apart in chunks of `per` tokens; failed (stalled) when `failed`.
fn request(origin: Instant, i: u32, (ttft_ms, n, every_ms, per): Shape, failed: bool) -> RequestSample {
    let mut s = RequestSample::new(i, origin);
    let chunks = n.div_ceil(per).max(1);
    s.marks = (0..chunks)
        .map(|c| Mark { at_us: (ttft_ms + c * every_ms * per) * 1000, tokens: ((c + 1) * per).min(n.max(1)) })
        .collect();
    s.output_tokens = n.max(1);
    s.token_source = TokenSource::OpenaiContinuousUsage;
    s.ended_at = origin + Duration::from_millis(ttft_ms + chunks * every_ms * per + 1);
    s.outcome = match failed {
        true => Outcome::Failed { kind: ErrorKind::Stalled, detail: "no data".into() },
        false => Outcome::Completed(None),
    };
    s
}

fn same(got: Option<Summary>, want: Option<Summary>) -> Result<(), TestCaseError> {
    let (Some(g), Some(w)) = (got, want) else {
        prop_assert_eq!(got.is_none(), want.is_none());
        return Ok(());
    };
    prop_assert_eq!((g.count, g.min, g.max), (w.count, w.min, w.max));
    prop_assert_eq!((g.p50, g.p90, g.p95, g.p99), (w.p50, w.p90, w.p95, w.p99));
    prop_assert!((g.mean - w.mean).abs() <= 1e-9 * w.mean.abs().max(1.0));
    Ok(())
}

/// A request's shape (TTFT ms, tokens, ms a token, tokens a chunk), whether it failed, and
/// the draw that picks its shard.
type Drawn = (Shape, bool, usize);

fn requests() -> impl Strategy<Value = Vec<Drawn>> {
    prop::collection::vec(((1u64..3_000, 1u64..64, 1u64..40, 1u64..5), prop::bool::weighted(0.1), 0usize..64), 1..120)
}

proptest! {
    #[test]
    fn any_split_of_a_burst_merges_back_to_the_whole_bursts_figures(reqs in requests(), n in 1usize..6) {
        let origin = Instant::now();
        let slo = Slo { ttft: Some(Duration::from_millis(1_500)), ..Slo::default() };
        let samples: Vec<RequestSample> =
            reqs.iter().enumerate().map(|(i, (shape, failed, _))| request(origin, i as u32, *shape, *failed)).collect();
        let whole = summarize_burst(&samples, (origin, 0.0), slo, 1, false);
        let parts: Vec<BurstAttempt> = (0..n)
            .map(|k| {
                let mine: Vec<RequestSample> =
                    samples.iter().zip(&reqs).filter(|(_, r)| r.2 % n == k).map(|(s, _)| s.clone()).collect();
                summarize_burst(&mine, (origin, 0.0), slo, 1, true)
            })
            // A shard with no request of the burst skipped the cell by plan (`burst::merge`).
            .filter(|a| a.requests > 0)
            .collect();
        let indexed: Vec<(u32, &BurstAttempt)> = parts.iter().enumerate().map(|(i, a)| (i as u32, a)).collect();
        let mut notes = Vec::new();
        let m = merge_attempt(&indexed, "burst", &mut notes);
        prop_assert_eq!((m.requests, m.success, m.error_count), (whole.requests, whole.success, whole.error_count));
        prop_assert_eq!(&m.errors, &whole.errors);
        prop_assert_eq!(m.output_tokens, whole.output_tokens);
        prop_assert_eq!(m.request_samples.len(), whole.request_samples.len());
        prop_assert!((m.makespan_s - whole.makespan_s).abs() < 1e-12);
        prop_assert!((m.output_tps - whole.output_tps).abs() <= 1e-9 * whole.output_tps.max(1.0));
        same(m.ttft_ms, whole.ttft_ms)?;
        same(m.e2e_ms, whole.e2e_ms)?;
        same(m.tpot_ms, whole.tpot_ms)?;
        same(m.itl_token_ms, whole.itl_token_ms)?;
        let (g, w) = (m.goodput.unwrap(), whole.goodput.unwrap());
        prop_assert_eq!((g.good, g.judged), (w.good, w.judged));
        prop_assert!((g.rps - w.rps).abs() <= 1e-9 * w.rps.max(1.0));
        prop_assert!(!notes.iter().any(|n| n.contains("left out")), "{:?}", notes);
    }
}

#[test]
fn a_shard_without_distributions_leaves_the_percentiles_out_with_a_note() {
    let origin = Instant::now();
    let samples: Vec<RequestSample> = (0..4).map(|i| request(origin, i, (100, 8, 10, 1), false)).collect();
    let a = summarize_burst(&samples[..2], (origin, 0.0), Slo::default(), 1, true);
    let b = summarize_burst(&samples[2..], (origin, 0.0), Slo::default(), 1, false);
    let mut notes = Vec::new();
    let m = merge_attempt(&[(0, &a), (1, &b)], "burst ctx=0 conc=4 attempt 1", &mut notes);
    assert_eq!((m.requests, m.ttft_ms), (4, None));
    assert!(notes.iter().any(|n| n.contains("shard 1 wrote no distributions")), "{notes:?}");
}

#[test]
fn a_shards_burst_with_its_distributions_validates_against_the_schema() {
    let origin = Instant::now();
    let samples: Vec<RequestSample> = (0..3).map(|i| request(origin, i, (50, 4, 5, 2), false)).collect();
    let a = summarize_burst(&samples, (origin, 0.0), Slo::default(), 1, true);
    let mut r = crate::report::tests_schema::full_report();
    r.burst.as_mut().unwrap().cells[0].attempts[0].shard_dists = a.shard_dists;
    let mut v = serde_json::to_value(&r).unwrap();
    assert!(v["burst"]["cells"][0]["attempts"][0]["shard_dists"]["ttft_ms"]["count"] == 3);
    crate::report::tests_schema::assert_valid(&v);
    v["burst"]["cells"][0]["attempts"][0]["shard_dists"]["ttft"] = serde_json::json!(1);
    assert!(
        std::panic::catch_unwind(|| crate::report::tests_schema::assert_valid(&v)).is_err(),
        "an unknown field is refused"
    );
}
