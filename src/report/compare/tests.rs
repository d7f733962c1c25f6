//! Tests of `compare` (src/report/compare/).

use super::render::{CompareFormat, render, signed_pct};
use super::*;
use crate::report::json::DecodeAttempt;
use crate::report::status::{AttemptStatus, CellOutcome};
use crate::report::tests_example::full_report;
use crate::stats::percentile_list;

fn opts(pcts: &str) -> Options {
    Options { threshold_pct: 5.0, percentiles: percentile_list(pcts).unwrap() }
}

fn run(base: &SessionReport, new: &SessionReport) -> Comparison {
    compare(("base.json", base), ("new.json", new), &opts("50,99"))
}

fn measured_decode(r: &mut SessionReport) -> &mut Vec<DecodeAttempt> {
    &mut r.decode.as_mut().unwrap().cells[1].attempts
}

fn figure<'a>(c: &'a Comparison, cell: &str, name: &str) -> &'a FigureDiff {
    let d = c.cells.iter().find(|d| d.label == cell).unwrap_or_else(|| panic!("no cell {cell}"));
    d.figures.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("no figure {name}"))
}

/// `report` with every throughput scaled by `tps` and every TTFT sample by `ttft`.
fn slowed(report: &SessionReport, tps: f64, ttft: f64) -> SessionReport {
    let mut r = report.clone();
    for cell in &mut r.decode.as_mut().unwrap().cells {
        for a in &mut cell.attempts {
            a.aggregate_tps *= tps;
            a.per_request_tps *= tps;
            a.request_samples.iter_mut().for_each(|s| s.ttft_ms = s.ttft_ms.map(|t| t * ttft));
        }
    }
    r.burst.as_mut().unwrap().cells[0].attempts[0].output_tps *= tps;
    r.phases[0].output_tokens_per_second *= tps;
    r
}

#[test]
fn a_report_against_itself_is_no_change() {
    let r = full_report();
    let c = run(&r, &r);
    assert_eq!((c.verdict, c.regressions), (Verdict::NoChange, 0));
    let labels: Vec<&str> = c.cells.iter().map(|d| d.label.as_str()).collect();
    assert_eq!(
        labels,
        ["decode ctx=16k conc=4", "decode ctx=16k conc=8", "burst ctx=16k conc=4", "routing r1-hot90-prefix-cache"]
    );
    assert!(c.cells.iter().flat_map(|d| &d.figures).all(|f| f.change == Change::Same && f.delta_pct == Some(0.0)));
    assert!(c.only_in_base.is_empty() && c.only_in_new.is_empty());
    let text = render(&c, CompareFormat::Text);
    assert!(text.ends_with("no change: 4 cells, 23 figures the same\n"), "{text}");
}

#[test]
fn a_slower_run_regresses_its_headline_figures() {
    let base = full_report();
    let c = run(&base, &slowed(&base, 0.8, 1.5));
    assert_eq!(c.verdict, Verdict::Regression);
    let agg = figure(&c, "decode ctx=16k conc=8", "aggregate_tok_s");
    assert!((agg.delta_pct.unwrap() + 20.0).abs() < 1e-9);
    assert_eq!((agg.change, agg.regression, agg.headline), (Change::Worse, true, true));
    let per = figure(&c, "decode ctx=16k conc=8", "per_request_tok_s");
    assert_eq!((per.change, per.regression), (Change::Worse, false), "not a headline figure");
    let ttft = figure(&c, "decode ctx=16k conc=8", "p50_ttft_ms");
    assert_eq!((ttft.change, ttft.better), (Change::Worse, Better::Lower));
    assert_eq!(c.regressions, 4, "two decode cells, the burst, the phase's tok/s");
    let text = render(&c, CompareFormat::Text);
    assert!(text.contains("−20.0%  worse  REGRESSION"), "{text}");
    assert!(text.contains("+50.0%  worse"), "{text}");
    assert!(text.lines().last().unwrap().starts_with("4 regression(s) beyond 5%: decode ctx=16k conc=4"), "{text}");
}

#[test]
fn lower_latency_and_higher_throughput_read_better() {
    let base = full_report();
    let c = run(&base, &slowed(&base, 1.03, 0.5));
    assert_eq!(c.verdict, Verdict::NoRegression);
    assert_eq!(figure(&c, "decode ctx=16k conc=8", "p99_ttft_ms").change, Change::Better);
    assert_eq!(figure(&c, "decode ctx=16k conc=8", "aggregate_tok_s").change, Change::Better);
    assert!(render(&c, CompareFormat::Text).contains("+3.0%  better"));
    // Small losses within the threshold do not fail either.
    let c = run(&base, &slowed(&base, 0.97, 1.0));
    assert_eq!((c.verdict, c.regressions), (Verdict::NoRegression, 0));
    assert_eq!(figure(&c, "burst ctx=16k conc=4", "output_tok_s").change, Change::Worse);
}

#[test]
fn a_delta_within_the_spread_of_repeats_is_noise() {
    let mut base = full_report();
    let first = measured_decode(&mut base)[1].clone();
    measured_decode(&mut base)[0] = DecodeAttempt { aggregate_tps: first.aggregate_tps * 1.1, ..first.clone() };
    measured_decode(&mut base)[0].status = AttemptStatus::Measured;
    let mut new = base.clone();
    for a in measured_decode(&mut new) {
        a.aggregate_tps *= 0.93;
    }
    let c = run(&base, &new);
    let agg = figure(&c, "decode ctx=16k conc=8", "aggregate_tok_s");
    assert!((agg.noise_pct.unwrap() - 100.0 * 0.1 / 1.05).abs() < 1e-9, "{agg:?}");
    assert_eq!((agg.change, agg.regression), (Change::WithinNoise, false));
    assert_eq!(c.cells[1].base_attempts, 2);
    assert!(render(&c, CompareFormat::Text).contains("within noise (±9.5%)"));
    // One side without repeats: no noise band, the loss is a regression.
    measured_decode(&mut new).remove(0);
    let agg = figure(&run(&base, &new), "decode ctx=16k conc=8", "aggregate_tok_s").clone();
    assert_eq!((agg.noise_pct, agg.regression), (None, true));
}

#[test]
fn cells_on_one_side_are_listed() {
    let base = full_report();
    let mut new = base.clone();
    new.burst = None;
    let cell = &mut new.decode.as_mut().unwrap().cells[0];
    cell.status = CellOutcome::Skipped;
    cell.attempts.clear();
    new.phases[0].phase = "r2-hot90-prefix-cache".into();
    let c = run(&base, &new);
    let only: Vec<(&str, Option<&str>)> =
        c.only_in_base.iter().map(|o| (o.label.as_str(), o.other_status.as_deref())).collect();
    assert_eq!(
        only,
        [
            ("decode ctx=16k conc=4", Some("skipped")),
            ("burst ctx=16k conc=4", None),
            ("routing r1-hot90-prefix-cache", None)
        ]
    );
    assert_eq!(c.only_in_new.len(), 1);
    assert_eq!(c.verdict, Verdict::NoRegression, "one-sided cells are listed, not failed");
    let text = render(&c, CompareFormat::Text);
    assert!(text.contains("only in base: decode ctx=16k conc=4 (skipped in new)"), "{text}");
    assert!(text.contains("only in new: routing r2-hot90-prefix-cache"), "{text}");
}

#[test]
fn percentiles_and_json_names_are_stable() {
    let r = full_report();
    let c = compare(("a", &r), ("b", &r), &opts("90,99.9"));
    let v: serde_json::Value = serde_json::from_str(&render(&c, CompareFormat::Json)).unwrap();
    assert_eq!(v["schema"], COMPARE_SCHEMA);
    assert_eq!(v["verdict"], "no_change");
    assert_eq!(v["percentiles"], serde_json::json!([90.0, 99.9]));
    let names: Vec<&str> =
        v["cells"][1]["figures"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["aggregate_tok_s", "per_request_tok_s", "p90_ttft_ms", "p99.9_ttft_ms", "p90_tpot_ms", "p99.9_tpot_ms"]
    );
    let f = &v["cells"][1]["figures"][0];
    for key in ["unit", "better", "headline", "base", "new", "delta_pct", "noise_pct", "change", "regression"] {
        assert!(f.get(key).is_some(), "{key} in {f}");
    }
    assert_eq!((f["unit"].as_str(), f["better"].as_str()), (Some("tok/s"), Some("higher")));
    assert_eq!(v["cells"][3]["key"], serde_json::json!({"kind": "routing", "phase": "r1-hot90-prefix-cache"}));
    assert_eq!(v["cells"][0]["key"], serde_json::json!({"kind": "decode", "ctx": 16_384, "conc": 4}));
    // A routing phase stores p50/p95/p99 only: p99.9 is unavailable, never made up.
    assert!(v["cells"][3]["figures"][3]["base"].is_null());
}

#[test]
fn deltas_read_at_a_glance() {
    assert_eq!(signed_pct(4.06), "+4.1%");
    assert_eq!(signed_pct(-12.0), "\u{2212}12.0%");
    assert_eq!(signed_pct(0.01), "0.0%");
    assert_eq!(signed_pct(-0.04), "0.0%");
    assert_eq!(delta_pct(0.0, 0.0), Some(0.0));
    assert_eq!(delta_pct(0.0, 5.0), None);
    assert_eq!(delta_pct(200.0, 150.0), Some(-25.0));
    assert_eq!(spread_pct(&[1.0]), None);
    assert_eq!(spread_pct(&[90.0, 110.0]), Some(20.0));
    let md = render(&run(&full_report(), &full_report()), CompareFormat::Markdown);
    assert!(md.contains("| cell | figure | base | new | delta | change |"), "{md}");
    assert!(md.contains("| decode ctx=16k conc=8 | * aggregate tok/s | 564.8 | 564.8 | 0.0% | same |"), "{md}");
}

#[test]
fn open_loop_cells_match_only_their_own_rate() {
    use crate::load::rate::Rate;
    // The example's two decode cells at ctx 16k, conc 4 and 8, made open-loop cells at conc 8.
    let rated = |rates: [Rate; 2]| {
        let mut r = full_report();
        for (cell, rate) in r.decode.as_mut().unwrap().cells.iter_mut().zip(rates) {
            (cell.conc, cell.rate) = (8, Some(rate));
        }
        r
    };
    let base = rated([Rate::PerSecond(4.0), Rate::PerSecond(8.0)]);
    let c = run(&base, &base);
    let labels: Vec<&str> = c.cells.iter().map(|d| d.label.as_str()).collect();
    assert_eq!(labels[..2], ["decode ctx=16k conc=8 rate=4", "decode ctx=16k conc=8 rate=8"]);
    assert_eq!(c.verdict, Verdict::NoChange, "each cell against itself");
    // The same (ctx, conc) at another rate is another cell, not a regression.
    let other = rated([Rate::PerSecond(2.0), Rate::PerSecond(8.0)]);
    let c = run(&base, &other);
    assert_eq!(c.only_in_base.len(), 1, "rate 4 is not in the new run");
    assert_eq!(c.only_in_new.len(), 1, "rate 2 is not in the base");
    assert_eq!(c.cells.iter().filter(|d| d.label.starts_with("decode")).count(), 1, "rate 8 is compared");
}

#[test]
fn a_decode_cells_tpot_is_the_windows_as_its_tables_show_it_not_the_whole_streams() {
    let mut report = full_report();
    let decode = report.decode.as_mut().expect("decode");
    let cell = decode.cells.iter_mut().find(|c| c.status == CellOutcome::Measured).expect("a measured cell");
    let (ctx, conc) = (cell.ctx, cell.conc);
    let last = cell.attempts.iter_mut().rev().find(|a| a.status == AttemptStatus::Measured).expect("measured");
    assert!(!last.request_samples.is_empty() && last.request_samples.iter().any(|r| r.itl_ms.is_some()));
    let window = last.itl_ms.as_mut().expect("the window's per-stream summary");
    window.p50 = 77.5;
    let pcts = crate::stats::PercentileList::new(&[50.0, 75.0]).expect("percentiles");
    let figs = figures::cells(&report, &pcts);
    let tpot = |name: &str| {
        let mine = figs.iter().find(|c| {
            c.key.kind == crate::report::kind::ExperimentKind::Decode
                && c.key.ctx == Some(ctx)
                && c.key.conc == Some(conc)
        });
        mine.expect("the cell").figures.iter().find(|f| f.spec.name == name).and_then(|f| f.value)
    };
    assert_eq!(tpot("p50_tpot_ms"), Some(77.5), "the window's p50, which the tables print");
    assert!(tpot("p75_tpot_ms").is_some(), "a percentile the summary lacks still comes from the samples");
}
