//! The prefix cache against the simulator: `--dataset-name prefix_repetition`'s cells share
//! their few random prefixes, so the replica's prefix cache serves them (never more than the
//! workload allows), the `random` workload's requests find nothing to share, and a session run
//! again with the same `--seed` finds the first one's prompts and is flagged warm.

use crate::common;
use common::{client, cluster, config, metrics_text, validate};
use llm_decode_bench::config::prefix_repetition::PrefixRepetition;
use llm_decode_bench::config::serve::{RangeRatio, ServeConfig};
use llm_decode_bench::config::{PlanKind, Rate, RunConfig};
use llm_decode_bench::report::formats::{RenderSettings, ReportFormat};
use llm_decode_bench::report::json::SessionReport;
use llm_decode_bench::report::status::AttemptStatus;
use llm_decode_bench::session::start;
use llm_decode_bench::sim::Cluster;

const N: u32 = 12;
const SHAPE: PrefixRepetition = PrefixRepetition { prefix_len: 64, suffix_len: 32, num_prefixes: 3, output_len: 8 };

/// The replica's `vllm:prefix_cache_hits_total`, tokens.
async fn prefix_hits(url: &str) -> f64 {
    let text = metrics_text(&client(), url).await;
    let line = text.lines().find(|l| l.starts_with("vllm:prefix_cache_hits_total")).expect("the hits counter");
    line.rsplit(' ').next().and_then(|v| v.parse().ok()).expect("a value")
}

/// Runs one serve cell of `N` requests at concurrency 2 with `shape`'s prompts (None: random)
/// and `seed` against `c`'s replica; the report, and the replica's prefix-cache hits since it
/// started.
async fn session(c: &Cluster, shape: Option<PrefixRepetition>, seed: u64) -> (SessionReport, f64) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("prefix.json");
    let r = &c.info().replicas[0];
    let serve = ServeConfig {
        num_prompts: N,
        output_len: 8,
        seed,
        range_ratio: RangeRatio::FIXED,
        goodput: None,
        dataset: None,
        prefix_repetition: shape,
        trace: None,
    };
    let cfg = RunConfig {
        plans: vec![PlanKind::Serve],
        rates: vec![Rate::Inf],
        serve,
        ..config(&r.url, &r.metrics_url, &out, vec![96], vec![2])
    };
    let report = start(cfg).await.expect("preflight passes").join.await.unwrap();
    assert!(validate(&out) == report, "the file holds the final report, valid against the schema");
    (report, prefix_hits(&r.metrics_url).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_prefixes_are_served_from_the_prefix_cache_and_random_prompts_are_not() {
    let c = cluster(1, 25.0, |_| {}).await;
    let (report, hits) = session(&c, Some(SHAPE), 3).await;
    let s = report.serve.as_ref().expect("a serve section");
    let p = s.prefix_repetition.as_ref().expect("the workload is recorded");
    assert_eq!((p.prefix_len, p.suffix_len, p.num_prefixes, p.per_cell), (64, 32, 3, N));
    // 9 of 12 requests repeat a prefix: 9 x 64 of 12 x 96 prompt tokens.
    assert!((p.expected_prefix_hit_ratio - 0.5).abs() < 1e-12, "{}", p.expected_prefix_hit_ratio);
    assert_eq!(s.ctx_labels, vec!["prefix_repetition".to_string()]);
    let a = s.cells[0].attempts.last().expect("an attempt");
    assert_eq!((a.status, a.metrics.completed), (AttemptStatus::Measured, u64::from(N)));
    assert!(a.request_samples.iter().all(|r| r.input_tokens == Some(96) && r.output_tokens == 8));
    let most = f64::from(N - SHAPE.num_prefixes) * SHAPE.prefix_len as f64;
    assert!(hits > 0.0 && hits <= most, "the prefixes were served from the cache: {hits} of at most {most} tokens");
    let text = ReportFormat::Text.render(&report, RenderSettings { ascii: true, dim_ansi: false, width: Some(200) });
    assert!(text.contains("prompts: prefix_repetition: 3 prefixes of 64 tokens"), "{text}");

    let p = a.prefix_cache.expect("the replica counts prefix-cache lookups");
    assert_eq!((p.expected_max_ratio, p.warm), (Some(0.5), false), "the workload's own sharing is not warm");
    assert!((p.hit_ratio - hits / (f64::from(N) * 96.0)).abs() < 1e-9, "{p:?} against {hits} hit tokens");

    let c = cluster(1, 25.0, |_| {}).await;
    let (report, hits) = session(&c, None, 3).await;
    assert_eq!(hits, 0.0, "random prompts share no prefix block");
    let p = report.serve.unwrap().cells[0].attempts[0].prefix_cache.expect("counted");
    assert_eq!((p.hit_ratio, p.expected_max_ratio, p.warm), (0.0, Some(0.0), false));
}

/// The serve cell's prefix-cache check and its table row.
fn warm_of(report: &SessionReport) -> (bool, String) {
    let s = report.serve.as_ref().expect("a serve section");
    let p = s.cells[0].attempts.last().and_then(|a| a.prefix_cache).expect("counted");
    let text = ReportFormat::Text.render(report, RenderSettings { ascii: true, dim_ansi: false, width: Some(200) });
    (p.warm, text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_run_again_with_its_seed_is_flagged_warm_and_a_new_seed_is_not() {
    let c = cluster(1, 25.0, |_| {}).await;
    let (first, _) = session(&c, None, 21).await;
    let (warm, text) = warm_of(&first);
    assert!(!warm && !text.contains("W = warm cache"), "a first session is cold: {text}");
    let (again, _) = session(&c, None, 21).await;
    let (warm, text) = warm_of(&again);
    assert!(warm, "the same seed sends the same prompts, which the cache still holds");
    assert!(text.lines().any(|l| l.starts_with("| 96") && l.contains(" W ")), "the cell is marked: {text}");
    assert!(text.contains("W = warm cache") && text.contains("of prompt tokens came from the prefix cache"), "{text}");
    let (fresh, _) = session(&c, None, 22).await;
    assert!(!warm_of(&fresh).0, "another seed, other prompts: cold");
}
