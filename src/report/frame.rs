//! What a session's report is written inside: a sweep (`run --server-cmd`) writes one file
//! that nests the report of the set that runs in the sweep's own, so every save of that set's
//! session rewrites the whole sweep file (src/report/sink.rs applies the frame).

use super::json::SessionReport;
use std::sync::Arc;

/// Turns a session's report, as it stands, into the document its file holds.
#[derive(Clone)]
pub struct ReportFrame(Arc<dyn Fn(&SessionReport) -> SessionReport + Send + Sync>);

impl ReportFrame {
    /// A frame that writes `frame(report)` instead of the report.
    pub fn new(frame: impl Fn(&SessionReport) -> SessionReport + Send + Sync + 'static) -> Self {
        Self(Arc::new(frame))
    }

    /// The document to write for `report`.
    pub fn apply(&self, report: &SessionReport) -> SessionReport {
        (self.0)(report)
    }
}

impl std::fmt::Debug for ReportFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReportFrame")
    }
}
