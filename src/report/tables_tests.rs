//! Tests of `tables`: the decode view from a report, and the text it renders.

use super::*;
use crate::load::sample::{ErrorKind, TokenSource};
use crate::report::status::AttemptStatus as A;
use crate::report::status::CellOutcome as C;
use crate::report::tests_schema::{full_attempt, minimal_report, summary};
use std::collections::BTreeMap;

/// A cell of the `0` row with `attempts` built by `full_attempt`.
fn cell(conc: u32, status: C, attempts: &[A]) -> DecodeCell {
    let attempts = attempts.iter().zip(1..).map(|(s, n)| full_attempt(n, *s)).collect();
    DecodeCell {
        ctx: 0,
        ctx_label: "0".into(),
        conc,
        status,
        timeout_reason: None,
        skip: None,
        attempts,
        rate: None,
        baseline: Vec::new(),
        runs: None,
    }
}

/// A 1x5 matrix: measured (after a paused attempt), errored, skipped, pending, no cell.
fn report() -> SessionReport {
    let mut errored = full_attempt(1, A::Errored);
    errored.errors = BTreeMap::from([(ErrorKind::ContextOverflow, 2)]);
    errored.error_count = 2;
    let mut errored_cell = cell(2, C::Errored, &[]);
    errored_cell.attempts = vec![errored];
    let cells = vec![
        cell(4, C::Skipped, &[]),
        errored_cell,
        cell(8, C::Measured, &[A::Paused, A::Measured]),
        cell(16, C::Pending, &[A::Paused]),
    ];
    let decode = DecodeSection {
        ctx_labels: vec!["0".into()],
        conc: vec![2, 4, 8, 16, 32],
        cells,
        aggregate_sources: vec![TokenSource::OpenaiContinuousUsage],
        knees: Vec::new(),
    };
    SessionReport { decode: Some(decode), ..minimal_report() }
}

#[test]
fn measured_cell_uses_the_last_attempt() {
    let mut report = report();
    if let Some(d) = report.decode.as_mut() {
        d.cells[2].attempts[0].aggregate_tps = 1.0;
        d.cells[2].attempts[1].latency_ms = Some(summary(1000.0));
    }
    let view = decode_view(&report).expect("decode section");
    let CellView::Measured(m) = &view.cells[0][2] else { panic!("not measured: {:?}", view.cells[0][2]) };
    assert_eq!(m.aggregate_tps, 564.8);
    assert_eq!(m.per_request_tps, Some(70.6));
    assert_eq!((m.ttft_ms, m.itl_ms), (Some(481.0 * 1.5), Some(13.0 * 1.5)));
    assert_eq!((m.latency_p50_ms, m.latency_p90_ms), (Some(1500.0), Some(2500.0)));
    assert_eq!((m.running_avg, m.requested, m.limit.any(), m.errors), (Some(6.9), 8, true, 2));
}

#[test]
fn statuses_map_to_cell_views() {
    let view = decode_view(&report()).expect("decode section");
    assert_eq!(view.tool_version, "0.1.0");
    assert_eq!(view.aggregate_sources, ["openai_continuous_usage"]);
    assert_eq!(view.cells.len(), 1);
    let row = &view.cells[0];
    assert_eq!(row[0], CellView::Errored { errors: 2 });
    assert_eq!(row[1], CellView::Skipped);
    assert!(matches!(row[2], CellView::Measured(_)));
    assert_eq!(row[3..], [CellView::NotRun, CellView::NotRun]);
}

#[test]
fn degenerate_cells_do_not_panic() {
    let mut report = report();
    if let Some(d) = report.decode.as_mut() {
        d.cells.push(cell(8, C::Measured, &[]));
        d.cells[4].ctx_label = "1m".into();
        d.cells.push(cell(64, C::Errored, &[]));
        d.cells.push(cell(32, C::Errored, &[]));
        d.cells.push(cell(16, C::Pending, &[A::Measured]));
    }
    let view = decode_view(&report).expect("decode section");
    assert_eq!(view.cells[0][4], CellView::Errored { errors: 0 });
    assert_eq!(view.cells[0][3], CellView::NotRun);
    assert_eq!(cell_view(&cell(8, C::Measured, &[])), CellView::NotRun);
    assert_eq!(cell_view(&cell(8, C::Pending, &[A::Measured])), CellView::NotRun, "queued again");
    assert_eq!(cell_view(&cell(8, C::SkippedByOperator, &[A::SkippedByOperator])), CellView::NotRun);
}

#[test]
fn renders_every_notation() {
    let out = render_text(&report(), false, false);
    assert!(out.starts_with("llm-decode-bench v0.1.0\n"), "{out}");
    let aggregate = "│ 0          │ 0.0 (2e) │ ∅ │ 564.8 (2e) (7/8)*seq! │  · │  · │";
    assert!(out.contains(aggregate), "{out}");
    assert!(out.contains("│            │          │   │                722/20 │    │    │"), "{out}");
    assert!(out.contains("│ 0          │ - │ ∅ │ 70.6 (7/8)*seq! │  · │  · │"), "{out}");
    assert!(out.contains("*seq = held back by") && out.contains("! = warmup timed out"), "the marks used: {out}");
    assert!(!out.contains("*kv = ") && !out.contains("* = capacity-limited"), "only the marks used: {out}");
    assert!(out.contains("│ 0          │ - │ ∅ │ 84.8k/141.2k │  · │  · │"), "{out}");
    assert!(out.contains("Aggregate source(s): openai_continuous_usage"));
    assert!(out.contains("∅ = skipped") && out.contains("· = not run"));
    assert!(!out.contains('\x1b'));
}

#[test]
fn ascii_and_dim_options_are_passed_through() {
    let ascii = render_text(&report(), true, false);
    assert!(ascii.contains("| 0          | 0.0 (2e) | ∅ | 564.8 (2e) (7/8)*seq! |  · |  · |"), "{ascii}");
    assert!(!ascii.contains('╭'));
    let dim = render_text(&report(), false, true);
    assert!(dim.contains("\x1b[2m722/20\x1b[0m"), "{dim}");
}

#[test]
fn no_decode_section_renders_nothing() {
    assert_eq!(decode_view(&minimal_report()), None);
    assert_eq!(render_text(&minimal_report(), false, true), "");
}

#[test]
fn a_warm_decode_cell_is_marked_in_both_matrices_and_says_how_warm() {
    let mut report = report();
    let out = render_text(&report, true, false);
    assert!(!out.contains(" W") && !out.contains("W = warm cache"), "a cold cell is not marked: {out}");
    if let Some(d) = report.decode.as_mut() {
        let a = d.cells[2].attempts.last_mut().unwrap();
        a.prefix_cache = crate::report::prefix_cache::PrefixCacheCheck::judge(900.0, 1000.0, Some(0.01));
    }
    let out = render_text(&report, true, false);
    assert_eq!(out.matches("564.8 (2e) (7/8)*seq! W").count(), 2, "the aggregate and the summary: {out}");
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    let note =
        "W 0 8: warm cache: 90.0% of prompt tokens came from the prefix cache, the workload shares at most 1.0%.";
    assert!(flat.contains("W = warm cache: the server's prefix cache served more") && flat.contains(note), "{out}");
}
