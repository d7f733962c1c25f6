//! The prefix cache in decode cells against the simulator as stock vLLM's CPU build runs it
//! (128-token blocks named by chained hashes, docs/protocol.md §8): every request carries its
//! own nonce ahead of the cell's text, so the streams sending that text again and again, and a
//! second session with the same `--seed`, find none of it in the cache (nor its burst's); hits the cell's own
//! requests cannot share (here another client's repeated prompt) flag the cell warm.

use crate::common;

use common::{config, inproc_cluster, paused, run_inproc, stream_via, validate};
use llm_decode_bench::report::formats::{RenderSettings, ReportFormat};
use llm_decode_bench::report::json::{DecodeAttempt, SessionReport};
use llm_decode_bench::report::prefix_cache::PrefixCacheCheck;
use llm_decode_bench::sim::inproc::InProcCluster;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

/// Prompt tokens of the cell: 16 of the simulator's 128-token blocks.
const CTX: u64 = 2048;

/// A replica that prefills and decodes as the defaults model it, with vLLM's CPU block size.
fn replica() -> InProcCluster {
    inproc_cluster(1, 1.0, |c| c.engine.block_size = 128)
}

/// One decode cell (`CTX` x 2) with short streams, so each stream sends the cell's text many
/// times over, and `seed` as `--seed`.
async fn session(c: &InProcCluster, out: &Path, seed: u64) -> SessionReport {
    let r = &c.info().replicas[0];
    let mut cfg = config(&r.url, &r.metrics_url, out, vec![CTX], vec![2]);
    (cfg.routing.seed, cfg.window) = (seed, Duration::from_secs(2));
    (cfg.decode.max_tokens, cfg.decode.min_stream_tokens) = (Some(16), 16);
    // A burst after the cell: its requests carry nonces of their own too.
    (cfg.decode.run_burst, cfg.decode.burst_tokens) = (true, 8);
    run_inproc(cfg, c).await
}

fn attempt(report: &SessionReport) -> &DecodeAttempt {
    let cells = &report.decode.as_ref().expect("a decode section").cells;
    cells[0].attempts.last().expect("an attempt")
}

fn check(report: &SessionReport) -> PrefixCacheCheck {
    attempt(report).prefix_cache.expect("the replica counts prefix-cache lookups")
}

fn text(report: &SessionReport) -> String {
    ReportFormat::Text.render(report, RenderSettings { ascii: true, dim_ansi: false, width: Some(200) })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decode_session_run_again_with_its_seed_finds_nothing_behind_the_nonces() {
    let dir = tempfile::tempdir().unwrap();
    let (first, again) = (dir.path().join("first.json"), dir.path().join("again.json"));
    let (a, b) = (first.clone(), again.clone());
    let (first_report, again_report) = paused(move || async move {
        let c = replica();
        (session(&c, &a, 7).await, session(&c, &b, 7).await)
    })
    .await;
    for (report, path) in [(&first_report, &first), (&again_report, &again)] {
        assert_eq!(&validate(path), report, "the file holds the report");
        let p = check(report);
        let requests = attempt(report).request_outcomes.values().sum::<u64>();
        assert!(requests >= 6, "the streams sent the text again and again: {requests} requests");
        assert!(p.queries_tokens >= (requests - 2) as f64 * CTX as f64, "every admitted request was looked up: {p:?}");
        let expected = p.expected_max_ratio.expect("the request form was counted");
        assert!(expected > 0.0 && expected < 0.05, "the form and the nonce of a 2k prompt: {expected}");
        assert_eq!(p.hits_tokens, 0.0, "no 128-token block before a nonce, none after one: {p:?}");
        assert!(!p.warm, "{p:?}");
        assert!(!text(report).contains("W = warm cache"), "{}", text(report));
        assert!(!report.warnings.iter().any(|w| w.contains("warm cache")), "{:?}", report.warnings);
        let burst = &report.burst.as_ref().expect("a burst section").cells[0];
        let b = burst.attempts.last().and_then(|a| a.prefix_cache).expect("the burst's check");
        assert_eq!((b.hits_tokens, b.warm), (0.0, false), "a burst's nonces come first too: {b:?}");
        assert!(b.queries_tokens >= 2.0 * CTX as f64 && b.expected_max_ratio.is_some(), "{b:?}");
    }
}

/// Sends `prompt` to the replica one request after another until `stop`.
async fn repeat(c: &InProcCluster, prompt: String, stop: tokio_util::sync::CancellationToken) {
    let r = &c.info().replicas[0];
    let url = format!("{}/v1/completions", r.url);
    let body = json!({"model": c.info().model, "prompt": prompt, "max_tokens": 1, "stream": true});
    while !stop.is_cancelled() {
        stream_via(c.backend().as_ref(), &url, &body, Duration::from_secs(30)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_clients_repeated_prompt_during_the_cell_flags_it_warm() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("warm.json");
    let path = out.clone();
    let report = paused(move || async move {
        let c = replica();
        let stop = tokio_util::sync::CancellationToken::new();
        let other = "An unrelated prompt another client keeps sending. ".repeat(400);
        let (report, ()) = tokio::join!(
            async {
                let report = session(&c, &path, 7).await;
                stop.cancel();
                report
            },
            repeat(&c, other, stop.clone())
        );
        report
    })
    .await;
    assert_eq!(validate(&out), report);
    let p = check(&report);
    assert!(p.warm && p.hit_ratio > 0.3, "the other client's hits are in the replica's counters: {p:?}");
    let warning = report.warnings.iter().find(|w| w.starts_with("ctx=2k conc=2: warm cache: "));
    let warning = warning.unwrap_or_else(|| panic!("a warning names the cell: {:?}", report.warnings));
    assert!(warning.contains("not the cell's own"), "{warning}");
    let text = text(&report);
    assert!(text.contains("W = warm cache") && text.contains("W 2k 2: warm cache: "), "{text}");
    let csv = ReportFormat::Csv.render(&report, RenderSettings::default());
    assert_eq!(csv_field(&csv, "warm_cache"), "true", "{csv}");
}

/// The value of column `name` in the first row of `csv` (no field of it is quoted).
fn csv_field(csv: &str, name: &str) -> String {
    let mut lines = csv.lines().map(|l| l.split(',').collect::<Vec<_>>());
    let header = lines.next().expect("a header");
    let column = header.iter().position(|c| *c == name).expect("the column");
    lines.next().expect("a row")[column].to_string()
}
