//! Tests of `report merge`: each merge rule, the refusals, missing and unfinished shards.

use super::*;
use crate::load::sample::{ErrorKind, RecordedOutcome};
use crate::report::json::{DecodeAttempt, DecodeCell, DecodeSection, RequestRecord};
use crate::report::shard::ShardSection;
use crate::report::shard_dists::{HeldValues, ShardDists};
use crate::report::status::{AttemptStatus, CellOutcome};
use crate::report::tests_schema::{assert_valid, full_attempt, minimal_report};
use crate::stats::{GapDist, Samples, SavedGapDist};
use std::collections::BTreeMap;

/// Whole held values.
pub(super) fn held(values: &[f64]) -> HeldValues {
    HeldValues { count: values.len() as u64, values: values.to_vec() }
}

/// Distributions whose per-request values are `ttft` (every figure alike) and per-token gaps `gaps`.
pub(super) fn dists(ttft: &[f64], gaps: &[f64]) -> ShardDists {
    let mut g = GapDist::new();
    gaps.iter().for_each(|v| g.push(*v));
    let saved = SavedGapDist::of(&g);
    ShardDists {
        ttft_ms: held(ttft),
        itl_ms: held(ttft),
        tpot_ms: held(ttft),
        latency_ms: held(ttft),
        itl_token_ms: saved.clone(),
        itl_chunk_ms: saved,
    }
}

/// One record of `worker`, completed.
pub(super) fn record(worker: u32) -> RequestRecord {
    let mut r = full_attempt(1, AttemptStatus::Measured).request_samples[0].clone();
    r.worker = worker;
    r
}

/// A measured attempt of `requested` streams with `tokens` window tokens over 30 s and the
/// distributions `d`.
pub(super) fn attempt(requested: u32, tokens: u64, d: ShardDists) -> DecodeAttempt {
    let mut a = full_attempt(1, AttemptStatus::Measured);
    a.requested = requested;
    a.window_tokens = tokens;
    a.aggregate_tps = tokens as f64 / 30.0;
    a.decoding_avg = Some(f64::from(requested));
    a.request_samples = (0..requested).map(record).collect();
    a.request_outcomes = BTreeMap::from([(RecordedOutcome::Completed, u64::from(requested))]);
    a.errors = BTreeMap::from([(ErrorKind::Stalled, 1)]);
    a.error_count = 1;
    a.reconnects = 2;
    a.shard_dists = Some(d);
    a
}

/// Shard `index` of `count` of session `s1`, one decode cell (ctx 0, conc 8) holding `a`.
pub(super) fn shard(index: u32, count: u32, a: DecodeAttempt) -> ShardInput {
    let mut r = minimal_report();
    r.complete = true;
    r.plan.kinds = vec!["decode".into()];
    r.plan.ctx = vec![0];
    r.plan.conc = vec![8];
    r.plan.settings = BTreeMap::from([
        ("ctx".to_string(), "0".to_string()),
        ("shard".to_string(), format!("{index}/{count}")),
        ("source-addrs".to_string(), format!("10.0.0.{index}")),
    ]);
    r.shard = Some(ShardSection {
        index,
        count,
        session_id: "s1".into(),
        start_at_unix_s: None,
        clock: None,
        timeline: Vec::new(),
    });
    let cell = DecodeCell {
        ctx: 0,
        ctx_label: "0".into(),
        conc: 8,
        status: CellOutcome::Measured,
        timeout_reason: None,
        skip: None,
        attempts: vec![a],
        rate: None,
        baseline: Vec::new(),
        runs: None,
    };
    r.decode = Some(DecodeSection {
        ctx_labels: vec!["0".into()],
        conc: vec![8],
        cells: vec![cell],
        aggregate_sources: Vec::new(),
        knees: Vec::new(),
    });
    ShardInput { file: format!("shard-{index}.json"), report: r }
}

fn merged_attempt(m: &Merged) -> &DecodeAttempt {
    &m.report.decode.as_ref().unwrap().cells[0].attempts[0]
}

fn two() -> Vec<ShardInput> {
    vec![
        shard(1, 2, attempt(4, 1000, dists(&[30.0, 40.0, 50.0], &[10.0, 12.0]))),
        shard(0, 2, attempt(4, 2000, dists(&[10.0, 20.0], &[11.0, 13.0, 15.0]))),
    ]
}

#[test]
fn counts_add_and_rates_are_the_shards_rates_added() {
    let m = merge(two()).unwrap();
    let a = merged_attempt(&m);
    assert_eq!((a.window_tokens, a.requested, a.error_count, a.reconnects), (3000, 8, 2, 4));
    assert_eq!(a.errors.get(&ErrorKind::Stalled), Some(&2));
    assert_eq!(a.request_outcomes.get(&RecordedOutcome::Completed), Some(&8));
    assert_eq!(a.aggregate_tps, 100.0, "1000/30 + 2000/30, without the float sum's last digit");
    assert_eq!(a.decoding_avg, Some(8.0));
    assert!((a.per_request_tps - 12.5).abs() < 1e-9, "100 tok/s over 8 streams decoding");
    let g = a.goodput.unwrap();
    assert_eq!((g.good, g.judged), (2, 6));
    let p = a.prometheus.as_ref().unwrap();
    assert!((p.client_over_server.unwrap() - 100.0 / 566.5).abs() < 1e-12, "recomputed with the merged rate");
    assert!(p.counts_disagree, "3000 client tokens against the server's 17000");
    let s = a.saturation.as_ref().expect("the saturation test, from merged figures");
    let shard_0 = two()[0].report.decode.clone().unwrap();
    let base = shard_0.cells[0].attempts[0].saturation.clone().unwrap();
    assert_eq!((&s.waiting, &s.tps, &s.tps_noise), (&base.waiting, &base.tps, &base.tps_noise), "the server's series");
    assert!(a.shard_dists.is_none());
}

#[test]
fn records_concatenate_in_shard_order_with_their_own_stream_slots() {
    let m = merge(two()).unwrap();
    let workers: Vec<u32> = merged_attempt(&m).request_samples.iter().map(|r| r.worker).collect();
    assert_eq!(workers, (0..8).collect::<Vec<_>>(), "shard 0's slots 0..4, then shard 1's as 4..8");
}

#[test]
fn percentiles_come_from_every_shards_values_together() {
    let m = merge(two()).unwrap();
    let a = merged_attempt(&m);
    let mut all: Samples = [10.0, 20.0, 30.0, 40.0, 50.0].into_iter().collect();
    let want = all.summary().unwrap();
    let ttft = a.ttft_ms.unwrap();
    assert_eq!((ttft.count, ttft.p50, ttft.p99, ttft.min, ttft.max), (5, want.p50, want.p99, 10.0, 50.0));
    assert_eq!(a.user_tps, Some(1e3 / 30.0), "1 / the merged per-stream ITL median");
    let mut gaps: Samples = [10.0, 12.0, 11.0, 13.0, 15.0].into_iter().collect();
    let g = gaps.summary().unwrap();
    assert_eq!(a.itl_token_ms.map(|s| (s.count, s.p50, s.p90)), Some((5, g.p50, g.p90)));
}

#[test]
fn figures_that_cannot_be_recomputed_are_left_out_with_a_note() {
    let mut inputs = two();
    let d = inputs[0].report.decode.as_mut().unwrap().cells[0].attempts[0].shard_dists.as_mut().unwrap();
    d.ttft_ms = HeldValues { count: 10, values: vec![1.0] };
    let m = merge(inputs).unwrap();
    assert_eq!(merged_attempt(&m).ttft_ms, None);
    assert!(merged_attempt(&m).tpot_ms.is_some());
    assert!(m.notes.iter().any(|n| n.contains("TTFT left out")), "{:?}", m.notes);
    let mut inputs = two();
    inputs[1].report.decode.as_mut().unwrap().cells[0].attempts[0].shard_dists = None;
    let m = merge(inputs).unwrap();
    assert_eq!((merged_attempt(&m).ttft_ms, merged_attempt(&m).itl_token_ms), (None, None));
    assert!(m.notes.iter().any(|n| n.contains("shard 0 wrote no distributions")), "{:?}", m.notes);
}

#[test]
fn the_merged_report_names_its_shards_and_has_no_shard_section() {
    let m = merge(two()).unwrap();
    assert!(m.report.shard.is_none());
    let sec = m.report.merge.as_ref().unwrap();
    assert_eq!((sec.session_id.as_str(), sec.shard_count), ("s1", 2));
    let files: Vec<_> = sec.shards.iter().map(|s| (s.index, s.status, s.file.clone())).collect();
    assert_eq!(files[0], (0, MergedShardStatus::Merged, Some("shard-0.json".into())));
    assert_eq!(files[1], (1, MergedShardStatus::Merged, Some("shard-1.json".into())));
    assert!(m.report.complete);
    assert_valid(&serde_json::to_value(&m.report).unwrap());
    assert_valid(&serde_json::to_value(&two()[0].report).unwrap());
}

#[test]
fn a_missing_or_unfinished_shard_is_recorded_and_the_merge_goes_on() {
    let mut late = shard(2, 3, attempt(2, 500, dists(&[5.0], &[1.0])));
    late.report.complete = false;
    let m = merge(vec![shard(0, 3, attempt(3, 900, dists(&[1.0], &[1.0]))), late]).unwrap();
    let st: Vec<_> = m.report.merge.as_ref().unwrap().shards.iter().map(|s| s.status).collect();
    assert_eq!(st, [MergedShardStatus::Merged, MergedShardStatus::Missing, MergedShardStatus::Incomplete]);
    assert!(!m.report.complete);
    assert_eq!(merged_attempt(&m).window_tokens, 1400);
    assert!(m.notes.iter().any(|n| n.starts_with("shard 1/3 is missing")), "{:?}", m.notes);
    assert!(m.notes.iter().any(|n| n.starts_with("shard 2/3 (shard-2.json) did not finish")), "{:?}", m.notes);
}

#[test]
fn without_shard_0_the_server_figures_are_named_as_another_shards() {
    let m = merge(vec![shard(1, 2, attempt(4, 1000, dists(&[1.0], &[1.0])))]).unwrap();
    assert!(m.notes.iter().any(|n| n.contains("are shard 1's")), "{:?}", m.notes);
}

#[test]
fn statuses_that_differ_merge_as_the_least_finished() {
    let mut inputs = two();
    let cell = &mut inputs[0].report.decode.as_mut().unwrap().cells[0];
    cell.status = CellOutcome::Errored;
    cell.attempts[0].status = AttemptStatus::Errored;
    let m = merge(inputs).unwrap();
    let cell = &m.report.decode.as_ref().unwrap().cells[0];
    assert_eq!((cell.status, cell.attempts[0].status), (CellOutcome::Errored, AttemptStatus::Errored));
    assert!(m.notes.iter().any(|n| n.contains("statuses differ")));
}

#[test]
fn an_attempt_a_killed_shard_never_made_is_merged_over_the_others_and_marked() {
    let mut inputs = two();
    // Shard 1 was killed before the cell: its last report has it pending, with no attempt.
    let cell = &mut inputs[0].report.decode.as_mut().unwrap().cells[0];
    (cell.status, cell.attempts) = (CellOutcome::Pending, Vec::new());
    inputs[0].report.complete = false;
    let m = merge(inputs).unwrap();
    let cell = &m.report.decode.as_ref().unwrap().cells[0];
    assert_eq!(cell.status, CellOutcome::Measured, "shard 0 ran it");
    let a = &cell.attempts[0];
    assert_eq!((a.requested, a.window_tokens), (4, 2000), "shard 0's alone");
    let note = m.notes.iter().find(|n| n.contains("only shard 0 made it")).expect("a note");
    assert!(note.contains("4 of the cell's 8 streams"), "{note}");
    assert!(m.report.warnings.contains(&format!("merge: {note}")), "the file keeps it");
    assert!(!m.report.complete);
}

fn refused(inputs: Vec<ShardInput>) -> String {
    merge(inputs).expect_err("refused")
}

#[test]
fn shards_of_other_sessions_counts_or_plans_are_refused() {
    let mut other = two();
    other[1].report.shard.as_mut().unwrap().session_id = "s2".into();
    assert!(refused(other).starts_with("shard-0.json: shard of session `s2`"));
    let mut count = two();
    count[1].report.shard.as_mut().unwrap().count = 3;
    assert!(refused(count).starts_with("shard-0.json: shard 0/3"));
    let twice = vec![two().remove(0), two().remove(0)];
    assert!(refused(twice).contains("shard 1 is given twice"));
    let mut setting = two();
    setting[1].report.plan.settings.insert("ctx".into(), "512".into());
    let msg = refused(setting);
    assert!(msg.contains("`ctx=512`") && msg.contains("`ctx=0`"), "{msg}");
    let mut model = two();
    model[1].report.model = "other".into();
    assert!(refused(model).contains("model is other"));
    let mut conc = two();
    conc[1].report.plan.conc = vec![4];
    assert!(refused(conc).contains("the matrix"));
    for bad in [0, check::MAX_SHARDS + 1, u32::MAX] {
        let mut huge = two();
        huge.iter_mut().for_each(|s| s.report.shard.as_mut().unwrap().count = bad);
        assert!(refused(huge).contains(&format!("a shard count of {bad} is not from 1 to")));
    }
}

#[test]
fn reports_that_are_no_shards_or_hold_other_sections_are_refused() {
    let mut plain = two();
    plain[0].report.shard = None;
    assert!(refused(plain).contains("not a shard report"));
    let merged = merge(two()).unwrap().report;
    let msg = refused(vec![ShardInput { file: "m.json".into(), report: merged }]);
    assert!(msg.contains("a merged report"), "{msg}");
    let mut routing = two();
    routing[0].report.phases = vec![crate::report::tests_schema::full_report().phases[0].clone()];
    assert!(merge(routing).is_ok(), "routing phases merge (tests_routing.rs)");
    assert!(merge(Vec::new()).is_err());
}

#[test]
fn row_knees_are_found_again_on_the_merged_cells() {
    // ctx 0 saturates at conc 8 (src/experiment/decode/knee_tests.rs), each shard running half.
    let row = [(1, 100.0, 10.0, 0.0), (2, 190.0, 11.0, 0.0), (4, 370.0, 12.0, 0.0), (8, 372.0, 60.0, 4.0)];
    let make = |index: u32| {
        let mut input = shard(index, 2, attempt(1, 1, dists(&[1.0], &[1.0])));
        let d = input.report.decode.as_mut().unwrap();
        let template = d.cells[0].clone();
        d.conc = row.iter().map(|r| r.0).collect();
        d.cells = row
            .iter()
            .map(|&(conc, tps, ttft, waiting)| {
                let mut a = attempt(conc / 2 + (conc % 2) * (1 - index), 100, dists(&[ttft, ttft], &[1.0]));
                (a.aggregate_tps, a.waiting_avg, a.saturation) = (tps / 2.0, Some(waiting), None);
                DecodeCell { conc, attempts: vec![a], ..template.clone() }
            })
            .collect();
        input.report.plan.conc = d.conc.clone();
        input
    };
    let m = merge(vec![make(0), make(1)]).unwrap();
    let d = m.report.decode.as_ref().unwrap();
    assert!(d.cells.iter().all(|c| c.attempts[0].ttft_ms.unwrap().p90 == c.attempts[0].ttft_ms.unwrap().p50));
    assert_eq!(d.knees.len(), 1, "{:?}", d.knees);
    assert_eq!((d.knees[0].ctx, d.knees[0].at_conc), (0, Some(8)));
    assert_eq!(d.cells[0].attempts[0].requested, 1, "conc 1: one stream on shard 0, none on shard 1");
}

/// A cell of conc 1 over 3 shards: only shard 0 has a stream, shards 1 and 2 skip it by plan
/// (their slice is empty). The merged cell is shard 0's measurement, not a skip.
#[test]
fn a_cell_below_the_shard_count_is_the_shards_that_had_streams() {
    let mut inputs: Vec<ShardInput> = (0..3).map(|i| shard(i, 3, attempt(1, 900, dists(&[10.0], &[11.0])))).collect();
    for (i, input) in inputs.iter_mut().enumerate() {
        let d = input.report.decode.as_mut().unwrap();
        (d.conc, d.cells[0].conc) = (vec![1], 1);
        input.report.plan.conc = vec![1];
        if i > 0 {
            let cell = &mut d.cells[0];
            (cell.status, cell.attempts) = (CellOutcome::Skipped, Vec::new());
        }
    }
    let m = merge(inputs).unwrap();
    let cell = &m.report.decode.as_ref().unwrap().cells[0];
    assert_eq!(cell.status, CellOutcome::Measured, "{:?}", m.notes);
    assert_eq!(cell.attempts.len(), 1);
    assert_eq!(cell.attempts[0].window_tokens, 900, "shard 0's figures");
    assert!(!m.notes.iter().any(|n| n.contains("statuses differ") || n.contains("only shard")), "{:?}", m.notes);
}
