//! Points of every report shape: which cells give one, with what figures and labels.

use super::*;
use crate::report::extension::{ExtensionAttempt, ExtensionCell, ExtensionFigure, ExtensionSection};
use crate::report::tests_example::{full_report, minimal_report};
use crate::report::tests_shapes::{interrupted, rerun, with_serve};

fn one(report: &SessionReport) -> Vec<Point> {
    points(&[Source { label: "", report }])
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * b.abs().max(1.0)
}

#[test]
fn decode_and_burst_cells_are_placed_by_median_tpot_and_output_rate() {
    let got = one(&full_report());
    assert_eq!(got.len(), 2, "the errored decode cell has no point: {got:?}");
    let (d, b) = (&got[0], &got[1]);
    assert_eq!((d.kind.name(), d.cell.as_str()), ("decode", "ctx 16k · conc 8"));
    // itl_ms p50 = 19.5 ms (summary(13.0)); the attempt's aggregate 564.8 tok/s.
    assert!(close(d.per_user_tps, 1000.0 / 19.5) && close(d.aggregate_tps, 564.8), "{d:?}");
    assert_eq!((b.kind.name(), b.cell.as_str()), ("burst", "ctx 16k · burst 4"));
    assert!(close(b.per_user_tps, 1000.0 / 14.25) && close(b.aggregate_tps, 307.2), "{b:?}");
    assert_eq!(d.xy(), (d.aggregate_tps, d.per_user_tps));
}

#[test]
fn serve_cells_use_vllms_median_tpot_and_output_throughput() {
    let got = one(&with_serve());
    assert_eq!(got.len(), 1, "the skipped cell has none: {got:?}");
    assert_eq!((got[0].kind.clone(), got[0].cell.as_str()), (PointKind::Serve, "in 1k · conc 2 · rate inf"));
    assert!(close(got[0].per_user_tps, 1000.0 / 7.25) && close(got[0].aggregate_tps, 51.2));
}

#[test]
fn only_a_measured_latest_attempt_counts() {
    let stopped = one(&interrupted());
    assert_eq!(stopped.iter().map(|p| p.cell.as_str()).collect::<Vec<_>>(), ["ctx 16k · conc 4"]);
    let again = one(&rerun());
    assert_eq!(again.len(), 1, "{again:?}");
    assert!(close(again[0].aggregate_tps, 600.25), "the latest of three attempts: {again:?}");
    assert!(one(&minimal_report()).is_empty());
}

#[test]
fn open_loop_cells_name_their_rate() {
    let mut report = full_report();
    let d = report.decode.as_mut().expect("decode");
    d.cells[1].rate = Some(crate::load::rate::Rate::PerSecond(4.0));
    assert_eq!(one(&report)[0].cell, "ctx 16k · rate 4 · conc 8");
}

#[test]
fn figures_that_are_absent_zero_or_not_finite_give_no_point() {
    let mut report = full_report();
    if let Some(d) = report.decode.as_mut() {
        d.cells[1].attempts[1].itl_ms = None;
    }
    if let Some(b) = report.burst.as_mut() {
        b.cells[0].attempts[0].output_tps = f64::NAN;
    }
    assert!(one(&report).is_empty());
    let mut report = full_report();
    if let Some(d) = report.decode.as_mut() {
        d.cells[1].attempts[1].aggregate_tps = 0.0;
    }
    assert_eq!(one(&report).len(), 1, "the burst stays");
}

/// A conversation section with one measured cell, its median TPOT figure as given.
pub(crate) fn conversation(tpot: Option<f64>) -> ExtensionSection {
    let attempt = ExtensionAttempt {
        attempt: 1,
        status: AttemptStatus::Measured,
        started_s: 0.0,
        duration_s: 10.0,
        requests: 20,
        errors: Default::default(),
        error_examples: Default::default(),
        output_tokens: 2000,
        output_tps: 200.0,
        ttft_p50_ms: Some(50.0),
        figures: vec![ExtensionFigure {
            name: TPOT_FIGURE.into(),
            unit: "ms".into(),
            better: crate::report::compare::Better::Lower,
            value: tpot,
        }],
        tables: Default::default(),
        labels: Default::default(),
    };
    let cell = ExtensionCell {
        ctx: 0,
        ctx_label: "0".into(),
        conc: 4,
        rate: Some("2".into()),
        label: "conversation conc=4 rate=2".into(),
        status: CellOutcome::Measured,
        timeout_reason: None,
        skip: None,
        attempts: vec![attempt],
        baseline: Vec::new(),
        runs: None,
    };
    ExtensionSection { kind: "conversation".into(), title: "Conversations".into(), cells: vec![cell] }
}

#[test]
fn conversation_cells_use_their_tpot_figure() {
    let report = SessionReport { extensions: vec![conversation(Some(20.0))], ..minimal_report() };
    let got = one(&report);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].kind, PointKind::Extension("conversation".into()));
    assert_eq!((got[0].kind.name(), got[0].cell.as_str()), ("conversation", "ctx 0 · rate 2 · conc 4"));
    assert!(close(got[0].per_user_tps, 50.0) && close(got[0].aggregate_tps, 200.0));
    let without = SessionReport { extensions: vec![conversation(None)], ..minimal_report() };
    assert!(one(&without).is_empty(), "no TPOT figure, no point");
}

#[test]
fn points_carry_their_source_in_order() {
    let (a, b) = (full_report(), with_serve());
    let got = points(&[Source { label: "a", report: &a }, Source { label: "b", report: &b }]);
    assert_eq!(got.iter().map(|p| p.source).collect::<Vec<_>>(), [0, 0, 1]);
    assert_eq!(got.iter().map(|p| p.kind.name()).collect::<Vec<_>>(), ["decode", "burst", "serve"]);
}

#[test]
fn a_repeated_cell_is_placed_at_the_mean_of_its_runs_as_its_tables_show_it() {
    let mut report = rerun();
    crate::report::runs::annotate(&mut report, 3);
    let decode = report.decode.as_ref().expect("decode");
    let cell = decode.cells.iter().find(|c| c.runs.is_some()).expect("a repeated cell");
    let measured: Vec<f64> =
        cell.attempts.iter().filter(|a| a.status == AttemptStatus::Measured).map(|a| a.aggregate_tps).collect();
    assert!(measured.len() > 1, "several runs: {measured:?}");
    let mean = measured.iter().sum::<f64>() / measured.len() as f64;
    let got = one(&report);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(close(got[0].aggregate_tps, mean), "the mean {mean}, not the last run: {got:?}");
    assert!(!close(got[0].aggregate_tps, 600.25), "the last run alone is not the point");
}
