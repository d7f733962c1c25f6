//! Trace replay against the simulator: a Mooncake trace's requests go out on the trace's own
//! schedule (at `--replay-speed`), its shared `hash_ids` blocks are served from the replica's
//! prefix cache (never more than the trace shares), a second session with the same `--seed` is
//! flagged warm, and an Azure trace's lengths are sent as the file has them.

use crate::common;
use common::{cluster, config, validate};
use llm_decode_bench::config::serve::{RangeRatio, ServeConfig};
use llm_decode_bench::config::trace::{ReplaySpeed, TraceSource};
use llm_decode_bench::config::{PlanKind, Rate, RunConfig};
use llm_decode_bench::dataset::trace::TraceFormat;
use llm_decode_bench::report::formats::{RenderSettings, ReportFormat};
use llm_decode_bench::report::json::SessionReport;
use llm_decode_bench::report::status::AttemptStatus;
use llm_decode_bench::session::start;
use llm_decode_bench::sim::Cluster;
use std::path::Path;

/// Twelve requests over 1.1 s of trace time: four conversations of three requests whose
/// prompts grow by a block, each conversation's blocks its own.
fn mooncake_file(dir: &Path) -> std::path::PathBuf {
    let mut text = String::new();
    for i in 0..12u64 {
        let (conv, turn) = (i % 4, i / 4);
        let ids: Vec<String> = (0..=turn).map(|b| (conv * 10 + b).to_string()).collect();
        let input = 512 * (turn + 1) - 100;
        let at = i * 100;
        text += &format!(
            "{{\"timestamp\": {at}, \"input_length\": {input}, \"output_length\": {}, \"hash_ids\": [{}]}}\n",
            4 + i % 3,
            ids.join(", ")
        );
    }
    let path = dir.join("mooncake.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

/// One serve session replaying `trace` at concurrency 16 with `seed` against `c`'s replica.
async fn session(c: &Cluster, trace: TraceSource, seed: u64) -> SessionReport {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("trace.json");
    let r = &c.info().replicas[0];
    let requests = &trace.trace.requests;
    let serve = ServeConfig {
        num_prompts: requests.len() as u32,
        output_len: requests.iter().map(|r| r.output_len).max().unwrap(),
        seed,
        range_ratio: RangeRatio::FIXED,
        goodput: None,
        dataset: None,
        prefix_repetition: None,
        trace: Some(trace),
    };
    let cfg = RunConfig {
        plans: vec![PlanKind::Serve],
        rates: vec![Rate::Inf],
        serve,
        ..config(&r.url, &r.metrics_url, &out, vec![96], vec![16])
    };
    let report = start(cfg).await.expect("preflight passes").join.await.unwrap();
    assert!(validate(&out) == report, "the file holds the final report, valid against the schema");
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mooncake_trace_keeps_its_schedule_and_its_shared_blocks_and_a_repeat_is_warm() {
    let dir = tempfile::tempdir().unwrap();
    let speed = ReplaySpeed::new(2.0).unwrap();
    let trace = TraceSource::load(TraceFormat::Mooncake, &mooncake_file(dir.path()), 100, speed).unwrap();
    let expected = trace.trace.expected_hit_ratio();
    let c = cluster(1, 25.0, |_| {}).await;
    let report = session(&c, trace.clone(), 5).await;
    let s = report.serve.as_ref().expect("a serve section");
    let t = s.trace.as_ref().expect("the trace is recorded");
    assert_eq!(
        (t.name.as_str(), t.replayed, t.entries, t.replay_speed, t.span_s),
        ("mooncake_trace", 12, 12, 2.0, 1.1)
    );
    assert_eq!((s.ctx_labels.clone(), s.request_rates.clone()), (vec!["mooncake_trace".into()], vec!["trace".into()]));
    let a = s.cells[0].attempts.last().expect("an attempt");
    assert_eq!((a.status, a.metrics.completed), (AttemptStatus::Measured, 12));
    let mut inputs: Vec<u64> = a.request_samples.iter().filter_map(|r| r.input_tokens).collect();
    inputs.sort_unstable();
    assert_eq!(inputs, [412, 412, 412, 412, 924, 924, 924, 924, 1436, 1436, 1436, 1436]);
    // Request i is due at i x 100 ms / 2: sent in that order, never early, the last at 550 ms.
    let mut sent: Vec<(f64, f64)> =
        a.request_samples.iter().map(|r| (r.sent_ms, r.schedule_lag_ms.expect("every request's lag"))).collect();
    sent.sort_by(|x, y| x.0.total_cmp(&y.0));
    for (i, (at, lag)) in sent.iter().enumerate() {
        let due = i as f64 * 50.0;
        assert!((at - lag - due).abs() < 1.0, "request {i} sent at {at} ms with lag {lag}: due at {due}");
    }
    let lag = a.schedule_lag.expect("summed up");
    assert_eq!(lag.held, 0, "16 slots: none held by the cap");
    // Each conversation's turns end 100 tokens into their last block, so only what an earlier
    // turn sent can hit: turn 2 the 412 tokens turn 1 sent of block 0, turn 3 all of block 0
    // and the 412 turn 2 sent of block 1: 4 x (412 + 924) of 11,088 tokens.
    assert!((expected - 5344.0 / 11088.0).abs() < 1e-12, "{expected}");
    let p = a.prefix_cache.expect("the replica counts prefix-cache lookups");
    assert_eq!((p.expected_max_ratio, p.warm), (Some(expected), false));
    assert!(p.hit_ratio > 0.2 && p.hit_ratio <= expected + 1e-9, "the shared blocks hit: {p:?}");
    let text = ReportFormat::Text.render(&report, RenderSettings { ascii: true, dim_ansi: false, width: Some(220) });
    let legend = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        legend.contains("prompts: mooncake_trace ") && legend.contains("the first 12 of 12 requests over 1.1 s at x2"),
        "{text}"
    );
    assert!(text.contains("| mooncake_trace"), "the row is named by the trace: {text}");

    let again = session(&c, trace, 5).await;
    let p = again.serve.unwrap().cells[0].attempts[0].prefix_cache.expect("counted");
    assert!(p.warm, "the same seed replays the same blocks, which the cache still holds: {p:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_azure_trace_sends_its_lengths_on_its_clock_and_shares_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("azure.csv");
    let mut text = "TIMESTAMP,ContextTokens,GeneratedTokens\n".to_string();
    for i in 0..8 {
        text += &format!("2023-11-16 18:15:4{i}.5000000,{},{}\n", 100 + 10 * i, if i == 3 { 0 } else { 5 + i });
    }
    std::fs::write(&path, text).unwrap();
    let trace = TraceSource::load(TraceFormat::Azure, &path, 100, ReplaySpeed::new(10.0).unwrap()).unwrap();
    let c = cluster(1, 25.0, |_| {}).await;
    let report = session(&c, trace, 9).await;
    let s = report.serve.as_ref().unwrap();
    assert_eq!(s.trace.as_ref().map(|t| (t.name.as_str(), t.span_s)), Some(("azure_trace", 7.0)));
    let a = &s.cells[0].attempts[0];
    assert_eq!(a.metrics.completed, 8);
    let mut lens: Vec<(u64, u64)> =
        a.request_samples.iter().map(|r| (r.input_tokens.unwrap(), r.output_tokens)).collect();
    lens.sort_unstable();
    assert_eq!(lens, [(100, 5), (110, 6), (120, 7), (130, 1), (140, 9), (150, 10), (160, 11), (170, 12)]);
    let last = a.request_samples.iter().map(|r| r.sent_ms).fold(0.0, f64::max);
    assert!(last >= 699.0, "7 s of trace at x10 puts the last send at 700 ms: {last}");
    let p = a.prefix_cache.expect("counted");
    assert_eq!((p.expected_max_ratio, p.warm), (Some(0.0), false));
}
