//! End-to-end: a headless decode session against the simulated cluster, checked cell by cell
//! and validated against the report schema.

use crate::common;

use common::{cluster, config, validate};
use llm_decode_bench::cell::control::{Command, Phase, RunnerEvent};
use llm_decode_bench::load::sample::TokenSource;
use llm_decode_bench::report::json::{DecodeAttempt, DecodeCell, SessionReport};
use llm_decode_bench::report::status::{AttemptStatus, CellOutcome};
use llm_decode_bench::session::start;
use std::time::Duration;

fn cell<'a>(r: &'a SessionReport, ctx: &str, conc: u32) -> &'a DecodeCell {
    r.decode.as_ref().unwrap().cells.iter().find(|c| c.ctx_label == ctx && c.conc == conc).unwrap()
}

fn last(c: &DecodeCell) -> &DecodeAttempt {
    c.attempts.last().expect("an attempt")
}

/// The decode matrix on the paused clock (the in-process cluster keeps modelled time), so the
/// client/server agreement and the running average hold however busy the machine is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decode_matrix_against_the_sim() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("decode.json");
    let path = out.clone();
    let (report, page) = common::paused(move || async move {
        // 4 running at most, 4096 blocks of 16 = 64k tokens of KV (no oversubscription), an 8k
        // context limit: 8k prompts overflow, and 8k x 12 cannot fit at all. A request fault of
        // rate 0 only turns on the simulator's own request count (`sim:completion_requests_total`).
        let c = common::inproc_cluster(1, 25.0, |cfg| {
            cfg.faults = "reset=0".parse().unwrap();
            cfg.engine.max_num_seqs = 4;
            cfg.engine.kv_blocks = 4096;
            cfg.engine.max_model_len = 8192;
        });
        let r = &c.info().replicas[0];
        let mut cfg = config(&r.url, &r.metrics_url, &path, vec![0, 1024, 6144, 8192], vec![1, 2, 12]);
        cfg.decode.kv_oversubscribe = 1.0;
        cfg.decode.min_stream_tokens = 4096;
        let report = common::run_inproc(cfg, &c).await;
        let (_, page) = common::get_via(c.backend().as_ref(), &r.metrics_url).await;
        (report, page)
    })
    .await;
    let file = validate(&out);
    assert!(file == report, "the file holds the final report");
    assert!(report.complete);
    // Every completion request the simulator accepted is in the report: the attempts' outcomes
    // (calibration here uses /tokenize, not completions; in process there is no connection to
    // probe for reuse, so no probe request).
    assert!(report.target.connection_reuse.is_none());
    let accepted = page.lines().find_map(|l| l.strip_prefix("sim:completion_requests_total ")).expect("the counter");
    let attempts = report.decode.iter().flat_map(|d| &d.cells).flat_map(|c| &c.attempts);
    let recorded: u64 = attempts.flat_map(|a| a.request_outcomes.values()).sum();
    assert_eq!(accepted.parse::<f64>().unwrap() as u64, recorded, "{page}");

    let small = last(cell(&report, "0", 1));
    assert_eq!(small.status, AttemptStatus::Measured);
    assert!(small.window_tokens > 0);
    assert_eq!(small.aggregate_source, TokenSource::OpenaiContinuousUsage);
    for (ctx, conc) in [("0", 1), ("0", 2), ("1k", 1), ("1k", 2), ("0", 12), ("1k", 12)] {
        let a = last(cell(&report, ctx, conc));
        let prom = a.prometheus.as_ref().expect("prometheus validation");
        let ratio = prom.client_over_server.expect("server rate");
        assert!((ratio - 1.0).abs() < 0.05, "{ctx} x {conc}: client/server {ratio}");
    }
    let limited = last(cell(&report, "0", 12));
    assert!(limited.capacity_limited);
    let running = limited.running_avg.unwrap();
    assert!((3.5..=4.5).contains(&running), "running {running} near max_num_seqs");
    assert!(!last(cell(&report, "0", 2)).capacity_limited);

    // An 8k prompt on an 8k model leaves no room for output: skipped before any request, with
    // the deficit (prompt, 64-token margin and 64-token fewest stream over 8192), never refused.
    for conc in [1, 2] {
        let c = cell(&report, "8k", conc);
        assert_eq!(c.status, CellOutcome::Skipped);
        let why = c.timeout_reason.as_deref().unwrap();
        assert!(why.contains("exceed max_model_len 8192; deficit 128 tokens"), "{why}");
        assert!(c.attempts.is_empty(), "nothing sent");
    }
    // A 6k prompt leaves 1984 tokens, under the 4096-token floor: its streams are shortened to
    // fit, said at preflight, and run without a refusal.
    for conc in [1, 2] {
        let a = last(cell(&report, "6k", conc));
        assert_eq!(a.status, AttemptStatus::Measured, "6k x {conc}");
        assert_eq!(a.error_count, 0, "6k x {conc}: {:?}", a.errors);
    }
    let short = "--ctx 6k (1984 tokens) leaves fewer than --min-stream-tokens 4096 output tokens";
    assert!(report.warnings.iter().any(|w| w.contains(short)), "{:?}", report.warnings);
    let note = "--ctx 8k (deficit 128 tokens) leaves no room for the output under the model's max_model_len 8192";
    assert!(report.warnings.iter().any(|w| w.contains(note)), "{:?}", report.warnings);
    let skipped = cell(&report, "8k", 12);
    assert_eq!(skipped.status, CellOutcome::Skipped);
    assert!(skipped.timeout_reason.as_deref().unwrap().contains("deficit 32768 tokens"));

    let text = llm_decode_bench::report::tables::render_text(&report, false, false);
    for needle in ["(4/12)*", "∅", "Primary Summary"] {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_mid_session_leaves_a_valid_incomplete_report() {
    let c = cluster(1, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("stopped.json");
    let r = &c.info().replicas[0];
    let mut cfg = config(&r.url, &r.metrics_url, &out, vec![0, 1024], vec![1, 2]);
    cfg.window = Duration::from_secs(30);
    let mut h = start(cfg).await.unwrap();
    while let Some(ev) = h.events.recv().await {
        if matches!(ev, RunnerEvent::Phase { phase: Phase::Measuring, .. }) {
            break;
        }
    }
    h.commands.send(Command::Stop).unwrap();
    let report = tokio::time::timeout(Duration::from_secs(20), h.join).await.expect("stops promptly").unwrap();
    let file = validate(&out);
    assert!(!file.complete);
    assert_eq!(report.decode.as_ref().unwrap().cells[0].attempts[0].status, AttemptStatus::Stopped);
    assert!(report.actions.iter().any(|a| a.action == "stop"));
}

#[tokio::test]
async fn an_unreachable_target_fails_preflight_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let refused = common::refused_port();
    let base = refused.base();
    let cfg = config(&base, &format!("{base}/metrics"), &dir.path().join("x.json"), vec![0], vec![1]);
    let err = start(cfg).await.err().expect("preflight fails").to_string();
    assert!(err.contains("unreachable"), "{err}");
    assert!(!err.contains('\n'));
    assert!(!dir.path().join("x.json").exists(), "nothing written before the session starts");
}

#[test]
fn the_binary_exits_non_zero_with_one_line_on_bad_input() {
    let bin = env!("CARGO_BIN_EXE_llm-decode-bench");
    let out = std::process::Command::new(bin).args(["run", "--base-url", "not-a-url"]).output().unwrap();
    assert!(!out.status.success());
    let refused = common::refused_port();
    let out = std::process::Command::new(bin)
        .args(["run", "--headless", "--base-url", &refused.base(), "--out"])
        .arg(std::env::temp_dir().join("never-written.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "preflight failure (src/cmd/exit.rs)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: preflight:"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_never_reach_the_report() {
    let c = cluster(1, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("secret.json");
    let r = &c.info().replicas[0];
    let base = r.url.replace("http://", "http://user:hunter2@");
    let mut cfg = config(&base, &r.metrics_url, &out, vec![0], vec![1]);
    cfg.window = Duration::from_millis(300);
    cfg.api_key = Some(llm_decode_bench::load::request::ApiKey::new("sk-never-saved".into()));
    assert!(!format!("{cfg:?}").contains("sk-never-saved"));
    let report = start(cfg).await.unwrap().join.await.unwrap();
    assert_eq!(report.decode.unwrap().cells[0].status, CellOutcome::Measured);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains("sk-never-saved") && !text.contains("hunter2"), "credentials leaked into the report");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_burst_adds_phase_three() {
    let c = cluster(1, 25.0, |cfg| cfg.engine.max_num_seqs = 4).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("burst.json");
    let r = &c.info().replicas[0];
    let mut cfg = config(&r.url, &r.metrics_url, &out, vec![0, 1024], vec![2, 6]);
    cfg.window = Duration::from_millis(500);
    cfg.decode.run_burst = true;
    cfg.decode.burst_tokens = 48;
    let report = start(cfg).await.unwrap().join.await.unwrap();
    let file = validate(&out);
    let burst = file.burst.as_ref().expect("burst section");
    assert_eq!(burst.cells.len(), 4);
    for cell in &burst.cells {
        let a = cell.attempts.last().expect("ran");
        assert_eq!(
            (cell.status, a.requests, a.success),
            (CellOutcome::Measured, u64::from(cell.conc), u64::from(cell.conc))
        );
        assert_eq!(a.output_tokens, 48 * u64::from(cell.conc));
        assert!(a.e2e_ms.is_some() && a.output_tps > 0.0);
        let (itl, tpot) = (a.itl_token_ms.expect("burst ITL"), a.tpot_ms.expect("burst TPOT"));
        assert_eq!(itl.count, 47 * u64::from(cell.conc), "one gap per token after the first");
        // Tokens read together share their read's arrival time (gap 0): on a loaded machine
        // most gaps can be 0, so the median is not asserted positive, the longest gap is.
        assert!(itl.max > 0.0 && tpot.p50 > 0.0 && tpot.count == u64::from(cell.conc));
    }
    let six = burst.cells.iter().find(|c| c.conc == 6).unwrap().attempts[0].e2e_ms.unwrap();
    assert!(six.max > six.min, "six requests on four slots: the last two wait");
    let text = llm_decode_bench::report::tables::render_text(&report, false, false);
    assert!(text.contains("Burst output tok/s") && !text.contains("Not run. Re-run with --run-burst"), "{text}");
}

/// The decode matrix of issue 20 against the simulator's llama.cpp mode (4 slots of 8k tokens),
/// in process on the paused clock: 12k skipped with its deficit, the cross-check on busy-slot
/// decodes agreeing, no request failing, 8 streams held at 4 slots.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llamacpp_decode_matrix_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("llamacpp.json");
    let path = out.clone();
    let report = common::paused(move || async move {
        let c = common::llamacpp_inproc(1, 25.0, |cfg| {
            cfg.engine.max_num_seqs = 4;
            cfg.slot_ctx = Some(8192);
        });
        let r = &c.info().replicas[0];
        let cfg = config(&r.url, &r.metrics_url, &path, vec![0, 1024, 12_288], vec![2, 8]);
        common::run_inproc(cfg, &c).await
    })
    .await;
    validate(&out);
    assert!(report.complete);
    assert_eq!(report.target.max_model_len, Some(8192), "a slot's context from /v1/models meta.n_ctx");
    for conc in [2, 8] {
        let big = cell(&report, "12k", conc);
        assert_eq!(big.status, CellOutcome::Skipped);
        let why = big.timeout_reason.as_deref().unwrap_or_default();
        assert!(why.contains("exceed max_model_len 8192; deficit 4224 tokens"), "{why}");
    }
    for (ctx, conc) in [("0", 2), ("0", 8), ("1k", 2), ("1k", 8)] {
        let a = last(cell(&report, ctx, conc));
        assert_eq!(a.status, AttemptStatus::Measured, "{ctx} x {conc}");
        assert_eq!(a.error_count, 0, "{ctx} x {conc}: {:?}", a.errors);
        let prom = a.prometheus.as_ref().expect("prometheus validation");
        assert!(!prom.counts_disagree && prom.counts_unchecked.is_none(), "{ctx} x {conc}: {prom:?}");
        let counter = prom.server_counter.as_deref().unwrap_or_default();
        assert!(counter.contains("llamacpp:n_decode_total"), "{counter}");
        let ratio = prom.client_over_server.expect("server rate");
        assert!((ratio - 1.0).abs() < 0.05, "{ctx} x {conc}: client/server {ratio}");
        let noise = a.saturation.as_ref().and_then(|s| s.tps_noise.as_ref()).expect("noise");
        assert!(noise.se_tps > 0.0, "{ctx} x {conc}: the knee's noise is not ±0: {noise:?}");
    }
    let eight = last(cell(&report, "0", 8));
    assert!(eight.capacity_limited, "8 streams on 4 slots");
    assert!((3.5..=4.5).contains(&eight.running_avg.unwrap()), "{:?}", eight.running_avg);
}

/// A decode session against the simulator's SGLang mode (its source's update points: token
/// counters at request end, `realtime_tokens_total` per scheduler log): the cross-check reads
/// the live counter and never claims a disagreement; the KV pool is known at preflight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sglang_decode_cross_check_reads_the_live_counter() {
    use llm_decode_bench::sim::expo::MetricsDialect;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sglang.json");
    let path = out.clone();
    let report = common::paused(move || async move {
        let c = common::inproc_cluster(1, 25.0, |cfg| cfg.dialects = vec![MetricsDialect::Sglang]);
        let r = &c.info().replicas[0];
        let mut cfg = config(&r.url, &r.metrics_url, &path, vec![0], vec![2]);
        cfg.window = Duration::from_secs(3);
        common::run_inproc(cfg, &c).await
    })
    .await;
    validate(&out);
    assert!(report.target.kv_capacity_tokens.is_some(), "the KV pool from the page or /get_server_info");
    let a = last(cell(&report, "0", 2));
    assert_eq!(a.status, AttemptStatus::Measured);
    let prom = a.prometheus.as_ref().expect("prometheus validation");
    assert!(!prom.counts_disagree, "{prom:?}");
    let name = prom.server_counter.as_deref().unwrap_or_default();
    assert!(name.starts_with("sglang:realtime_tokens_total") && prom.counts_unchecked.is_none(), "{prom:?}");
    // The counter moves every 40 decode steps: within a few steps of the client's count.
    let ratio = prom.client_over_server.expect("server rate");
    assert!((ratio - 1.0).abs() < 0.1, "client/server {ratio}");
}
