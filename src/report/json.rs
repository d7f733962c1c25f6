//! The versioned JSON session report (docs/reports.md §3): serde types, kept apart from the
//! live statistics so the file format changes only on purpose. Times are seconds unless a
//! field name says `_ms`; instants are RFC 3339 strings or seconds since the session start.

pub use super::burst::{BurstAttempt, BurstCellReport, BurstSection};
use crate::load::sample::RecordedOutcome;
use crate::report::goodput::PlanSlo;
use crate::report::phase::RoutingPhase;
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
    /// The engine-config sweep (`run --server-cmd`): every parameter set with its server's
    /// start-up and settings and its own session report nested; absent for one server's session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<super::sweep::SweepSection>,
    /// The shard that wrote this file, in a sharded session (`run --shard i/N`); absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<super::shard::ShardSection>,
    /// The shards a merged report holds (`report merge`); absent in a shard's or a single
    /// process's report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<super::shard::MergeSection>,
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

pub use super::decode::{DecodeAttempt, DecodeCell, DecodeSection};
pub use super::knee::RowKnee;

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
