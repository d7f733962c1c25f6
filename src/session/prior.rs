//! What a session reads from earlier sessions before any load is sent: the report it
//! continues (`--resume`) and the one it is compared with (`--baseline`). Loaded data, kept
//! apart from the settings of [`RunConfig`](crate::config::RunConfig).

use crate::report::baseline::Baseline;
use crate::report::json::SessionReport;
use std::path::PathBuf;
use std::sync::Arc;

/// The earlier sessions a run reads.
#[derive(Debug, Clone, Default)]
pub struct Prior {
    /// The saved session this run continues (`--resume`), checked against the run's settings.
    pub resume: Option<ResumeFrom>,
    /// The saved session every cell is compared with (`--baseline`).
    pub baseline: Option<Arc<Baseline>>,
}

/// A saved session to continue (`run --resume FILE`).
#[derive(Debug, Clone)]
pub struct ResumeFrom {
    /// The file it was read from.
    pub path: PathBuf,
    /// Its report.
    pub report: Arc<SessionReport>,
}
