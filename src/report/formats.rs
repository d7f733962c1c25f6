//! The report-format seam: every way a finished session report is rendered goes through
//! [`ReportFormat`]. Text (the reference tables) is the first; markdown, HTML and CSV plug in
//! here as further variants, each rendering from the typed [`SessionReport`] alone.

use super::json::SessionReport;
use super::tables::render_text;

/// How a report is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ReportFormat {
    /// The tables a run prints: decode matrices, bursts and routing summaries.
    #[default]
    Text,
}

/// Presentation settings shared by the formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RenderSettings {
    /// Draw tables with ASCII instead of Unicode box characters.
    pub ascii: bool,
    /// Dim secondary figures with ANSI escapes (terminals only).
    pub dim_ansi: bool,
}

impl ReportFormat {
    /// The format's name, as `--format` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Text => "text",
        }
    }

    /// Renders `report`; an empty string when the report has nothing this format shows.
    pub fn render(self, report: &SessionReport, settings: RenderSettings) -> String {
        match self {
            Self::Text => render_text(report, settings.ascii, settings.dim_ansi),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests_schema::full_report;

    #[test]
    fn text_is_the_tables_a_run_prints() {
        let report = full_report();
        let settings = RenderSettings { ascii: true, dim_ansi: false };
        let text = ReportFormat::Text.render(&report, settings);
        assert_eq!(text, render_text(&report, true, false));
        assert!(text.contains("Aggregate"), "{text}");
        assert_eq!(ReportFormat::default().as_str(), "text");
    }
}
