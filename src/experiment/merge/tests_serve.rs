//! Tests of merging serve cells: counts and throughputs add, vLLM's latency and ITL figures
//! come from every shard's requests and gaps together.

use super::serve::figures_of;
use super::*;
use crate::experiment::serve::metrics::{ServeGaps, serve_metrics};
use crate::load::sample::RecordedOutcome;
use crate::report::json::{RequestRecord, SessionReport};
use crate::report::serve::ServeAttempt;
use crate::report::shard::ShardSection;
use crate::report::shard_dists::ServeShardGaps;
use crate::stats::SavedGapDist;

/// A serve attempt of completed requests with these TTFTs (each 11 tokens, 100 ms after its
/// first) and these chunk gaps, its figures computed as a run computes them over 2 s.
fn attempt(ttfts: &[f64], gaps: &[f64]) -> ServeAttempt {
    let template = crate::report::tests_shapes::with_serve().serve.unwrap().cells[0].attempts[0].clone();
    let base = template.request_samples[0].clone();
    let records: Vec<RequestRecord> = ttfts
        .iter()
        .enumerate()
        .map(|(i, t)| RequestRecord {
            worker: i as u32,
            ttft_ms: Some(*t),
            e2e_ms: t + 100.0,
            output_tokens: 11,
            outcome: RecordedOutcome::Completed,
            ..base.clone()
        })
        .collect();
    let mut g = ServeGaps::default();
    for v in gaps {
        g.chunk_ms.push(*v);
        g.token_ms.push(*v);
    }
    let figures: Vec<_> = records.iter().map(figures_of).collect();
    let metrics = serve_metrics(&figures, &g, 2.0, None);
    let shard_gaps =
        ServeShardGaps { chunk_ms: SavedGapDist::of(&g.chunk_ms), token_ms: SavedGapDist::of(&g.token_ms) };
    let num_prompts = ttfts.len() as u32;
    ServeAttempt {
        metrics,
        request_samples: records,
        shard_gaps: Some(shard_gaps),
        schedule_lag: None,
        num_prompts,
        ..template
    }
}

fn shard(index: u32, a: ServeAttempt) -> ShardInput {
    let mut r = crate::report::tests_shapes::with_serve();
    r.complete = true;
    r.shard = Some(ShardSection {
        index,
        count: 2,
        session_id: "s".into(),
        start_at_unix_s: None,
        clock: None,
        timeline: Vec::new(),
    });
    let serve = r.serve.as_mut().unwrap();
    serve.cells.truncate(1);
    serve.cells[0].attempts = vec![a];
    ShardInput { file: format!("{index}.json"), report: r }
}

#[test]
fn serve_counts_and_rates_add_and_figures_come_from_all_requests() {
    let (t0, t1) = ([40.0, 10.0, 30.0], [20.0, 50.0]);
    let (g0, g1) = ([5.0, 6.0, 9.0], [7.0, 8.0]);
    let (a0, a1) = (attempt(&t0, &g0), attempt(&t1, &g1));
    let m = merge(vec![shard(1, a1.clone()), shard(0, a0.clone())]).unwrap();
    let a = &m.report.serve.as_ref().unwrap().cells[0].attempts[0];
    let whole = attempt(&[t0.as_slice(), &t1].concat(), &[g0.as_slice(), &g1].concat());
    let (got, want) = (&a.metrics, &whole.metrics);
    assert_eq!(
        (got.completed, got.total_output_tokens),
        (5, a0.metrics.total_output_tokens + a1.metrics.total_output_tokens)
    );
    assert_eq!((got.median_ttft_ms, got.p99_ttft_ms), (want.median_ttft_ms, want.p99_ttft_ms));
    assert_eq!((got.median_tpot_ms, got.p99_e2el_ms), (want.median_tpot_ms, want.p99_e2el_ms));
    assert_eq!((got.median_itl_ms, got.p99_itl_token_ms), (want.median_itl_ms, want.p99_itl_token_ms));
    let sum = a0.metrics.request_throughput + a1.metrics.request_throughput;
    assert!((got.request_throughput - sum).abs() < 1e-12, "the shards' rates added");
    assert_eq!(got.duration_s, 2.0);
    assert_eq!(a.request_samples.len(), 5);
    assert_eq!(a.num_prompts, 5, "each shard planned its slice: the cell planned their sum");
    assert!(m.notes.iter().any(|n| n.starts_with("shard 0, 1 ran without --start-at")), "{:?}", m.notes);
    assert!(a.shard_gaps.is_none() && a.schedule_lag.is_none());
    let valid = |r: &SessionReport| crate::report::tests_schema::assert_valid(&serde_json::to_value(r).unwrap());
    valid(&m.report);
    valid(&shard(0, a0).report);
}

#[test]
fn serve_itl_without_a_shards_gaps_is_left_out() {
    let mut a1 = attempt(&[20.0], &[7.0]);
    a1.shard_gaps = None;
    let m = merge(vec![shard(0, attempt(&[10.0], &[5.0])), shard(1, a1)]).unwrap();
    let metrics = &m.report.serve.as_ref().unwrap().cells[0].attempts[0].metrics;
    assert_eq!((metrics.median_itl_ms, metrics.p99_itl_token_ms), (None, None));
    assert_eq!(metrics.median_ttft_ms, Some(15.0), "TTFT from the records still");
    assert!(m.notes.iter().any(|n| n.contains("ITL left out")), "{:?}", m.notes);
}
