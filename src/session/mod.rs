//! A benchmark session: preflight, the plan of cells, the runner task and its handles.
//!
//! Workers stamp their own times and hand finished samples to the attempt that owns them
//! (the aggregator); the poller and the attempts publish snapshots on `watch` channels; the
//! runner walks the cells and obeys commands. Headless mode and the live monitor drive the
//! same handles.

pub mod assemble;
pub mod plan;
pub mod preflight;
pub mod runner;
pub mod series;
pub mod snapshot;
pub mod state;

use crate::cell::control::{Command, LiveView, RunnerEvent};
use crate::metrics::poller::MetricsSnapshot;
use crate::report::json::SessionReport;
use snapshot::SessionSnapshot;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

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

pub use plan::start;
