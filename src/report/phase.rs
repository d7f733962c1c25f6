//! The typed record of one routing phase: every field name and nesting of a phase of the
//! reference routing report (`tests/fixtures/seed_002.json`), then the fields this tool adds (status, attribution,
//! errors by kind, schedule lag, token sources, per-token ITL, cache resets). Times are seconds (as in the
//! seed), not milliseconds, unless a name ends in `_ms`. Prompt families are keyed by their
//! number, which JSON writes as a string (`"0"`, `"1"`, ...).

use crate::load::sample::{ErrorKind, TokenSource};
use crate::metrics::gateway::CounterDelta;
use crate::report::status::AttemptStatus;
use crate::stats::Summary;
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

/// One routing phase as the report stores it (the report's `phases[]` and `phase_history[]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RoutingPhase {
    /// Phase name, `r{round}-{scenario}-{route}`.
    pub phase: String,
    /// Cache scenario (`cold-uniform`, `hot90`, ...).
    pub scenario: String,
    /// Routing strategy sent as the `routing-strategy` header.
    pub route: String,
    /// The settings the phase ran with.
    pub config: PhaseConfig,
    /// Unix time of the first send, seconds.
    pub started_at: f64,
    /// Unix time after the last response, seconds.
    pub finished_at: f64,
    /// `finished_at - started_at`, seconds.
    pub elapsed: f64,
    /// Requests planned.
    pub planned: u32,
    /// `success + errors + dropped`.
    pub requests: u64,
    /// Requests the server completed.
    pub success: u64,
    /// Requests that failed.
    pub errors: u64,
    /// Requests never sent or cut short by the client.
    pub dropped: u64,
    /// Completed requests within the SLO.
    pub good: u64,
    /// Output tokens / elapsed, tok/s.
    pub output_tokens_per_second: f64,
    /// Time to first token of completed requests, seconds.
    pub ttft: PhaseLatency,
    /// Time per output token of completed requests, seconds.
    pub tpot: PhaseLatency,
    /// End-to-end latency of completed requests, seconds.
    pub e2e: PhaseLatency,
    /// Per prompt family, the requests sent and their TTFT.
    pub families: BTreeMap<u32, FamilyRecord>,
    /// Per replica name, what it served and what its engine counted.
    pub replicas: BTreeMap<String, ReplicaRecord>,
    /// Prefix-cache hit tokens / queried tokens over all replicas, 0..1.
    pub cache_hit_ratio: Option<f64>,
    /// Smallest and largest prompt the server counted, tokens.
    pub input_tokens_range: Option<[u64; 2]>,
    /// Per family, the replica that owned its prefix when the traffic started (empty when
    /// the caches were not primed).
    pub initial_prefix_owners: BTreeMap<u32, Vec<String>>,
    /// Gateway counter changes over the phase (None without gateway metrics).
    pub routing_counter_deltas: Option<Vec<CounterDelta>>,
    /// Requests whose response named the replica that served them.
    pub gateway_verified_requests: u64,
    /// How the phase ended.
    pub status: AttemptStatus,
    /// Where the per-replica request counts come from.
    pub attribution: Attribution,
    /// Per-family counts per replica are known (header attribution).
    pub family_attribution_available: bool,
    /// Failed requests by kind.
    pub errors_by_kind: BTreeMap<ErrorKind, u64>,
    /// One example message per error kind (absent in reports that predate it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_examples: BTreeMap<ErrorKind, String>,
    /// Re-sends on a fresh connection of requests that provably never reached the server
    /// (docs/reports.md); not failures. 0 in reports that predate it.
    #[serde(default)]
    pub reconnects: u64,
    /// How late requests were sent against the schedule, ms.
    pub schedule_lag_ms: Option<Summary>,
    /// Token sources of the phase's requests, by name.
    pub token_sources: Vec<TokenSource>,
    /// Per-token ITL (`vllm bench serve`'s ITL): gaps between output tokens of completed
    /// requests, a chunk of k tokens counting k gaps of a k-th of its wait, seconds. TPOT
    /// (`tpot` above) is per request. Nulls in reports that predate it. Written `itl_s`: the
    /// unit is in the name of every field the reference report lacks (read as `itl` too).
    #[serde(default, rename = "itl_s", alias = "itl")]
    pub itl: PhaseLatency,
    /// Per replica name, how its prefix cache was reset (`reset_prefix_cache`, `flush_cache`,
    /// `unsupported` when the server has no reset, `failed: ...`).
    pub cache_reset: BTreeMap<String, String>,
    /// Every replica's cache was reset before the phase (omitted in reports that predate it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caches_reset: Option<bool>,
    /// The phase's prefix set: prompts of no other phase of the session share its prefixes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_set: Option<String>,
    /// What the replicas' prefix caches served the phase's requests, beside the scenario's
    /// designed sharing (`experiment::routing::prefix`); `warm` when more. Absent without
    /// prefix-cache counters (and in reports that predate it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache: Option<super::prefix_cache::PrefixCacheCheck>,
    /// Prefix-cache hit ratio over the phase's first requests (what the phase started on),
    /// 0..1; a cold phase should start near 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_cache_hit_ratio: Option<EarlyHitRatio>,
    /// The routing policy the gateway's own counters say made most of the phase's decisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_policy: Option<String>,
    /// The asked route is the applied policy (None when the gateway exposes no policy counters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_applied: Option<bool>,
    /// Of the phase's header-attributed requests of families primed before it, the share
    /// served by the replica that owned the family's prefix then (`initial_prefix_owners`),
    /// 0..1. Absent without priming or header attribution, and on shards other than 0 of a
    /// sharded session (the owner map is shard 0's; `report merge` computes it for all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_hit_ratio: Option<f64>,
    /// The values behind this shard's figures, for `report merge` (written only by `run
    /// --shard i/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_dists: Option<super::phase_shard::PhaseShardDists>,
    /// Why the phase could not run at all (omitted when it ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
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

/// `config` of a phase. The setup fields are written only for primed (warm, hot) phases.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseConfig {
    /// Times each family block is repeated in a prompt.
    pub repeat: u64,
    /// Output tokens per request.
    pub output: u64,
    /// Requests per phase.
    pub count: u32,
    /// Mean arrival rate, requests/s.
    pub rps: f64,
    /// Seed of the round.
    pub seed: u64,
    /// Phase name.
    pub phase: String,
    /// Routing strategy.
    pub route: String,
    /// Cache scenario.
    pub scenario: String,
    /// Fraction of requests sent to family 0, 0..1.
    pub hot_fraction: f64,
    /// Priming attempts used (1 = the first pick was balanced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup_attempt: Option<u32>,
    /// Family -> priming candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family_map: Option<BTreeMap<u32, usize>>,
    /// Candidate prefixes sent when priming.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priming_candidates: Option<u32>,
    /// Per replica name, the candidates it served while priming.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_owners: Option<BTreeMap<String, Vec<usize>>>,
    /// A balanced family map was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balanced: Option<bool>,
    /// Owner of the hot family's prefix (hot scenarios only; inner None is written as null).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub hot_initial_replica: Option<Option<String>>,
}

/// A field that is present, null or not: `Some(None)` for null, and `None` (by `default`) only
/// when the key is missing.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// p50, p95 and p99 of a latency distribution of a phase, seconds; each null when there were
/// no samples.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseLatency {
    /// Median.
    pub p50: Option<f64>,
    /// 95th percentile.
    pub p95: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
}

/// One prompt family of a phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FamilyRecord {
    /// Requests sent with this family's prefix.
    pub requests: u64,
    /// TTFT p95 of its completed requests, seconds.
    pub ttft_p95: Option<f64>,
}

/// One replica of a phase. Counts that need the response header are null without it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplicaRecord {
    /// Requests it served (header attribution), else the engine's finished count.
    pub requests: Option<u64>,
    /// Requests its engine finished over the phase.
    pub engine_completed: Option<f64>,
    /// Prefix-cache lookups over the phase, tokens.
    pub cache_queries_tokens: Option<f64>,
    /// Prefix-cache hits over the phase, tokens.
    pub cache_hit_tokens: Option<f64>,
    /// Hit tokens / queried tokens, 0..1.
    pub cache_hit_ratio: Option<f64>,
    /// Peak waiting requests during the traffic.
    pub waiting_peak: Option<f64>,
    /// Peak running requests during the traffic.
    pub running_peak: Option<f64>,
    /// Requests it served per family (header attribution only, never guessed).
    pub family_counts: Option<BTreeMap<u32, u64>>,
    /// Peak KV-cache usage, fraction 0..1.
    pub kv_usage_peak: Option<f64>,
    /// Preemptions over the phase.
    pub preemptions: Option<f64>,
    /// Most of its requests in flight when the gateway picked it (header attribution only).
    pub gateway_outstanding_at_selection_peak: Option<u64>,
}

/// The prefix-cache hit ratio over a phase's first requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EarlyHitRatio {
    /// Hit tokens / prompt (or queried) tokens, 0..1.
    pub ratio: f64,
    /// The first requests it covers.
    pub requests: u64,
    /// `usage` (`prompt_tokens_details.cached_tokens`) or `engine_counters` (hits/queries
    /// between the last poll before the phase and the first after those requests ended).
    pub source: String,
}

/// Where a phase's per-replica request counts come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Attribution {
    /// Each response named the replica that served it.
    ResponseHeader,
    /// The engines' own finished-request counters.
    CounterDeltas,
    /// Neither: no per-replica counts.
    #[default]
    Unavailable,
}

impl RoutingPhase {
    /// The entry of a phase that could not run at all (errored, with the reason).
    pub fn not_run(name: &str, error: &str) -> Self {
        Self {
            phase: name.to_string(),
            status: AttemptStatus::Errored,
            error: Some(error.to_string()),
            ..Self::default()
        }
    }

    /// Round of the phase, the `r1` of `r1-hot90-prefix-cache` (empty when unnamed).
    pub fn round(&self) -> &str {
        self.phase.split('-').next().unwrap_or("")
    }
}
