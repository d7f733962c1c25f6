//! The sustained-decode experiment's report section (the matrix, its cells and their
//! attempts), kept apart from `json.rs`, which re-exports it.

use super::json::{PromValidation, RequestRecord, RowKnee, TargetLoss};
use super::status::{AttemptStatus, CapacityLimit, CellOutcome};
use crate::load::sample::{ErrorKind, RecordedOutcome, TokenSource};
use crate::report::goodput::Goodput;
use crate::stats::Summary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The sustained-decode matrix.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DecodeSection {
    /// Context labels in row order (`0`, `16k`, ...).
    pub ctx_labels: Vec<String>,
    /// Concurrencies in column order.
    pub conc: Vec<u32>,
    /// One entry per (ctx, conc), row-major.
    pub cells: Vec<DecodeCell>,
    /// Token sources used by measured cells (`openai_continuous_usage`, ...), by name.
    pub aggregate_sources: Vec<TokenSource>,
    /// The knee of each row that has one (saturation across cells, `stats::knee`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub knees: Vec<RowKnee>,
}

/// One cell of the matrix with its history.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DecodeCell {
    /// Context size, tokens.
    pub ctx: u64,
    /// Context label.
    pub ctx_label: String,
    /// Requested concurrency, streams.
    pub conc: u32,
    /// Where the cell stands.
    pub status: CellOutcome,
    /// Why the cell was skipped, e.g. the KV deficit in tokens.
    pub timeout_reason: Option<String>,
    /// What kept the cell from running (`kv_cache`, `context_length`, `plan`, `past_knee`);
    /// absent unless skipped, and in reports written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<crate::report::skip::SkipKind>,
    /// Every attempt, oldest first; the last one is the cell's result.
    pub attempts: Vec<DecodeAttempt>,
    /// Open-loop cells: the arrival rate of the column (requests/s, or `inf`); `conc` is then
    /// the in-flight cap. Absent closed loop.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "super::levels::rate_opt")]
    pub rate: Option<crate::load::rate::Rate>,
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

/// One run of one decode cell.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DecodeAttempt {
    /// 1-based attempt number.
    pub attempt: u32,
    /// How the attempt ended.
    pub status: AttemptStatus,
    /// Attempt start, seconds since the session start.
    pub started_s: f64,
    /// Warmup length, seconds.
    pub warmup_s: f64,
    /// The warmup hit its timeout.
    pub warmup_timed_out: bool,
    /// Measurement window actually used, seconds (0 when none).
    pub window_s: f64,
    /// Output tokens inside the window, all streams.
    pub window_tokens: u64,
    /// Aggregate tok/s: window tokens / window length.
    pub aggregate_tps: f64,
    /// Main token source of the window.
    pub aggregate_source: TokenSource,
    /// Aggregate tok/s / average streams decoding in the window (`decoding_avg`; requested
    /// streams when it is absent or 0): what each running stream got (docs/reports.md §1.2).
    pub per_request_tps: f64,
    /// Streams decoding (between their first and last token), averaged over the window, from
    /// the client's own timestamps; absent without a window (and in reports that predate it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decoding_avg: Option<f64>,
    /// 1 / median per-stream ITL, tok/s.
    pub user_tps: Option<f64>,
    /// Requested concurrency, streams: a shard's own slice of the cell in a shard's report.
    pub requested: u32,
    /// A shard's attempt (`run --shard i/N`): the cell's planned concurrency over every shard,
    /// streams, which `running_avg` (server-wide) and the capacity verdict compare with, while
    /// `requested` is this shard's slice. Absent unsharded and in merged reports (there
    /// `requested` is the whole cell's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell_requested: Option<u32>,
    /// Average running requests (Prometheus, summed over replicas) in the window.
    pub running_avg: Option<f64>,
    /// Average waiting requests (Prometheus) in the window.
    pub waiting_avg: Option<f64>,
    /// Streams that had their first token when the window opened.
    pub streaming_at_start: u32,
    /// Held below requested by a limit of the engine (see `capacity_limit`), or warmup timed out.
    pub capacity_limited: bool,
    /// Which limit held the attempt below its concurrency, when `capacity_limited` (None
    /// otherwise; reports written before the field existed read as None).
    #[serde(default)]
    pub capacity_limit: Option<CapacityLimit>,
    /// Running below requested without a limit: requests finishing and restarting leave slots
    /// empty between them (docs/protocol.md §8.6). Never `capacity_limited`.
    #[serde(default)]
    pub turnover: bool,
    /// TTFT of requests whose first token arrived in the attempt, ms.
    pub ttft_ms: Option<Summary>,
    /// Per-stream ITL over the window, ms (docs/reports.md §1.2: (last-first)/(tokens-1)).
    pub itl_ms: Option<Summary>,
    /// Per-token ITL (a chunk of k tokens after gap g gives k values g/k), ms.
    pub itl_token_ms: Option<Summary>,
    /// Per-chunk ITL (gaps between chunks, as vLLM's bench reports), ms.
    pub itl_chunk_ms: Option<Summary>,
    /// TPOT of completed requests ((e2e - ttft)/(n-1)), ms.
    pub tpot_ms: Option<Summary>,
    /// Latency of requests completed in the attempt, ms.
    pub latency_ms: Option<Summary>,
    /// Failed requests by kind.
    pub errors: BTreeMap<ErrorKind, u64>,
    /// Total failed requests.
    pub error_count: u64,
    /// One example message per error kind.
    pub error_examples: BTreeMap<ErrorKind, String>,
    /// Re-sends on a fresh connection of requests that provably never reached the server
    /// (docs/reports.md); not failures. 0 in reports that predate it.
    #[serde(default)]
    pub reconnects: u64,
    /// Server-side validation of the window.
    pub prometheus: Option<PromValidation>,
    /// Event-loop lag of the client during the attempt, ms.
    pub client_lag_ms: Option<Summary>,
    /// Targets lost during the window (polls failing or connections refused); empty when none.
    #[serde(default)]
    pub target_lost: Vec<TargetLoss>,
    /// One entry per request of the attempt.
    pub request_samples: Vec<RequestRecord>,
    /// Every request of the attempt by outcome (`completed`, `cut`, the error kind), exact
    /// even when `request_samples` holds only a uniform sample of them (at most 16,384
    /// records: the sample is whole when its length equals the sum of these counts).
    #[serde(default)]
    pub request_outcomes: BTreeMap<RecordedOutcome, u64>,
    /// Requests of the window that met `plan.slo`, and good requests per window second
    /// (docs/reports.md §6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<Goodput>,
    /// The within-cell over-saturation test of the window (`stats::saturation`); absent when
    /// no window ran (and in reports written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturation: Option<crate::stats::saturation::Saturation>,
    /// Open-loop cells: the planned arrival rate (requests/s, or `inf`); absent closed loop.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "super::levels::rate_opt")]
    pub rate: Option<crate::load::rate::Rate>,
    /// Open-loop cells: requests sent per second over the window (the arrival rate achieved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved_rate: Option<f64>,
    /// Load levels when the operator turned the knob (`+` / `-`): the planned level first,
    /// then one per step, each over its own sub-window. The attempt's other figures are the
    /// planned level's sub-window. Empty (absent) when the knob was not used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<super::levels::LoadLevel>,
    /// What the server's prefix cache served the attempt's requests (counters read before the
    /// first and after the last), beside the most they share (their request form and nonce:
    /// `experiment::decode::prefix`); `warm` when more. Absent without prefix-cache counters,
    /// or when the attempt was stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache: Option<super::prefix_cache::PrefixCacheCheck>,
    /// A shard's attempt (`run --shard i/N`): the distributions behind its summaries, from
    /// which `report merge` recomputes the session's percentiles; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_dists: Option<super::shard_dists::ShardDists>,
}

impl DecodeAttempt {
    /// The concurrency `running_avg` is compared with (the `Y` of `(X/Y)`): in a shard's
    /// report the cell's over every shard (`cell_requested`), since the server's running count
    /// holds every shard's streams; else `requested`.
    pub fn running_requested(&self) -> u32 {
        self.cell_requested.unwrap_or(self.requested)
    }
}
