//! What a session is asked to run: the validated run configuration and the experiments' settings.

pub mod conversation;
pub mod dataset;
pub mod decode;
pub(crate) mod knob;
pub mod prefix_repetition;
pub(crate) mod routing;
pub mod serve;
pub(crate) mod settings;
pub mod shard;
pub mod slo_search;
pub mod sweep;
pub mod trace;

/// The open-loop arrival rate lives in the load layer ([`crate::load::rate`]); re-exported here
/// because the run configuration is where it is set.
pub use crate::load::rate::{self, Rate};
pub use crate::report::goodput::SloSource;
pub use knob::KnobStep;

use crate::load::request::{ApiKey, Endpoint};
use std::path::PathBuf;
use std::time::Duration;

/// A replica's metrics endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsEndpoint {
    /// Display name.
    pub name: String,
    /// `/metrics` URL.
    pub url: String,
}

/// Which experiments a session runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlanKind {
    /// The sustained-decode matrix (ctx x conc).
    Decode,
    /// Prefix-cache routing phases (round x scenario x route).
    Routing,
    /// `vllm bench serve`'s random workload per input len x concurrency x request rate.
    Serve,
    /// Multi-turn conversations, each a session whose turns send the history so far.
    Conversation,
}

impl PlanKind {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Decode => "decode",
            Self::Routing => "routing",
            Self::Serve => "serve",
            Self::Conversation => "conversation",
        }
    }
}

/// A validated run configuration.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Base URL of the load (server or gateway).
    pub base_url: String,
    /// Model; None picks the first one served.
    pub model: Option<String>,
    /// Bearer token, never printed or saved.
    pub api_key: Option<ApiKey>,
    /// Chat or completions.
    pub endpoint: Endpoint,
    /// Replica metrics endpoints; empty means `<base>/metrics`.
    pub metrics: Vec<MetricsEndpoint>,
    /// Do not poll any metrics.
    pub no_metrics: bool,
    /// Read the replicas from this Prometheus server instead of their pages (`--prometheus`).
    pub prometheus: Option<crate::metrics::promql::PromServer>,
    /// Experiments to run, in order.
    pub plans: Vec<PlanKind>,
    /// Context sizes, tokens.
    pub ctx: Vec<u64>,
    /// Concurrencies, streams (closed loop), or the in-flight cap of open-loop cells.
    pub conc: Vec<u32>,
    /// Open-loop arrival rates of decode and serve cells (`--request-rate`), swept in order;
    /// empty: closed loop.
    pub rates: Vec<Rate>,
    /// Shape of the gamma arrival process (`--burstiness`): 1 is Poisson, lower is burstier.
    pub burstiness: f64,
    /// Measurement window per cell.
    pub window: Duration,
    /// The sustained-decode experiment and its bursts.
    pub decode: decode::DecodeConfig,
    /// Longest silence of a stream once tokens flow.
    pub idle_timeout: Duration,
    /// Longest wait for a first token while no stream of the attempt gets one (None: scaled
    /// with the prompt, see [`RunConfig::first_token_limit`]).
    pub first_token_timeout: Option<Duration>,
    /// Prometheus poll interval.
    pub poll_interval: Duration,
    /// Response header that names the serving replica (besides `target-pod`, `x-worker-url`).
    pub served_by_header: Option<String>,
    /// Report path (None: `<out_dir>/<timestamp>.json`).
    pub out: Option<PathBuf>,
    /// Directory of the default-named report (`--result-dir`; None: `sessions/`).
    pub out_dir: Option<PathBuf>,
    /// The routing experiment, when planned.
    pub routing: routing::RoutingConfig,
    /// The session's goodput objective (`--goodput`, else `--slo-ttft` / `--slo-tpot`): every
    /// experiment judges its requests against it (docs/reports.md §6).
    pub slo: crate::stats::Slo,
    /// Where [`RunConfig::slo`] came from.
    pub slo_source: SloSource,
    /// The serve experiment, when planned.
    pub serve: serve::ServeConfig,
    /// The conversation experiment, when planned.
    pub conversation: conversation::ConversationConfig,
    /// The SLO search that replaces the serve plan's fixed cells (`--slo-search`), when asked.
    pub slo_search: Option<slo_search::SloSearchConfig>,
    /// After the last cell, the runner waits for re-runs and saves until told to stop (the
    /// monitor's sessions: finished cells can be re-run until the operator quits); false ends
    /// the session with its last cell (headless).
    pub hold_after_last: bool,
    /// What the report file holds around the session's report (a sweep's file, with the set
    /// that runs nested); None writes the report itself.
    pub report_frame: Option<crate::report::frame::ReportFrame>,
    /// Runs of every cell, back to back (`--num-runs`, at least 1): each run is an attempt,
    /// and a cell's figures are the mean of its runs (`report::runs`).
    pub num_runs: u32,
    /// Local addresses the load's stream connections bind to, in turn (`--source-addrs`;
    /// empty: the system picks).
    pub source_addrs: Vec<std::net::IpAddr>,
    /// This process's slice of a sharded session (`--shard i/N`); None: the whole plan.
    pub shard: Option<shard::ShardSpec>,
    /// The session's id, the same in every shard of it (labels on `/metrics`, checked by
    /// `report merge`); None: unnamed.
    pub session_id: Option<String>,
    /// The wall-clock instant the session's cell timeline starts at (`--start-at`): the
    /// runner waits until then and starts every cell at its slot of the timeline
    /// (`session::timeline`); None starts at once, each cell when the one before ends.
    pub start_at: Option<std::time::SystemTime>,
    /// The longest a serve, conversation or burst request may take from its send
    /// (`--request-timeout`): past it the request is cut. It bounds those cells' slots on the
    /// `--start-at` timeline (`session::timeline_open`); None: no limit (and no slot).
    pub request_timeout: Option<std::time::Duration>,
    /// The live `/metrics` page of `--metrics-listen` (bound before preflight), which every
    /// attempt registers with; None without the flag.
    pub exposition: Option<std::sync::Arc<crate::metrics::expose::Exposition>>,
}

impl RunConfig {
    /// This process's slice of the plan's load: its shard's, or the whole plan.
    pub fn slice(&self) -> crate::load::slice::Slice {
        self.shard.map_or(crate::load::slice::Slice::WHOLE, shard::ShardSpec::slice)
    }
}

/// The first-token timeout when none is given: a floor, plus an allowance per prompt token
/// for slow long prefills (docs/protocol.md §8.6: 8k tokens take about 16 s on a CPU build).
pub const FIRST_TOKEN_FLOOR: Duration = Duration::from_secs(120);
/// Allowance per prompt token of the default first-token timeout.
pub const FIRST_TOKEN_PER_PROMPT_TOKEN: Duration = Duration::from_millis(2);

impl RunConfig {
    /// How long a request of a `prompt_tokens` prompt may wait for its first token while no
    /// stream of the attempt receives any: `--first-token-timeout`, else
    /// [`FIRST_TOKEN_FLOOR`] + [`FIRST_TOKEN_PER_PROMPT_TOKEN`] per prompt token.
    pub fn first_token_limit(&self, prompt_tokens: u64) -> Duration {
        self.first_token_timeout.unwrap_or_else(|| {
            let per = FIRST_TOKEN_PER_PROMPT_TOKEN.saturating_mul(u32::try_from(prompt_tokens).unwrap_or(u32::MAX));
            FIRST_TOKEN_FLOOR.saturating_add(per)
        })
    }
}
