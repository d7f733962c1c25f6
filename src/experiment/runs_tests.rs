//! Tests of a cell's repeated runs on the session side.

use super::*;
use crate::cell::spec::CellSpec;
use crate::report::kind::ExperimentKind;
use AttemptStatus::{Errored, Measured, Paused, SkippedByOperator, Stopped};

fn decode(n: u32, status: AttemptStatus, tps: f64) -> Arc<Attempt> {
    let mut a = crate::report::tests_schema::full_attempt(n, status);
    a.aggregate_tps = tps;
    Arc::new(Attempt::Decode(Box::new(a)))
}

fn cell(runs: u32, attempts: Vec<Arc<Attempt>>) -> CellEntry {
    let spec = CellSpec::grid(ExperimentKind::Decode, 0, 4);
    CellEntry { spec, label: "ctx=0 conc=4".into(), status: CellStatus::Pending, attempts, runs }
}

#[test]
fn a_cell_runs_until_its_round_is_whole() {
    let mut c = cell(3, Vec::new());
    assert_eq!(c.run_progress(), Some(RunProgress { done: 0, planned: 3 }));
    assert_eq!(c.run_progress().unwrap().text(), "run 1/3");
    assert!(c.wants_runs());
    c.attempts.push(decode(1, Measured, 100.0));
    c.attempts.push(decode(2, Paused, 0.0));
    assert_eq!(c.run_progress().unwrap().text(), "run 2/3", "a paused attempt is not a run");
    c.attempts.push(decode(3, Errored, 0.0));
    c.attempts.push(decode(4, Measured, 120.0));
    assert!(!c.wants_runs());
    assert_eq!(c.run_progress().unwrap().left(), 0);
    assert_eq!(c.round_status(), CellStatus::Measured);
    assert_eq!(cell(1, vec![decode(1, Measured, 1.0)]).run_progress(), None, "no repetitions");
    assert!(!cell(1, Vec::new()).wants_runs(), "one run: the runner's own loop decides");
}

#[test]
fn the_headline_is_the_mean_of_the_rounds_measured_runs() {
    let c = cell(3, vec![decode(1, Measured, 100.0), decode(2, Errored, 0.0), decode(3, Measured, 110.0)]);
    assert_eq!(c.measured_runs().len(), 2);
    let (mean, stats) = c.mean().unwrap();
    assert_eq!(mean.as_decode().map(|d| (d.attempt, d.aggregate_tps)), Some((3, 105.0)));
    assert_eq!(stats["aggregate_tok_s"].n, 2);
    assert_eq!(c.headline().map(|h| h.tps), Some(105.0));
    // One run per cell: the latest attempt, whatever it is.
    let one = cell(1, vec![decode(1, Measured, 100.0), decode(2, Paused, 7.0)]);
    assert!(one.mean().is_none());
    assert_eq!(one.headline().map(|h| h.tps), Some(7.0));
    // A round without a measured run yet shows the latest attempt.
    let fresh = cell(2, vec![decode(1, Measured, 100.0), decode(2, Measured, 100.0), decode(3, Stopped, 9.0)]);
    assert_eq!(fresh.headline().map(|h| h.tps), Some(9.0));
}

#[test]
fn a_round_of_failures_is_errored_and_a_skip_without_runs_is_skipped() {
    let c = cell(2, vec![decode(1, Errored, 0.0), decode(2, Errored, 0.0)]);
    assert_eq!(c.round_status(), CellStatus::Errored);
    let c = cell(2, vec![decode(1, SkippedByOperator, 0.0)]);
    assert_eq!(c.round_status(), CellStatus::SkippedByOperator);
}

#[test]
fn skipping_a_waiting_cell_ends_its_round_so_a_rerun_opens_a_new_one() {
    let mut c = cell(3, vec![decode(1, Measured, 100.0), decode(2, Paused, 0.0)]);
    assert!(c.end_round_by_skip(), "a measured run: the cell keeps its figures");
    assert_eq!(c.attempts[1].status(), SkippedByOperator);
    assert!(c.round().complete);
    c.attempts.push(decode(3, Measured, 50.0));
    assert_eq!(c.run_progress().unwrap().done, 1, "the re-run's round");
    let mut one = cell(1, vec![decode(1, Paused, 0.0)]);
    assert!(!one.end_round_by_skip());
    assert_eq!(one.attempts[0].status(), Paused, "one run per cell: the report is as before");
}

#[test]
fn every_kind_has_a_mean() {
    use crate::report::phase::RoutingPhase;
    let phase = |tps: f64| {
        let p = RoutingPhase { output_tokens_per_second: tps, status: Measured, ..RoutingPhase::default() };
        Attempt::Routing(Box::new(p))
    };
    let (a, b) = (phase(10.0), phase(30.0));
    let (mean, stats) = Attempt::mean_of(&[&a, &b]).unwrap();
    assert_eq!(mean.headline().tps, 20.0);
    assert_eq!(stats["output_tok_s"].sd.map(|s| (s * 1e6).round() / 1e6), Some(14.142136));
    assert!(Attempt::mean_of(&[]).is_none());
}
