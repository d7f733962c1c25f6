//! The report-format seam: every way a finished session report is rendered goes through
//! [`ReportFormat`]: text (the reference tables a run prints), markdown (the same tables for
//! pull requests), HTML (one self-contained page) and CSV (one row per cell or phase), each
//! rendering from the typed [`SessionReport`] alone.

use super::json::SessionReport;

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
    /// `vllm bench serve`'s result fields for every cell and phase, as one JSON array
    /// (docs/reports.md §5), to lay beside vLLM's own figures.
    Vllm,
}

/// Presentation settings shared by the formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RenderSettings {
    /// Draw tables with ASCII instead of Unicode box characters.
    pub ascii: bool,
    /// Dim secondary figures with ANSI escapes (terminals only).
    pub dim_ansi: bool,
    /// Widest text table, columns ([`RenderSettings::terminal_width`]; None: unbounded).
    pub width: Option<usize>,
}

impl RenderSettings {
    /// The width tables should fit on stdout: the terminal's, else `COLUMNS`, else none (a
    /// file or a pipe keeps whole tables); never under 40.
    pub fn terminal_width() -> Option<usize> {
        use std::io::IsTerminal;
        let tty = std::io::stdout().is_terminal().then(|| crossterm::terminal::size().ok()).flatten();
        let cols = tty.map(|(w, _)| usize::from(w)).or_else(|| std::env::var("COLUMNS").ok()?.trim().parse().ok());
        cols.map(|w: usize| w.max(40))
    }
}

impl ReportFormat {
    /// The format's name, as `--format` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Markdown => "markdown",
            Self::Html => "html",
            Self::Csv => "csv",
            Self::Vllm => "vllm",
        }
    }

    /// Renders `report`; an empty string when the report has nothing this format shows.
    /// Text has no trailing newline (a run prints it with one); the others end in one. Only
    /// text reads `settings`.
    pub fn render(self, report: &SessionReport, settings: RenderSettings) -> String {
        if let Some(sweep) = &report.sweep {
            return super::sweep::render::render(self, report, sweep, settings);
        }
        match self {
            Self::Text => super::tables::render_text_within(report, settings.ascii, settings.dim_ansi, settings.width),
            Self::Markdown => super::markdown::render(report),
            Self::Html => super::html::render(report),
            Self::Csv => super::csv::render(report),
            Self::Vllm => vllm_json(report, &crate::stats::PercentileList::vllm_default()),
        }
    }
}

/// The `vllm` format with `percentiles` (`report --percentiles`): pretty JSON, one line end.
pub fn vllm_json(report: &SessionReport, percentiles: &crate::stats::PercentileList) -> String {
    if let Some(sweep) = &report.sweep {
        return super::sweep::render::vllm(sweep, percentiles);
    }
    let value = super::vllm::export(report, percentiles);
    format!("{}\n", serde_json::to_string_pretty(&value).unwrap_or_else(|_| "[]".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests_schema::full_report;

    #[test]
    fn text_is_the_tables_a_run_prints() {
        let report = full_report();
        let settings = RenderSettings { ascii: true, dim_ansi: false, width: None };
        let text = ReportFormat::Text.render(&report, settings);
        assert_eq!(text, crate::report::tables::render_text(&report, true, false));
        assert!(text.contains("Aggregate"), "{text}");
        assert_eq!(ReportFormat::default().as_str(), "text");
    }

    #[test]
    fn every_shape_renders_in_every_format() {
        use clap::ValueEnum;
        let settings = RenderSettings::default();
        for (name, report) in crate::report::tests_shapes::shapes() {
            let has_tables = report.decode.is_some() || !report.phases.is_empty() || report.serve.is_some();
            for format in ReportFormat::value_variants() {
                let out = format.render(&report, settings);
                let shown = match format {
                    ReportFormat::Text | ReportFormat::Markdown => has_tables,
                    ReportFormat::Html | ReportFormat::Csv | ReportFormat::Vllm => true,
                };
                assert_eq!(!out.is_empty(), shown, "{name} as {}:\n{out}", format.as_str());
            }
            let html = ReportFormat::Html.render(&report, settings);
            assert!(html.trim_start().to_ascii_lowercase().starts_with("<!doctype html"), "{name}: {html}");
            assert!(html.trim_end().ends_with("</html>"), "{name}: {html}");
        }
    }

    #[test]
    fn the_vllm_format_is_vllm_field_names_per_cell() {
        let out = ReportFormat::Vllm.render(&full_report(), RenderSettings::default());
        let rows: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        let first = &rows[0];
        for key in ["completed", "request_throughput", "output_throughput", "median_ttft_ms", "p99_ttft_ms"] {
            assert!(first.get(key).is_some(), "no {key} in {first}");
        }
        let p = crate::stats::percentile_list("50,99.9").unwrap();
        let rows: serde_json::Value = serde_json::from_str(&vllm_json(&full_report(), &p)).unwrap();
        assert!(rows[0].get("p99.9_ttft_ms").is_some() && rows[0].get("p99_ttft_ms").is_none(), "{}", rows[0]);
    }

    #[test]
    fn names_are_the_flag_values() {
        use clap::ValueEnum;
        for format in ReportFormat::value_variants() {
            let value = format.to_possible_value().map(|v| v.get_name().to_string());
            assert_eq!(value.as_deref(), Some(format.as_str()));
        }
        assert_eq!(ReportFormat::value_variants().len(), 5);
    }
}
