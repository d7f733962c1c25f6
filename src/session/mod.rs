//! A benchmark session: preflight, the plan of cells, the runner task and its handles.
//!
//! Workers stamp their own times and hand finished samples to the attempt that owns them
//! (the aggregator); the poller and the attempts publish snapshots on `watch` channels; the
//! runner walks the cells and obeys commands. Headless mode and the live monitor drive the
//! same handles.

pub mod admission;
pub mod assemble;
pub mod burst;
pub mod control;
pub mod decode;
pub mod decode_report;
pub mod env;
pub mod lag;
pub mod plan;
pub mod preflight;
pub mod replicas_live;
pub mod routing_setup;
pub mod runner;
pub mod series;
pub mod state;
pub mod summarize;
pub mod view;
pub mod window;

use crate::load::request::{ApiKey, Endpoint};
use crate::metrics::poller::MetricsSnapshot;
use crate::report::json::SessionReport;
use control::{Command, LiveView, RunnerEvent};
use preflight::MetricsEndpoint;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use view::SessionSnapshot;

/// Which experiments a session runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlanKind {
    /// The sustained-decode matrix (ctx x conc).
    Decode,
    /// Prefix-cache routing phases (round x scenario x route).
    Routing,
}

impl PlanKind {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Decode => "decode",
            Self::Routing => "routing",
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
    /// Experiments to run, in order.
    pub plans: Vec<PlanKind>,
    /// Context sizes, tokens.
    pub ctx: Vec<u64>,
    /// Concurrencies, streams.
    pub conc: Vec<u32>,
    /// Measurement window per cell.
    pub window: Duration,
    /// Longest warmup per cell.
    pub warmup_timeout: Duration,
    /// Extra warmup after admission, before the window opens.
    pub settle: Duration,
    /// Skip a cell when ctx x conc exceeds KV capacity times this.
    pub kv_oversubscribe: f64,
    /// Run Phase 3 (bursts) after the matrix.
    pub run_burst: bool,
    /// Output tokens per burst request.
    pub burst_tokens: u64,
    /// `max_tokens` of sustained streams (None: what max_model_len leaves, at least the floor).
    pub max_tokens: Option<u64>,
    /// Fewest output tokens a sustained stream asks for, tokens.
    pub min_stream_tokens: u64,
    /// Longest silence of a stream once tokens flow.
    pub idle_timeout: Duration,
    /// Prometheus poll interval.
    pub poll_interval: Duration,
    /// Response header that names the serving replica (besides `target-pod`, `x-worker-url`).
    pub served_by_header: Option<String>,
    /// Report path (None: `sessions/<timestamp>.json`).
    pub out: Option<PathBuf>,
    /// The routing experiment, when planned.
    pub routing: crate::routing::RoutingConfig,
}

/// Handles of a running session.
pub struct SessionHandles {
    /// Commands to the runner.
    pub commands: mpsc::UnboundedSender<Command>,
    /// Runner events.
    pub events: mpsc::UnboundedReceiver<RunnerEvent>,
    /// The running cell's live view.
    pub live: watch::Receiver<LiveView>,
    /// The whole session.
    pub snapshot: watch::Receiver<Arc<SessionSnapshot>>,
    /// The latest metrics round, when polling.
    pub metrics: Option<watch::Receiver<Arc<MetricsSnapshot>>>,
    /// Where the report is written.
    pub report_path: PathBuf,
    /// The runner; yields the final report.
    pub join: JoinHandle<SessionReport>,
}

pub use plan::{start, start_with};
