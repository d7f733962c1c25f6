//! The distributions a shard's decode attempt carries (`DecodeAttempt.shard_dists`, written
//! only by `run --shard i/N`), so `report merge` recomputes every percentile from the values
//! of all shards together instead of averaging the shards' percentiles.

use crate::stats::gap_dist::saved::SavedGapDist;
use crate::stats::{GapDist, Reservoir, Samples, Summary};
use serde::{Deserialize, Serialize};

/// One attempt's distributions, ms, as its summaries were computed from them
/// (src/cell/summarize.rs).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ShardDists {
    /// TTFT of first tokens before the window closed (`ttft_ms`).
    pub ttft_ms: HeldValues,
    /// Per-stream ITL over the window (`itl_ms`, and `user_tps` from its median).
    pub itl_ms: HeldValues,
    /// TPOT of completed requests (`tpot_ms`).
    pub tpot_ms: HeldValues,
    /// Latency of completed requests (`latency_ms`).
    pub latency_ms: HeldValues,
    /// Per-token gaps in the window (`itl_token_ms`).
    pub itl_token_ms: SavedGapDist,
    /// Per-chunk gaps in the window (`itl_chunk_ms`).
    pub itl_chunk_ms: SavedGapDist,
}

/// A shard's serve attempt's chunk gaps (`ServeAttempt.shard_gaps`, written only by `run
/// --shard i/N`): its ITL figures cannot be recomputed from its request records, which keep
/// no gaps.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ServeShardGaps {
    /// Gaps between consecutive content chunks of completed requests (`*_itl_ms`).
    pub chunk_ms: SavedGapDist,
    /// The same gaps spread over their tokens (`*_itl_token_ms`).
    pub token_ms: SavedGapDist,
}

/// The values a bounded per-request distribution held (`stats::Reservoir`): every value
/// while `values` has `count` of them, else a uniform sample of `count` values.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HeldValues {
    /// Values pushed, all of them.
    pub count: u64,
    /// The values held, ms.
    pub values: Vec<f64>,
}

impl HeldValues {
    /// What `r` holds.
    pub fn of(r: &Reservoir) -> Self {
        Self { count: r.count(), values: r.values().to_vec() }
    }

    /// True when every value pushed is held (the percentiles are exact).
    pub fn is_whole(&self) -> bool {
        self.values.len() as u64 == self.count
    }
}

/// Concatenates `parts` when every one is whole; None when any is a sample (a mix of
/// samples of different rates is no uniform sample of the whole).
pub fn concat_whole<'a>(parts: impl IntoIterator<Item = &'a HeldValues>) -> Option<HeldValues> {
    let mut out = HeldValues::default();
    for p in parts {
        if !p.is_whole() {
            return None;
        }
        out.count += p.count;
        out.values.extend_from_slice(&p.values);
    }
    Some(out)
}

/// The summary of whole values (None when empty), as `stats::Samples::summary` gives it.
pub fn summary_of(held: &HeldValues) -> Option<Summary> {
    let mut s: Samples = held.values.iter().copied().collect();
    s.summary()
}

/// Merges saved gap distributions; None when any does not restore (inconsistent figures).
pub fn merge_gaps<'a>(parts: impl IntoIterator<Item = &'a SavedGapDist>) -> Option<GapDist> {
    let mut out = GapDist::new();
    for p in parts {
        out.merge(&p.restore()?);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_parts_concatenate_and_a_sample_among_them_does_not() {
        let a = HeldValues { count: 2, values: vec![1.0, 3.0] };
        let b = HeldValues { count: 1, values: vec![2.0] };
        let m = concat_whole([&a, &b]).unwrap();
        assert_eq!(m.count, 3);
        assert_eq!(summary_of(&m).unwrap().p50, 2.0);
        let sampled = HeldValues { count: 5, values: vec![1.0] };
        assert!(concat_whole([&a, &sampled]).is_none());
        assert_eq!(summary_of(&HeldValues::default()), None);
    }

    #[test]
    fn reservoirs_are_held_whole_below_their_capacity() {
        let mut r = Reservoir::new(4);
        [1.0, 2.0, 3.0].iter().for_each(|v| r.push(*v));
        assert!(HeldValues::of(&r).is_whole());
        [4.0, 5.0].iter().for_each(|v| r.push(*v));
        let held = HeldValues::of(&r);
        assert_eq!((held.count, held.values.len(), held.is_whole()), (5, 4, false));
    }
}
