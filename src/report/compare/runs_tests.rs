//! `compare` of repeated cells (`run --num-runs`): a change inside the interval of the
//! difference of the run means is `within noise` and no regression; outside it, better or worse.

use super::render::{CompareFormat, RUNS_NOISE_LINE, render};
use super::*;
use crate::report::status::AttemptStatus;
use crate::report::tests_example::{full_attempt, full_report};
use crate::stats::percentile_list;

/// The full example with its measured decode cell run once per `tps` value (a `runs` block
/// when more than one).
fn with_runs(tps: &[f64]) -> SessionReport {
    let mut r = full_report();
    let cell = &mut r.decode.as_mut().unwrap().cells[1];
    cell.attempts = tps
        .iter()
        .enumerate()
        .map(|(i, t)| crate::report::decode::DecodeAttempt {
            aggregate_tps: *t,
            ..full_attempt(i as u32 + 1, AttemptStatus::Measured)
        })
        .collect();
    crate::report::runs::annotate(&mut r, tps.len() as u32);
    r
}

fn aggregate(c: &Comparison) -> &FigureDiff {
    let cell = c.cells.iter().find(|d| d.label == "decode ctx=16k conc=8").unwrap();
    cell.figures.iter().find(|f| f.name == "aggregate_tok_s").unwrap()
}

fn run(base: &SessionReport, new: &SessionReport, threshold_pct: f64) -> Comparison {
    let opts = Options { threshold_pct, percentiles: percentile_list("50,99").unwrap() };
    compare(("base.json", base), ("new.json", new), &opts)
}

#[test]
fn a_change_inside_the_interval_is_within_noise_and_no_regression() {
    // Base 500/550/600 (mean 550, sd 50), new 480/530/580 (mean 530): −3.6%, inside ±113.
    let (base, new) = (with_runs(&[500.0, 550.0, 600.0]), with_runs(&[480.0, 530.0, 580.0]));
    let c = run(&base, &new, 1.0);
    let f = aggregate(&c);
    assert_eq!((f.base, f.new), (Some(550.0), Some(530.0)), "the means");
    assert_eq!((f.change, f.regression), (Change::WithinNoise, false), "{f:?}");
    // Welch: se = sqrt(2 × 2500 / 3) = 40.82, df 4, t 2.776: ±113.3 tok/s, 20.6% of 550.
    assert!((f.noise_pct.unwrap() - 113.33 / 550.0 * 100.0).abs() < 0.05, "{f:?}");
    assert_eq!(f.noise_interval.as_deref(), Some("95% CI of the difference of the means (Welch t, 3 and 3 runs)"));
    assert_eq!(c.verdict, Verdict::NoRegression, "a 1% threshold does not fail on noise");
    let text = render(&c, CompareFormat::Text);
    assert!(text.contains("within noise (±20.6%, 95% CI)") && text.contains(RUNS_NOISE_LINE), "{text}");
    let json: serde_json::Value = serde_json::from_str(&render(&c, CompareFormat::Json)).unwrap();
    let figures = &json["cells"][1]["figures"][0];
    assert_eq!((figures["change"].as_str(), figures["name"].as_str()), (Some("within_noise"), Some("aggregate_tok_s")));
}

#[test]
fn a_change_beyond_the_interval_is_worse_and_can_regress() {
    // Tight runs (sd 1): −20% is far outside the interval.
    let (base, new) = (with_runs(&[549.0, 550.0, 551.0]), with_runs(&[439.0, 440.0, 441.0]));
    let c = run(&base, &new, 5.0);
    let f = aggregate(&c);
    assert_eq!((f.change, f.regression), (Change::Worse, true), "{f:?}");
    assert_eq!(c.verdict, Verdict::Regression);
    let better = run(&new, &base, 5.0);
    assert_eq!(aggregate(&better).change, Change::Better);
}

#[test]
fn a_single_run_side_is_judged_against_the_repeated_sides_spread() {
    let (base, new) = (with_runs(&[500.0, 550.0, 600.0]), with_runs(&[520.0]));
    assert!(new.decode.as_ref().unwrap().cells[1].runs.is_none(), "one run: no block");
    let c = run(&base, &new, 1.0);
    let f = aggregate(&c);
    assert_eq!((f.base, f.new, f.change), (Some(550.0), Some(520.0), Change::WithinNoise), "{f:?}");
    assert!(f.noise_interval.as_deref().unwrap().contains("3 and 1 runs; the single run given"), "{f:?}");
    // Far outside even that wider interval: worse.
    let c = run(&base, &with_runs(&[100.0]), 1.0);
    assert_eq!(aggregate(&c).change, Change::Worse);
}

#[test]
fn without_repetitions_nothing_about_intervals_is_said() {
    let r = full_report();
    let c = run(&r, &r, 5.0);
    assert!(c.cells.iter().flat_map(|d| &d.figures).all(|f| f.noise_interval.is_none()));
    let text = render(&c, CompareFormat::Text);
    assert!(!text.contains(RUNS_NOISE_LINE) && !text.contains("95% CI"), "{text}");
    assert!(!render(&c, CompareFormat::Json).contains("noise_interval"));
}
