//! Every format shows a repeated cell's mean and its spread; without repetitions nothing new.

use super::annotate;
use crate::report::formats::{RenderSettings, ReportFormat};
use crate::report::json::SessionReport;
use crate::report::status::AttemptStatus;
use crate::report::tests_schema::{full_attempt, full_report};

/// The full example with its measured decode cell (ctx 16k, conc 8) run three times, at 500,
/// 550 and 600 tok/s, and the routing phase twice.
fn repeated() -> SessionReport {
    let mut report = full_report();
    let cell = &mut report.decode.as_mut().unwrap().cells[1];
    cell.attempts = [500.0, 550.0, 600.0]
        .iter()
        .enumerate()
        .map(|(i, tps)| crate::report::decode::DecodeAttempt {
            aggregate_tps: *tps,
            ..full_attempt(i as u32 + 1, AttemptStatus::Measured)
        })
        .collect();
    let mut second = report.phases[0].clone();
    second.output_tokens_per_second += 20.0;
    report.phase_history = vec![report.phases[0].clone(), second.clone()];
    report.phases = vec![second];
    annotate(&mut report, 3);
    report
}

fn render(format: ReportFormat, report: &SessionReport) -> String {
    format.render(report, RenderSettings { ascii: true, dim_ansi: false, width: None })
}

#[test]
fn the_text_tables_show_the_mean_and_a_repetitions_table() {
    let report = repeated();
    let text = render(ReportFormat::Text, &report);
    let row = text.lines().find(|l| l.starts_with("| 16k ")).unwrap();
    assert!(row.contains(" 550.0 ") && !row.contains("600.0"), "the matrix shows the mean:\n{text}");
    assert!(text.contains(super::render::TITLE), "{text}");
    let runs = text.lines().find(|l| l.contains("decode ctx=16k conc=8")).unwrap();
    // sd 50 over 3 runs: ±124.2 (t 4.303 × 50 / √3), CV 9.1% on the dim line.
    assert!(runs.contains("3/3") && runs.contains("550.0 ±124.2"), "{runs}");
    assert!(text.contains("CV 9.1%"), "{text}");
    assert!(text.contains("--num-runs 3") && text.contains("mean of its measured runs"), "{text}");
    assert!(text.lines().any(|l| l.contains("routing r1-hot90-prefix-cache") && l.contains("2/3")), "{text}");
    let md = render(ReportFormat::Markdown, &report);
    assert!(md.contains("550.0 ±124.2") && md.contains("CV 9.1%"), "{md}");
}

#[test]
fn html_and_csv_carry_the_repetitions() {
    let report = repeated();
    let html = render(ReportFormat::Html, &report);
    assert!(html.contains("id=\"runs\"") && html.contains("550.0 ±124.2"), "no repetitions section");
    let csv = render(ReportFormat::Csv, &report);
    let mut lines = csv.lines();
    let header = lines.next().unwrap();
    assert!(header.ends_with(",tables,runs,runs_figures"), "{header}");
    let cols: Vec<&str> = header.split(',').collect();
    let at = |name: &str| cols.iter().position(|c| *c == name).unwrap();
    let row = lines.find(|l| l.starts_with("decode,ctx=16k conc=8")).unwrap();
    let fields: Vec<&str> = row.split(',').collect();
    assert_eq!((fields[at("aggregate_tps")], fields[at("runs")]), ("550", "3/3"), "{row}");
    assert!(row.contains("aggregate_tok_s.mean=550;aggregate_tok_s.sd=50;"), "{row}");
}

#[test]
fn one_run_per_cell_renders_as_before() {
    let plain = full_report();
    let mut annotated = plain.clone();
    annotate(&mut annotated, 1);
    assert!(!super::any(&annotated));
    for format in [ReportFormat::Text, ReportFormat::Markdown, ReportFormat::Html, ReportFormat::Csv] {
        let out = render(format, &annotated);
        assert_eq!(out, render(format, &plain), "{}", format.as_str());
        assert!(!out.contains("Repetitions") && !out.contains("runs_figures"), "{}", format.as_str());
    }
}
