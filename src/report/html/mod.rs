//! The `html` report format: one self-contained page (no network, no external script or font).

use super::json::SessionReport;

/// Renders `report` as one self-contained HTML page.
pub fn render(report: &SessionReport) -> String {
    let title = format!("llm-decode-bench session {}", report.started_at);
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head><body><h1>{title}</h1></body></html>\n"
    )
}
