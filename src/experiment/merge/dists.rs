//! The latency figures of a merged attempt, recomputed from the distributions every shard's
//! attempt carries (`DecodeAttempt.shard_dists`, src/report/shard_dists.rs): per-request values
//! concatenate when every shard held all of its own, gap distributions merge as
//! `stats::GapDist::merge` does. A figure that cannot be recomputed exactly is left out
//! (with a note), never averaged from the shards' percentiles.

use crate::report::json::DecodeAttempt;
use crate::report::shard_dists::{HeldValues, ShardDists, concat_whole, merge_gaps, summary_of};
use crate::stats::{SavedGapDist, Summary};

/// The summaries of a merged attempt, ms.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Figures {
    /// TTFT.
    pub ttft_ms: Option<Summary>,
    /// Per-stream ITL over the window.
    pub itl_ms: Option<Summary>,
    /// Per-token ITL.
    pub itl_token_ms: Option<Summary>,
    /// Per-chunk ITL.
    pub itl_chunk_ms: Option<Summary>,
    /// TPOT.
    pub tpot_ms: Option<Summary>,
    /// Latency.
    pub latency_ms: Option<Summary>,
}

/// The figures of the shards' attempts `parts` together; `name` heads the notes of what was
/// left out.
pub(super) fn merge(parts: &[(u32, &DecodeAttempt)], name: &str, notes: &mut Vec<String>) -> Figures {
    let dists: Vec<(u32, Option<&ShardDists>)> = parts.iter().map(|(i, a)| (*i, a.shard_dists.as_ref())).collect();
    let measured = parts.iter().any(|(_, a)| a.ttft_ms.is_some() || a.itl_token_ms.is_some());
    of_dists(&dists, measured, name, notes)
}

/// The figures of the shards' distributions `parts` (shard index, its attempt's
/// `shard_dists`) together; `measured` when any shard had figures (a shard without
/// distributions then leaves them out with a note). Decode and burst attempts carry the same
/// distributions.
pub(super) fn of_dists(
    parts: &[(u32, Option<&ShardDists>)],
    measured: bool,
    name: &str,
    notes: &mut Vec<String>,
) -> Figures {
    let dists: Option<Vec<&ShardDists>> = parts.iter().map(|(_, d)| *d).collect();
    let Some(dists) = dists else {
        let without: Vec<String> = parts.iter().filter(|(_, d)| d.is_none()).map(|(i, _)| i.to_string()).collect();
        if measured {
            notes.push(format!(
                "{name}: latency percentiles left out: shard {} wrote no distributions (`shard_dists`)",
                without.join(", ")
            ));
        }
        return Figures::default();
    };
    let mut held = |pick: fn(&ShardDists) -> &HeldValues, what: &str| {
        let merged = concat_whole(dists.iter().map(|d| pick(d)));
        if merged.is_none() {
            notes.push(format!("{name}: {what} left out: a shard kept a sample of its values, not all"));
        }
        merged.as_ref().and_then(summary_of)
    };
    let (ttft_ms, itl_ms) = (held(|d| &d.ttft_ms, "TTFT"), held(|d| &d.itl_ms, "per-stream ITL"));
    let (tpot_ms, latency_ms) = (held(|d| &d.tpot_ms, "TPOT"), held(|d| &d.latency_ms, "latency"));
    let mut gaps = |pick: fn(&ShardDists) -> &SavedGapDist, what: &str| {
        let merged = merge_gaps(dists.iter().map(|d| pick(d)));
        if merged.is_none() {
            notes.push(format!("{name}: {what} left out: a shard's saved distribution is inconsistent"));
        }
        merged.and_then(|g| g.summary())
    };
    let itl_token_ms = gaps(|d| &d.itl_token_ms, "per-token ITL");
    let itl_chunk_ms = gaps(|d| &d.itl_chunk_ms, "per-chunk ITL");
    Figures { ttft_ms, itl_ms, itl_token_ms, itl_chunk_ms, tpot_ms, latency_ms }
}
