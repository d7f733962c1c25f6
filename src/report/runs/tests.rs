//! Tests of the `runs` block: which attempts are the runs, their statistics, the mean the
//! tables show, and the report pass.

use super::*;
use crate::report::phase::RoutingPhase;
use crate::report::tests_schema::{full_attempt, full_report};
use AttemptStatus::{Errored, Measured, Paused};

fn decode(n: u32, status: AttemptStatus, tps: f64) -> crate::report::json::DecodeAttempt {
    let mut a = full_attempt(n, status);
    a.aggregate_tps = tps;
    if let Some(t) = a.ttft_ms.as_mut() {
        t.p50 = tps / 10.0;
    }
    a
}

#[test]
fn the_block_is_over_the_measured_runs_of_the_latest_round() {
    // With 2 per round: round 1 is attempts 1 and 3 (2 was paused: not a run); round 2 (a
    // re-run) is 4 and 6 (5 paused).
    let attempts = vec![
        decode(1, Measured, 10.0),
        decode(2, Paused, 99.0),
        decode(3, Measured, 12.0),
        decode(4, Measured, 100.0),
        decode(5, Paused, 0.0),
        decode(6, Measured, 110.0),
    ];
    let b = block_of(&attempts[..3], 2).unwrap();
    assert_eq!((b.planned, b.n, b.attempts.clone()), (2, 2, vec![1, 3]));
    assert_eq!(b.figure("aggregate_tok_s").map(|s| s.mean), Some(11.0));
    // With 3 per round the first round is 1, 3, 4 and the second holds 6 so far.
    let b = block_of(&attempts, 3).unwrap();
    assert_eq!((b.n, b.attempts.clone()), (1, vec![6]));
    // An errored run is a run of the round without figures.
    let errored = [decode(1, Measured, 50.0), decode(2, Errored, 0.0)];
    let b = block_of(&errored, 3).unwrap();
    assert_eq!((b.n, b.attempts.clone(), b.figure("aggregate_tok_s").map(|s| s.mean)), (1, vec![1, 2], Some(50.0)));
    let b = block_of(&attempts, 2).unwrap();
    assert_eq!((b.n, b.attempts.clone(), b.headline.as_str()), (2, vec![4, 6], HEADLINE_MEAN));
    let tps = b.figure("aggregate_tok_s").unwrap();
    assert_eq!((tps.n, tps.mean, tps.sd.map(|s| (s * 1e6).round() / 1e6)), (2, 105.0, Some(7.071068)));
    assert!(tps.ci_low.unwrap() < 105.0 && tps.ci_high.unwrap() > 105.0);
    assert_eq!(b.figure("p50_ttft_ms").map(|s| s.mean), Some(10.5));
    assert!(block_of(&[decode(1, Paused, 1.0)], 3).is_none(), "no finished run yet");
}

#[test]
fn the_tables_show_the_last_measured_run_with_the_means_written_in() {
    let attempts = vec![decode(1, Measured, 100.0), decode(2, Measured, 110.0), decode(3, Errored, 0.0)];
    let b = block_of(&attempts, 3).unwrap();
    let mean = mean_of(&attempts, &b).unwrap();
    assert_eq!((mean.attempt, mean.aggregate_tps), (2, 105.0));
    assert_eq!(mean.ttft_ms.map(|s| s.p50), Some(10.5));
    assert_eq!(mean.error_count, attempts[1].error_count, "counts are the run's own");
    assert_eq!(shown(&attempts, Some(&b)).map(|a| a.aggregate_tps), Some(105.0));
    assert_eq!(super::shown(&attempts, None).map(|a| a.attempt), Some(3), "no block: the last attempt");
}

fn shown(
    attempts: &[crate::report::json::DecodeAttempt],
    b: Option<&RunsBlock>,
) -> Option<crate::report::json::DecodeAttempt> {
    super::shown(attempts, b).map(std::borrow::Cow::into_owned)
}

#[test]
fn annotate_fills_every_kind_and_leaves_one_run_alone() {
    let mut report = full_report();
    let before = report.clone();
    annotate(&mut report, 1);
    assert_eq!(report, before, "N = 1 changes nothing");
    annotate(&mut report, 2);
    assert!(any(&report));
    let cell = &report.decode.as_ref().unwrap().cells[1];
    let want = block_of(&cell.attempts, 2);
    assert!(want.is_some() && cell.runs == want);
    // A routing phase's runs come from its history, numbered by their place in it.
    let p = &report.phases[0];
    let own: Vec<RoutingPhase> = report.phase_history.iter().filter(|h| h.phase == p.phase).cloned().collect();
    assert_eq!(p.runs, block_of(&own, 2));
    let serialized = serde_json::to_value(&report).unwrap();
    crate::report::tests_schema::assert_valid(&serialized);
    assert!(
        serialized["decode"]["cells"][1]["runs"]["figures"]["aggregate_tok_s"]["ci_low"].is_number()
            || serialized["decode"]["cells"][1]["runs"]["n"] == 1
    );
}

#[test]
fn an_extension_repeats_its_own_figures_too() {
    use crate::report::compare::Better;
    use crate::report::extension::{ExtensionAttempt, ExtensionFigure};
    let attempt = |n: u32, v: f64| ExtensionAttempt {
        attempt: n,
        status: Measured,
        started_s: 0.0,
        duration_s: 1.0,
        requests: 4,
        errors: Default::default(),
        error_examples: Default::default(),
        output_tokens: 10,
        output_tps: v,
        ttft_p50_ms: Some(v),
        figures: vec![ExtensionFigure {
            name: "turn_hit_ratio".into(),
            unit: "fraction".into(),
            better: Better::Higher,
            value: Some(v / 100.0),
        }],
        tables: Default::default(),
        labels: Default::default(),
    };
    let runs = [attempt(1, 40.0), attempt(2, 60.0)];
    let b = block_of(&runs, 2).unwrap();
    assert_eq!(b.figure("turn_hit_ratio").map(|s| s.mean), Some(0.5));
    let mean = mean_of(&runs, &b).unwrap();
    assert_eq!((mean.output_tps, mean.figures[0].value), (50.0, Some(0.5)));
}

#[test]
fn the_schema_takes_a_runs_block_and_refuses_a_broken_one() {
    let mut report = full_report();
    annotate(&mut report, 2);
    let value = serde_json::to_value(&report).unwrap();
    crate::report::tests_schema::assert_valid(&value);
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../assets/session-report.schema.json")).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let broken = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut v = value.clone();
        edit(&mut v["decode"]["cells"][1]["runs"]);
        validator.is_valid(&v)
    };
    assert!(value["decode"]["cells"][1]["runs"].is_object(), "the example cell has runs");
    assert!(!broken(&|r| r["headline"] = serde_json::json!("last")));
    assert!(!broken(&|r| r["planned"] = serde_json::json!(0)));
    assert!(!broken(&|r| r["figures"]["aggregate_tok_s"]["level"] = serde_json::json!(95)));
    assert!(!broken(&|r| r["figures"]["aggregate_tok_s"]["extra"] = serde_json::json!(1)));
    assert!(broken(&|_| {}));
}
