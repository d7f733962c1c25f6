//! The values a shard's routing phase carries (`RoutingPhase.shard_dists`, written only by
//! `run --shard i/N`), so `report merge` recomputes the phase's percentiles from every shard's
//! requests together instead of averaging the shards' percentiles (docs/reports.md §9).

use super::shard_dists::HeldValues;
use crate::stats::SavedGapDist;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One shard's routing phase, as its figures were computed (src/experiment/routing/report.rs).
/// Every value is held: a phase has `--count` requests at most.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PhaseShardDists {
    /// TTFT of completed requests (`ttft`), seconds.
    pub ttft_s: HeldValues,
    /// TPOT of completed requests (`tpot`), seconds.
    pub tpot_s: HeldValues,
    /// End-to-end latency of completed requests (`e2e`), seconds.
    pub e2e_s: HeldValues,
    /// Per-token gaps of completed requests (`itl_s`), ms.
    pub itl_token_ms: SavedGapDist,
    /// Per family, TTFT of its completed requests (`families[f].ttft_p95`), seconds.
    pub family_ttft_s: BTreeMap<u32, HeldValues>,
    /// How late each request was sent against the schedule (`schedule_lag_ms`), ms.
    pub schedule_lag_ms: HeldValues,
}
