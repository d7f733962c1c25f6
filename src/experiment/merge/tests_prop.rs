//! Property: one attempt's requests split over N shard reports and merged give back the
//! counts and the percentiles computed from all of them together.

use super::tests::{attempt, held, shard};
use super::*;
use crate::report::shard_dists::ShardDists;
use crate::stats::{GapDist, Samples, SavedGapDist};
use proptest::prelude::*;

/// Shard `k`'s distributions: the TTFTs, latencies and gaps of the requests dealt to it.
fn dists_of(ttft: &[f64], lat: &[f64], gaps: &[f64]) -> ShardDists {
    let mut g = GapDist::new();
    gaps.iter().for_each(|v| g.push(*v));
    ShardDists {
        ttft_ms: held(ttft),
        itl_ms: held(ttft),
        tpot_ms: held(lat),
        latency_ms: held(lat),
        itl_token_ms: SavedGapDist::of(&g),
        itl_chunk_ms: SavedGapDist::of(&g),
    }
}

fn requests() -> impl Strategy<Value = Vec<(f64, f64, u64, usize)>> {
    // (TTFT ms, latency ms, window tokens, shard draw) per request.
    prop::collection::vec((0.1f64..5_000.0, 1.0f64..60_000.0, 0u64..4_000, 0usize..64), 1..300)
}

proptest! {
    #[test]
    fn splitting_and_merging_gives_the_figures_of_all_requests(reqs in requests(), n in 1u32..6) {
        let shards = n as usize;
        let mut inputs = Vec::new();
        for k in 0..shards {
            let mine: Vec<_> = reqs.iter().filter(|r| r.3 % shards == k).collect();
            let ttft: Vec<f64> = mine.iter().map(|r| r.0).collect();
            let lat: Vec<f64> = mine.iter().map(|r| r.1).collect();
            let tokens = mine.iter().map(|r| r.2).sum();
            let a = attempt(mine.len() as u32, tokens, dists_of(&ttft, &lat, &lat));
            inputs.push(shard(k as u32, n, a));
        }
        let m = merge(inputs).unwrap();
        let a = &m.report.decode.as_ref().unwrap().cells[0].attempts[0];
        prop_assert_eq!(a.window_tokens, reqs.iter().map(|r| r.2).sum::<u64>());
        prop_assert_eq!(a.requested as usize, reqs.len());
        prop_assert_eq!(a.request_samples.len(), reqs.len());
        let mut ttft: Samples = reqs.iter().map(|r| r.0).collect();
        let (got, want) = (a.ttft_ms.unwrap(), ttft.summary().unwrap());
        prop_assert_eq!((got.count, got.min, got.max), (want.count, want.min, want.max));
        prop_assert_eq!((got.p50, got.p90, got.p95, got.p99), (want.p50, want.p90, want.p95, want.p99));
        prop_assert!((got.mean - want.mean).abs() <= 1e-9 * want.mean.abs().max(1.0));
        let mut whole = GapDist::new();
        reqs.iter().for_each(|r| whole.push(r.1));
        let (got, want) = (a.itl_token_ms.unwrap(), whole.summary().unwrap());
        prop_assert_eq!((got.count, got.p50, got.p99), (want.count, want.p50, want.p99));
        let lat = a.latency_ms.unwrap();
        prop_assert_eq!(lat.count, reqs.len() as u64);
    }
}

proptest! {
    /// Shards' short decimal figures add up to the short decimal sum, and tidying moves any
    /// figure by less than one part in 10^11.
    #[test]
    fn added_figures_print_as_the_decimal_sum(parts in proptest::collection::vec(0u64..10_000_000, 1..6), k in 0i32..4, x in -1e12f64..1e12) {
        let scale = 10f64.powi(k);
        let figures = parts.iter().map(|n| *n as f64 / scale);
        let whole = parts.iter().sum::<u64>() as f64 / scale;
        prop_assert_eq!(attempt::added(figures), whole);
        prop_assert!((attempt::tidy(x) - x).abs() <= 1e-11 * x.abs());
    }
}

#[test]
fn the_trials_sum_prints_short() {
    assert_eq!(3000.1 + 3490.2, 6490.299999999999, "the float sum itself");
    assert_eq!(attempt::added([3000.1, 3490.2].into_iter()), 6490.3);
    assert_eq!(attempt::tidy(0.0), 0.0);
}
