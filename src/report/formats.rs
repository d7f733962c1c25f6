//! The report-format seam: every way a finished session report is rendered goes through
//! [`ReportFormat`]: text (the reference tables a run prints), markdown (the same tables for
//! pull requests), HTML (one self-contained page) and CSV (one row per cell or phase), each
//! rendering from the typed [`SessionReport`] alone.

use super::json::SessionReport;
use super::tables::render_text;

/// How a report is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ReportFormat {
    /// The tables a run prints: decode matrices, bursts and routing summaries.
    #[default]
    Text,
    /// The same tables as GitHub markdown tables, legends as paragraphs.
    Markdown,
    /// One self-contained HTML page (no network, no external script or font).
    Html,
    /// One row per decode cell, burst cell and routing phase (RFC 4180).
    Csv,
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
            Self::Markdown => "markdown",
            Self::Html => "html",
            Self::Csv => "csv",
        }
    }

    /// Renders `report`; an empty string when the report has nothing this format shows.
    /// Text has no trailing newline (a run prints it with one); the others end in one. Only
    /// text reads `settings`.
    pub fn render(self, report: &SessionReport, settings: RenderSettings) -> String {
        match self {
            Self::Text => render_text(report, settings.ascii, settings.dim_ansi),
            Self::Markdown => super::markdown::render(report),
            Self::Html => super::html::render(report),
            Self::Csv => super::csv::render(report),
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

    #[test]
    fn every_shape_renders_in_every_format() {
        use clap::ValueEnum;
        let settings = RenderSettings::default();
        for (name, report) in crate::report::tests_shapes::shapes() {
            let has_tables = report.decode.is_some() || !report.phases.is_empty();
            for format in ReportFormat::value_variants() {
                let out = format.render(&report, settings);
                let shown = match format {
                    ReportFormat::Text | ReportFormat::Markdown => has_tables,
                    ReportFormat::Html | ReportFormat::Csv => true,
                };
                assert_eq!(!out.is_empty(), shown, "{name} as {}:\n{out}", format.as_str());
            }
            let html = ReportFormat::Html.render(&report, settings);
            assert!(html.trim_start().to_ascii_lowercase().starts_with("<!doctype html"), "{name}: {html}");
            assert!(html.trim_end().ends_with("</html>"), "{name}: {html}");
        }
    }

    #[test]
    fn names_are_the_flag_values() {
        use clap::ValueEnum;
        for format in ReportFormat::value_variants() {
            let value = format.to_possible_value().map(|v| v.get_name().to_string());
            assert_eq!(value.as_deref(), Some(format.as_str()));
        }
        assert_eq!(ReportFormat::value_variants().len(), 4);
    }
}
