//! The burst experiment's report section (phase 3: finite bursts measured end to end), kept
//! apart from `json.rs`, which re-exports it.

use super::json::{RequestRecord, TargetLoss};
use super::status::{AttemptStatus, CellOutcome};
use crate::load::sample::ErrorKind;
use crate::report::goodput::Goodput;
use crate::stats::Summary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Phase 3: finite bursts measured end to end.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BurstSection {
    /// Context labels in row order.
    pub ctx_labels: Vec<String>,
    /// Burst sizes in column order.
    pub conc: Vec<u32>,
    /// One entry per (ctx, conc), row-major.
    pub cells: Vec<BurstCellReport>,
}

/// One burst cell with its history.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BurstCellReport {
    /// Context size, tokens.
    pub ctx: u64,
    /// Context label.
    pub ctx_label: String,
    /// Requests in the burst.
    pub conc: u32,
    /// Where the cell stands (as a decode cell).
    pub status: CellOutcome,
    /// Why the cell was skipped.
    pub timeout_reason: Option<String>,
    /// What kept the cell from running (`kv_cache`, `context_length`, `plan`, `past_knee`);
    /// absent unless skipped, and in reports written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<crate::report::skip::SkipKind>,
    /// Every attempt, oldest first.
    pub attempts: Vec<BurstAttempt>,
    /// This cell's figures against the same cell of the `--baseline` session (omitted without
    /// one, or when the baseline has no result for the cell).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub baseline: Vec<crate::report::baseline::BaselineFigure>,
    /// Its repeated runs (`run --num-runs N`, N > 1): the latest round's attempts and every
    /// headline figure's mean, sd, CV and confidence interval; the tables show the means.
    /// Absent with one run per cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<crate::report::runs::RunsBlock>,
}

/// One burst: `requests` sent at once, each for a fixed number of output tokens.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BurstAttempt {
    /// 1-based attempt number.
    pub attempt: u32,
    /// How the attempt ended.
    pub status: AttemptStatus,
    /// Attempt start, seconds since the session start.
    pub started_s: f64,
    /// Requests sent.
    pub requests: u64,
    /// Requests the server completed.
    pub success: u64,
    /// Failed requests.
    pub error_count: u64,
    /// Failed requests by kind.
    pub errors: BTreeMap<ErrorKind, u64>,
    /// One example message per error kind (absent in reports that predate it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_examples: BTreeMap<ErrorKind, String>,
    /// Re-sends on a fresh connection of requests that provably never reached the server
    /// (docs/reports.md); not failures. 0 in reports that predate it.
    #[serde(default)]
    pub reconnects: u64,
    /// End-to-end latency of completed requests, ms.
    pub e2e_ms: Option<Summary>,
    /// Time to first token, ms.
    pub ttft_ms: Option<Summary>,
    /// ITL: gaps between consecutive tokens of a request, all requests (a chunk of k tokens
    /// after gap g gives k values g/k), ms, as `vllm bench serve` names it.
    #[serde(default)]
    pub itl_token_ms: Option<Summary>,
    /// TPOT: per completed request, (e2e - ttft) / (output tokens - 1), ms, as `vllm bench
    /// serve` names it.
    #[serde(default)]
    pub tpot_ms: Option<Summary>,
    /// Output tokens received, all requests.
    pub output_tokens: u64,
    /// Output tokens / makespan, tok/s.
    pub output_tps: f64,
    /// First send to last end, seconds.
    pub makespan_s: f64,
    /// Targets lost during the burst (polls failing or connections refused); empty when none.
    #[serde(default)]
    pub target_lost: Vec<TargetLoss>,
    /// One entry per request.
    pub request_samples: Vec<RequestRecord>,
    /// Requests of the burst that met `plan.slo`, and good requests per second of the
    /// makespan (docs/reports.md §6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<Goodput>,
    /// What the server's prefix cache served the burst's requests beside what they share (the
    /// request form and the nonce ahead of the text, `experiment::decode::prefix`), warm when
    /// more (absent in reports that predate it, or without prefix-cache counters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache: Option<super::prefix_cache::PrefixCacheCheck>,
    /// The distributions behind its TTFT, TPOT, e2e (`latency_ms`) and per-token ITL figures,
    /// written only by `run --shard i/N` so `report merge` recomputes them from every shard's
    /// values (src/report/shard_dists.rs; its per-stream and per-chunk entries stay empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_dists: Option<crate::report::shard_dists::ShardDists>,
}
