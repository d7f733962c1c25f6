//! What a caller holds of a running session: commands in; events, views and the report out.

use super::snapshot::SessionSnapshot;
use crate::cell::control::{Command, LiveAttempt, RunnerEvent};
use crate::metrics::poller::MetricsSnapshot;
use crate::report::fallback::SaveLog;
use crate::report::json::SessionReport;
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
    pub live: watch::Receiver<LiveAttempt>,
    /// The whole session.
    pub snapshot: watch::Receiver<Arc<SessionSnapshot>>,
    /// The latest metrics round, when polling.
    pub metrics: Option<watch::Receiver<Arc<MetricsSnapshot>>>,
    /// Where the report is written.
    pub report_path: PathBuf,
    /// How the report's writes went (a failed one names its fallback file).
    pub saves: Arc<SaveLog>,
    /// The runner; yields the final report.
    pub join: JoinHandle<SessionReport>,
}
