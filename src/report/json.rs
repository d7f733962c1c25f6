//! The versioned JSON session report (docs/reports.md §3): serde types, kept apart from the
//! live statistics so the file format changes only on purpose. Times are seconds unless a
//! field name says `_ms`; instants are RFC 3339 strings or seconds since the session start.

pub use super::burst::{BurstAttempt, BurstCellReport, BurstSection};
use super::status::{AttemptStatus, CapacityLimit, CellOutcome};
use crate::load::sample::{ErrorKind, RecordedOutcome, TokenSource};
use crate::report::goodput::{Goodput, PlanSlo};
use crate::report::phase::RoutingPhase;
use crate::stats::Summary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of this file format; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 2;

/// One session: every cell with its attempts, the operator's actions, the server series.
/// The top-level `model`, `runtime`, `replicas`, `measured_phases`, `planned_phases`,
/// `complete` and `phases` keep the names of `tests/fixtures/seed_002.json`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SessionReport {
    /// File format version ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The tool that wrote the file.
    pub tool: ToolInfo,
    /// When the session started (RFC 3339, UTC).
    pub started_at: String,
    /// When the file was last written (RFC 3339, UTC).
    pub updated_at: String,
    /// True once every planned cell has an outcome and the session ended normally.
    pub complete: bool,
    /// Served model name.
    pub model: String,
    /// Server runtime version (`/version`), when it could be read.
    pub runtime: Option<String>,
    /// Gateway version, when a gateway was measured and it could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway_version: Option<String>,
    /// Number of replicas whose metrics were polled.
    pub replicas: usize,
    /// Routing phases with an outcome.
    pub measured_phases: usize,
    /// Routing phases planned.
    pub planned_phases: usize,
    /// The target, without credentials.
    pub target: TargetInfo,
    /// What the session was asked to run.
    pub plan: PlanInfo,
    /// Prompt calibration per context size.
    pub calibration: Vec<CalibrationInfo>,
    /// The sustained-decode matrix, when planned.
    pub decode: Option<DecodeSection>,
    /// Phase 3 bursts, when requested.
    pub burst: Option<BurstSection>,
    /// The serve experiment (`run --plan serve`), when planned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serve: Option<super::serve::ServeSection>,
    /// Sections of experiments from outside the built-in set, one per kind, in plan order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<super::extension::ExtensionSection>,
    /// Routing phases (`tests/fixtures/seed_002.json` layout): the latest attempt of every
    /// phase with an outcome.
    pub phases: Vec<RoutingPhase>,
    /// Every routing attempt in run order, paused, stopped and re-run ones included (each
    /// with its `status`).
    #[serde(default)]
    pub phase_history: Vec<RoutingPhase>,
    /// Operator actions and session events, in order.
    pub actions: Vec<ActionRecord>,
    /// Per replica, the polled Prometheus series (about one point per second).
    pub replica_series: BTreeMap<String, Vec<SeriesPoint>>,
    /// Per replica name, the stretches its metrics polls failed (none for a replica that always
    /// answered).
    #[serde(default)]
    pub replica_stale: BTreeMap<String, Vec<StaleInterval>>,
    /// Things the reader should know (missing metrics, fallbacks used, client lag).
    pub warnings: Vec<String>,
    /// Where the replicas' metrics came from when not from their own pages (`run
    /// --prometheus`); absent for direct scraping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_source: Option<MetricsSource>,
    /// Why the session stopped on its own before its last cell: the server refused the key, or
    /// failed alike in consecutive cells (src/cell/halt.rs). Absent when it did not halt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halted: Option<String>,
}

pub use super::metrics_source::{MetricsSource, ReplicaChange};

/// Name and version of the tool.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ToolInfo {
    /// `llm-decode-bench`.
    pub name: String,
    /// Crate version.
    pub version: String,
}

/// The measured target, credentials removed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TargetInfo {
    /// Base URL of the load.
    pub base_url: String,
    /// `chat` or `completions`.
    pub endpoint: String,
    /// Context length, tokens.
    pub max_model_len: Option<u64>,
    /// KV-cache capacity summed over replicas, tokens.
    pub kv_capacity_tokens: Option<u64>,
    /// Engine metrics dialect of the first replica (`vllm-v1`, `sglang`, ...).
    pub engine_dialect: String,
    /// Every polled replica.
    pub replica_info: Vec<ReplicaInfo>,
    /// Whether the load's streamed requests reused pooled connections, and why (a preflight
    /// probe, or what the session learned); absent for an in-process target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_reuse: Option<crate::load::reuse::ConnectionReuse>,
}

/// One polled replica.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReplicaInfo {
    /// Name (from `NAME=URL`, or derived from the URL).
    pub name: String,
    /// Metrics URL, credentials removed.
    pub metrics_url: String,
    /// Detected dialect.
    pub dialect: String,
    /// KV capacity, tokens.
    pub kv_capacity_tokens: Option<u64>,
}

/// The plan as given.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PlanInfo {
    /// Plans run: `decode`, `routing`.
    pub kinds: Vec<String>,
    /// Context sizes, tokens.
    pub ctx: Vec<u64>,
    /// Concurrencies, streams.
    pub conc: Vec<u32>,
    /// Measurement window per cell, seconds.
    pub window_s: f64,
    /// Longest warmup per cell, seconds.
    pub warmup_timeout_s: f64,
    /// KV oversubscription allowed before a cell is skipped.
    pub kv_oversubscribe: f64,
    /// Phase 3 (burst) requested.
    pub run_burst: bool,
    /// Every setting that decides what the cells measure, by flag name (see
    /// `RunConfig::settings`); `--resume` refuses a report whose settings differ.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// The session's goodput SLO and where it came from (docs/reports.md §6); absent in
    /// reports saved before goodput was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<PlanSlo>,
    /// The saved session this run's cells are compared with (`--baseline`), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<crate::report::baseline::BaselineInfo>,
}

/// How the prompt of one context size was built.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CalibrationInfo {
    /// Target, tokens.
    pub ctx: u64,
    /// Tokens the server counts for the prompt (before the per-request nonce).
    pub prompt_tokens: u64,
    /// `tokenize`, `usage` or `extrapolated`.
    pub method: String,
}

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

pub use super::knee::RowKnee;

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
    /// Requested concurrency, streams.
    pub requested: u32,
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
}

pub use super::prom_validation::PromValidation;

/// One request, as measured by the client. Times are ms after the attempt started.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RequestRecord {
    /// Stream slot.
    pub worker: u32,
    /// Send time, ms after the attempt start.
    pub sent_ms: f64,
    /// Time to first token, ms.
    pub ttft_ms: Option<f64>,
    /// End-to-end latency, ms.
    pub e2e_ms: f64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Prompt tokens: the server's usage when it sent one, else (serve) the planned length;
    /// absent when neither is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output tokens inside the measurement window.
    pub window_tokens: u64,
    /// Whole-request ITL, ms.
    pub itl_ms: Option<f64>,
    /// How it ended: `completed`, `cut` or the error kind.
    pub outcome: RecordedOutcome,
    /// HTTP status.
    pub status: Option<u16>,
    /// Replica named by the response.
    pub served_by: Option<String>,
    /// Whether it met the session's goodput SLO; absent when it was not judged
    /// (docs/reports.md §6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub good: Option<bool>,
    /// How late it was sent against its schedule, ms (serve: a trace's time or the
    /// `--request-rate` arrivals; `report::schedule_lag`); absent elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_lag_ms: Option<f64>,
}

/// Something that happened to the session, with its time.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ActionRecord {
    /// Seconds since the session start.
    pub at_s: f64,
    /// `pause`, `resume`, `skip`, `rerun`, `save`, `quit`, `interrupted`, ...
    pub action: String,
    /// The cell it concerned (`ctx=16k conc=4`, `r1-hot90-prefix-cache`).
    pub cell: Option<String>,
}

/// A stretch in which a replica's metrics polls failed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StaleInterval {
    /// First failed poll, seconds since the session start.
    pub from_s: f64,
    /// Next good poll, seconds since the session start; `null` if polls still failed when the
    /// report was written.
    pub to_s: Option<f64>,
    /// Why the first failed poll failed, one line.
    pub error: String,
}

/// A target lost during an attempt's measured time.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TargetLoss {
    /// The replica whose polls failed, or the load target (host:port) its connections failed to.
    pub replica: String,
    /// Seconds of the attempt's measured time the replica was stale (0 for connection errors only).
    pub lost_s: f64,
    /// Requests whose connection failed during the attempt (counted on the load target's entry).
    pub connect_errors: u64,
}

/// One polled point of one replica.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SeriesPoint {
    /// Seconds since the session start.
    pub t_s: f64,
    /// Running requests.
    pub running: Option<f64>,
    /// Waiting requests.
    pub waiting: Option<f64>,
    /// KV usage, fraction 0..1.
    pub kv_usage: Option<f64>,
    /// Generated tokens counter.
    pub generation_tokens: Option<f64>,
    /// Prefix-cache hits counter, tokens.
    pub prefix_hits_tokens: Option<f64>,
    /// Preemptions counter.
    pub preemptions: Option<f64>,
}
