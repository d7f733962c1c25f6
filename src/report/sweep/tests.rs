//! Tests of the sweep section: every format, the side-by-side view, the schema, and `compare`
//! of sweeps.

use super::compare::{compare_sweeps, render_sweeps, side_by_side_in};
use super::side::side_by_side;
use super::*;
use crate::report::compare::render::CompareFormat;
use crate::report::compare::{Options, Verdict};
use crate::report::formats::{RenderSettings, ReportFormat};
use crate::report::tests_example::{full_report, minimal_report};

/// `report` with every decode throughput scaled by `by`.
fn scaled(report: &SessionReport, by: f64) -> SessionReport {
    let mut r = report.clone();
    for cell in &mut r.decode.as_mut().expect("decode").cells {
        cell.attempts.iter_mut().for_each(|a| a.aggregate_tps *= by);
    }
    r
}

fn set(index: usize, n: &str, status: SetStatus, report: Option<SessionReport>) -> SweepSet {
    let params = [("n".to_string(), n.to_string())].into();
    let server = ServerSettings { max_num_seqs: n.parse().ok(), num_gpu_blocks: Some(1000), ..Default::default() };
    SweepSet {
        status,
        port: Some(9000 + index as u16),
        startup_s: report.as_ref().map(|_| 83.25),
        server: report.as_ref().map(|_| server),
        log: Some(format!("r.set-{index}.server.log")),
        report: report.map(Box::new),
        ..SweepSet::pending(index, params)
    }
}

/// Three sets: two done (the second twice as fast), one whose server never came up.
fn sweep_report() -> SessionReport {
    let mut failed = set(3, "16", SetStatus::FailedToStart, None);
    failed.error = Some("the server exited before it was ready (exit status: 1)".into());
    failed.log_tail = vec!["Traceback (most recent call last):".into(), "RuntimeError: out of memory".into()];
    let sets = vec![
        set(1, "4", SetStatus::Done, Some(full_report())),
        set(2, "8", SetStatus::Done, Some(scaled(&full_report(), 2.0))),
        failed,
    ];
    let section = SweepSection {
        params: vec!["n".into()],
        server_cmd: "vllm serve m --port {port} --max-num-seqs {n}".into(),
        base_url: "http://127.0.0.1:{port}".into(),
        ready_timeout_s: 600.0,
        grace_s: 10.0,
        sets,
    };
    SessionReport { sweep: Some(section), complete: true, ..minimal_report() }
}

#[test]
fn a_sweep_report_validates_against_the_schema() {
    let value = serde_json::to_value(sweep_report()).expect("serialises");
    crate::report::tests_schema::assert_valid(&value);
    assert_eq!(value["sweep"]["sets"][2]["status"], "failed_to_start");
    assert_eq!(value["sweep"]["sets"][0]["report"]["decode"]["cells"][0]["ctx"], 16384, "each set's cells nested");
    let back: SessionReport = serde_json::from_value(value).expect("reads back");
    assert_eq!(back, sweep_report());
}

#[test]
fn the_sets_side_by_side_read_every_set_at_each_cell() {
    let side = side_by_side(sweep_report().sweep.as_ref().expect("sweep"));
    let statuses: Vec<&str> = side.sets.iter().map(|s| s.status.as_str()).collect();
    assert_eq!(statuses, ["done", "done", "failed_to_start"]);
    let row = |cell: &str, figure: &str| {
        side.rows.iter().find(|r| r.cell == cell && r.figure == figure).unwrap_or_else(|| panic!("no {cell} {figure}"))
    };
    assert_eq!(row("server", "start-up s").values, [Some(83.25), Some(83.25), None]);
    assert_eq!(row("server", "max_num_seqs").values, [Some(4.0), Some(8.0), None]);
    let tps = row("decode ctx=16k conc=8", "aggregate tok/s");
    assert_eq!(tps.values, [Some(564.8), Some(1129.6), None], "each set's own figure");
    assert!(side.rows.iter().any(|r| r.figure == "TTFT p50 ms"));
    let running = row("decode ctx=16k conc=8", "running (avg, Prometheus)").values.clone();
    assert!(running[0].is_some_and(|v| v > 0.0 && v <= 8.0) && running[2].is_none(), "{running:?}");
    assert!(!side.rows.iter().any(|r| r.figure == "block_size"), "a setting no set read is left out");
    let sweep = sweep_report().sweep.expect("sweep");
    let labels: Vec<String> = sweep.sessions().into_iter().map(|(l, _)| l).collect();
    assert_eq!(labels, ["set 1 · n=4", "set 2 · n=8"], "the set without a session has no report to show");
}

#[test]
fn every_format_shows_each_set_under_its_heading_then_the_sets_side_by_side() {
    let r = sweep_report();
    let settings = RenderSettings { ascii: true, dim_ansi: false, width: None };
    let text = ReportFormat::Text.render(&r, settings);
    assert!(text.contains("== set 1/3 · n=4 · done · up in 83.2 s · log: r.set-1.server.log =="), "{text}");
    assert!(text.contains("== set 3/3 · n=16 · failed_to_start · log: r.set-3.server.log =="), "{text}");
    assert!(text.contains("  | RuntimeError: out of memory"), "{text}");
    assert!(text.contains("Sets side by side"), "{text}");
    assert_eq!(
        text.matches("Aggregate").count(),
        2 * ReportFormat::Text.render(&full_report(), settings).matches("Aggregate").count()
    );
    let md = ReportFormat::Markdown.render(&r, settings);
    assert!(md.contains("## set 2/3 · n=8 · done") && md.contains("## Sets side by side"), "{md}");
    assert!(md.contains("| cell | figure | set 1 · n=4 | set 2 · n=8 | set 3 · n=16 |"), "{md}");
    let html = ReportFormat::Html.render(&r, settings);
    assert!(html.starts_with("<!doctype html>") && html.trim_end().ends_with("</html>"));
    assert!(html.contains("id=\"set1-decode\"") && html.contains("href=\"#set1-decode\""), "anchors per set");
    assert!(html.contains("id=\"set-3\"") && html.contains("RuntimeError: out of memory"));
    let csv = ReportFormat::Csv.render(&r, settings);
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("set,set_params,set_status,kind,"), "{}", lines[0]);
    let one = crate::report::csv::render(&full_report()).lines().count() - 1;
    assert_eq!(lines.len(), 1 + 2 * one, "every cell of the two sets with sessions");
    assert!(lines[1].starts_with("1,n=4,done,") && lines.last().is_some_and(|l| l.starts_with("2,n=8,done,")));
    let vllm: serde_json::Value = serde_json::from_str(&ReportFormat::Vllm.render(&r, settings)).expect("JSON");
    let rows = vllm.as_array().expect("rows");
    assert!(rows.iter().all(|row| row["set"].is_u64() && row["set_params"]["n"].is_string()), "{vllm}");
    let empty = SessionReport { sweep: Some(SweepSection { sets: vec![], ..r.sweep.clone().unwrap() }), ..r };
    assert!(ReportFormat::Csv.render(&empty, settings).starts_with("set,set_params,set_status,kind,"));
}

fn opts() -> Options {
    Options { threshold_pct: 5.0, percentiles: crate::stats::percentile_list("50,99").expect("pcts") }
}

#[test]
fn compare_shows_one_sweep_side_by_side_and_pairs_two_by_their_params() {
    let r = sweep_report();
    let sweep = r.sweep.as_ref().expect("sweep");
    let text = side_by_side_in(sweep, CompareFormat::Text);
    assert!(text.lines().next().is_some_and(|l| l.contains("set 1 · n=4") && l.contains("set 3 · n=16")), "{text}");
    let md = side_by_side_in(sweep, CompareFormat::Markdown);
    assert!(md.contains("|---|---|---:|---:|---:|"), "{md}");
    // NEW: the same sets in another order, n=8 slower than before, n=4 unchanged, n=16 gone.
    let mut new = sweep.clone();
    new.sets.swap(0, 1);
    new.sets[0].report = Some(Box::new(scaled(&full_report(), 1.0)));
    new.sets.pop();
    let c = compare_sweeps(("a.json", sweep), ("b.json", &new), &opts()).expect("comparable");
    let pairs: Vec<&str> = c.pairs.iter().map(|p| p.params.as_str()).collect();
    assert_eq!(pairs, ["n=4", "n=8"], "paired by params, in BASE's order");
    assert_eq!(c.pairs[0].comparison.verdict, Verdict::NoChange);
    assert_eq!(c.pairs[1].comparison.verdict, Verdict::Regression, "n=8 halved");
    assert_eq!(c.verdict(), Verdict::Regression);
    assert_eq!(c.unpaired, ["n=16: only in a.json"]);
    let out = render_sweeps(&c, CompareFormat::Text);
    assert!(out.contains("== set n=4 ==") && out.contains("not compared: n=16: only in a.json"), "{out}");
    let other = SweepSection { params: vec!["m".into()], ..new };
    let refused = compare_sweeps(("a.json", sweep), ("b.json", &other), &opts()).unwrap_err();
    assert!(refused.contains("cannot be paired"), "{refused}");
}

#[test]
fn the_sweep_page_draws_one_pareto_chart_over_its_sets_with_points_labelled_by_set() {
    let r = sweep_report();
    let settings = RenderSettings { ascii: true, dim_ansi: false, width: None };
    let html = ReportFormat::Html.render(&r, settings);
    let start = html.find("id=\"pareto\"").expect("a Pareto section on the sweep's page");
    let end = html[start..].find("id=\"set-1\"").map(|e| start + e).expect("the sets after the chart");
    let chart = &html[start..end];
    assert!(chart.contains("set 1 · n=4") && chart.contains("set 2 · n=8"), "points labelled by set: {chart}");
    assert!(!chart.contains("set 3 · n=16"), "the set that failed to start has no point");
    assert!(html.contains("href=\"#pareto\""), "linked from the page's header");
    assert_eq!(html.matches("id=\"pareto\"").count(), 1, "no per-set chart beside the sweep's one");
}

/// An SLO search's section (`--slo-search`) whose search found `found` streams.
fn slo_search(found: f64) -> crate::report::extension::ExtensionSection {
    let figure = |name: &str, value: f64| serde_json::json!({"name": name, "unit": "streams", "better": "higher", "value": value});
    serde_json::from_value(serde_json::json!({
        "kind": "slo_search", "title": "SLO search",
        "cells": [{"ctx": 64, "ctx_label": "64", "conc": 16, "label": "slo_search in=64", "status": "measured",
            "attempts": [{"attempt": 1, "status": "measured", "started_s": 0.0, "duration_s": 9.0, "requests": 96,
                "errors": {}, "error_examples": {}, "output_tokens": 960, "output_tps": 250.0, "ttft_p50_ms": 40.0,
                "figures": [figure("found_load", found), figure("last_pass", found), figure("first_fail", found + 1.0)]}]}]
    }))
    .expect("an SLO search section")
}

#[test]
fn the_sets_side_by_side_show_the_load_an_slo_search_found() {
    let mut r = sweep_report();
    let sweep = r.sweep.as_mut().expect("sweep");
    for (set, found) in sweep.sets.iter_mut().zip([4.0, 9.0]) {
        set.report.as_mut().expect("a session").extensions = vec![slo_search(found)];
    }
    let side = side_by_side(r.sweep.as_ref().expect("sweep"));
    let found = side.rows.iter().find(|row| row.figure == "found_load").expect("the found load is a row");
    assert_eq!(found.values, [Some(4.0), Some(9.0), None]);
    assert!(side.rows.iter().any(|row| row.figure == "first_fail"), "and the bracket");
}
