//! End-to-end: the serve experiment (`run --plan serve`) against the simulator at its default
//! (real-time) engine model, checked against the simulator's own server-side record.

use crate::common;

use common::{client, cluster, config, metrics_text, sample_value, stream, validate};
use llm_decode_bench::config::serve::{RangeRatio, ServeConfig};
use llm_decode_bench::config::{PlanKind, Rate, RunConfig};
use llm_decode_bench::report::formats::{RenderSettings, ReportFormat};
use llm_decode_bench::report::json::SessionReport;
use llm_decode_bench::report::serve::{ServeAttempt, ServeCellReport, ServeSection};
use llm_decode_bench::report::status::{AttemptStatus, CellOutcome};
use llm_decode_bench::session::start;
use llm_decode_bench::stats::Slo;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

const N: u32 = 8;
const INPUT: u64 = 200;
const OUTPUT: u64 = 24;

fn last(c: &ServeCellReport) -> &ServeAttempt {
    c.attempts.last().expect("an attempt")
}

/// A histogram's `_sum` (s) and `_count`.
fn hist(text: &str, name: &str) -> (f64, f64) {
    let sum = sample_value(text, &format!("{name}_sum")).expect("histogram sum");
    (sum, sample_value(text, &format!("{name}_count")).expect("histogram count"))
}

/// What preflight's one-token probe of connection reuse adds to the server's prompt-token,
/// generation-token and success counters, sent alone as each session sends it.
async fn reuse_probe_alone(base: &str, metrics: &str) -> [f64; 3] {
    use llm_decode_bench::load::request::Endpoint;
    let names = ["vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total"];
    let before = metrics_text(&client(), metrics).await;
    let backend = llm_decode_bench::load::backend::HttpBackend::shared(client());
    let api = llm_decode_bench::load::client::ApiClient::new(backend, base, None);
    let limit = llm_decode_bench::load::reuse_probe::PROBE_TIMEOUT;
    let said =
        llm_decode_bench::session::preflight::probe_reuse(&api, Endpoint::Completions, "sim-llama-27b", limit).await;
    assert!(said.is_some_and(|l| l.contains("kept the connection open")), "the simulator keeps its connections");
    let after = metrics_text(&client(), metrics).await;
    names.map(|n| sample_value(&after, n).unwrap_or(0.0) - sample_value(&before, n).unwrap_or(0.0))
}

/// Runs the vocabulary probe (and the probe of connection reuse) alone against `base`, as each
/// serve session does before its first cell, and returns what both added to the server's TTFT
/// and e2e histograms, how many of the vocabulary probe's requests the server served, and what
/// the reuse probe added to the counters ([`reuse_probe_alone`]).
async fn probe_alone(base: &str, metrics: &str) -> ([(f64, f64); 2], u32, [f64; 3]) {
    use llm_decode_bench::cell::context::Target;
    let names = ["vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds"];
    let before = metrics_text(&client(), metrics).await;
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("content-type", "application/json".parse().unwrap());
    let backend = llm_decode_bench::load::backend::HttpBackend::shared(client());
    let target = Target { backend, base: base.into(), headers, served_by: Vec::new() };
    let ids = llm_decode_bench::experiment::serve::vocab::probe(&target, "sim-llama-27b").await.expect("probe");
    let reuse = reuse_probe_alone(base, metrics).await;
    let after = metrics_text(&client(), metrics).await;
    let delta = |n: &str| {
        let ((s0, c0), (s1, c1)) = (hist(&before, n), hist(&after, n));
        (s1 - s0, c1 - c0)
    };
    ([delta(names[0]), delta(names[1])], ids.accepted, reuse)
}

/// The sweep's configuration: `--random-input-len INPUT --max-concurrency 4 --request-rate 2,inf`.
fn sweep_config(url: &str, metrics: &str, out: &Path) -> RunConfig {
    let slo = Slo { ttft: Some(Duration::from_secs(10)), tpot: None, e2e: None };
    RunConfig {
        plans: vec![PlanKind::Serve],
        rates: vec![Rate::PerSecond(2.0), Rate::Inf],
        serve: ServeConfig {
            num_prompts: N,
            output_len: OUTPUT,
            seed: 7,
            range_ratio: RangeRatio::FIXED,
            goodput: Some(slo),
            dataset: None,
            prefix_repetition: None,
            trace: None,
        },
        ..config(url, metrics, out, vec![INPUT], vec![4])
    }
}

/// Every cell completed all its requests with exact token totals; returns the client's
/// completed-weighted mean TTFT and e2el, ms, and the completed and output totals.
fn check_cells(s: &ServeSection) -> ([f64; 2], u64, u64) {
    let (mut ttft, mut e2el, mut completed, mut output) = (0.0, 0.0, 0, 0);
    for cell in &s.cells {
        assert_eq!(cell.status, CellOutcome::Measured, "{}", cell.request_rate);
        let m = &last(cell).metrics;
        assert_eq!(last(cell).status, AttemptStatus::Measured);
        assert_eq!((m.completed, m.failed), (u64::from(N), 0), "{}", cell.request_rate);
        assert_eq!(m.total_input_tokens, u64::from(N) * INPUT);
        assert_eq!(m.total_output_tokens, u64::from(N) * OUTPUT, "ignore_eos: exactly max_tokens each");
        assert!((m.output_throughput * m.duration_s - m.total_output_tokens as f64).abs() < 1e-6);
        assert_eq!(m.request_goodput, Some(m.request_throughput), "every request within 10 s");
        let (t, tpot, itl) = (m.median_ttft_ms.unwrap(), m.median_tpot_ms.unwrap(), m.median_itl_ms.unwrap());
        assert!(t > 0.0 && tpot > 0.0 && itl > 0.0 && m.std_e2el_ms.is_some() && m.p99_itl_token_ms.is_some());
        ttft += m.mean_ttft_ms.unwrap() * m.completed as f64;
        e2el += m.mean_e2el_ms.unwrap() * m.completed as f64;
        (completed, output) = (completed + m.completed, output + m.total_output_tokens);
    }
    let n = completed as f64;
    ([ttft / n, e2el / n], completed, output)
}

/// At 2/s the sends are spread over (N - 1) / 2 s at least; at inf they go as slots free up.
fn check_spacing(s: &ServeSection) {
    let paced = last(&s.cells[0]);
    let d = paced.metrics.duration_s;
    assert!(d >= f64::from(N - 1) / 2.0, "arrivals at 2/s spread {N} requests over {d} s");
    let sent: Vec<f64> = paced.request_samples.iter().map(|r| r.sent_ms).collect();
    assert!(sent[sent.len() - 1] - sent[0] >= 1500.0, "sends are spread out: {sent:?}");
    // At inf the first --max-concurrency requests go at once; the rest wait for a slot.
    let mut sent: Vec<f64> = last(&s.cells[1]).request_samples.iter().map(|r| r.sent_ms).collect();
    sent.sort_by(f64::total_cmp);
    assert!(sent[3] - sent[0] < 100.0 && sent[4] - sent[0] > 100.0, "4 at once, then one per finished: {sent:?}");
}

/// The text table and the vllm export show the serve cells with the section's figures.
fn check_renders(report: &SessionReport) {
    let s = report.serve.as_ref().unwrap();
    let rendered = ReportFormat::Text.render(report, RenderSettings { ascii: true, dim_ansi: false, width: None });
    assert!(
        rendered.contains("Serve output tok/s") && rendered.contains("2/s") && rendered.contains("inf"),
        "{rendered}"
    );
    let rows: Value = serde_json::from_str(&ReportFormat::Vllm.render(report, RenderSettings::default())).unwrap();
    let rows: Vec<&Value> = rows.as_array().unwrap().iter().filter(|r| r["kind"] == "serve").collect();
    assert_eq!(rows.len(), 2);
    let m = &last(&s.cells[1]).metrics;
    assert_eq!((rows[1]["request_rate"].clone(), rows[0]["request_rate"].clone()), (json!("inf"), json!(2.0)));
    assert_eq!(rows[1]["completed"], json!(m.completed));
    assert_eq!(rows[1]["median_tpot_ms"], json!(m.median_tpot_ms));
    assert_eq!(rows[1]["p99_itl_ms"], json!(m.p99_itl_ms));
    assert_eq!(rows[1]["max_concurrency"], json!(4));
    // `compare` (and `--baseline`) match serve cells by input length, concurrency and rate.
    use llm_decode_bench::report::compare::{Options, Verdict, compare};
    let opts = Options { threshold_pct: 5.0, percentiles: llm_decode_bench::stats::percentile_list("50").unwrap() };
    let c = compare(("a.json", report), ("b.json", report), &opts);
    let serve: Vec<&str> = c
        .cells
        .iter()
        .filter(|d| d.key.kind == llm_decode_bench::report::kind::ExperimentKind::Serve)
        .map(|d| d.label.as_str())
        .collect();
    assert_eq!(serve, ["serve ctx=200 conc=4 rate=2", "serve ctx=200 conc=4 rate=inf"]);
    assert_eq!(c.verdict, Verdict::NoChange);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_sweep_matches_the_servers_own_record() {
    let c = cluster(1, 1.0, |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("serve.json");
    let r = &c.info().replicas[0];
    // The session probes the vocabulary first; what a probe adds to the server's record is
    // measured alone here and taken out below (the session's probe sends the same requests).
    let (probe_hist, probe_served, reuse) = probe_alone(&r.url, &r.metrics_url).await;
    let report = start(sweep_config(&r.url, &r.metrics_url, &out)).await.expect("preflight passes").join.await.unwrap();
    assert!(validate(&out) == report, "the file holds the final report");
    assert!(report.complete);
    let s = report.serve.as_ref().expect("a serve section");
    assert_eq!(s.request_rates, ["2", "inf"]);
    assert_eq!(s.goodput_slo.and_then(|g| g.ttft_ms), Some(10_000.0), "the SLO used is recorded");
    assert_eq!(s.cells.len(), 2, "one cell per rate");
    let ([ttft, e2el], completed, output) = check_cells(s);
    check_spacing(s);

    // The vocabulary probe found the simulator's 150002 ids exactly; its served one-token
    // requests are in the server's totals too.
    let ids = s.token_ids.expect("the probed token ids are recorded");
    assert_eq!((ids.vocab, ids.low, ids.high), (150_002, 1000, 32_000), "{ids:?}");
    assert!(ids.probes <= 40 && ids.accepted == probe_served, "{ids:?}");
    let probed = f64::from(ids.accepted + probe_served);
    let text = metrics_text(&client(), &r.metrics_url).await;
    // The reuse probe's request, sent alone above and by the session.
    let [reuse_prompt, reuse_output, reuse_served] = reuse.map(|v| 2.0 * v);
    let prompt_tokens = (2 * u64::from(N) * INPUT) as f64 + probed + reuse_prompt;
    assert_eq!(sample_value(&text, "vllm:prompt_tokens_total"), Some(prompt_tokens), "exact prompt lengths");
    assert_eq!(sample_value(&text, "vllm:generation_tokens_total"), Some(output as f64 + probed + reuse_output));
    assert_eq!(sample_value(&text, "vllm:request_success_total"), Some(completed as f64 + probed + reuse_served));
    let names = [("vllm:time_to_first_token_seconds", ttft), ("vllm:e2e_request_latency_seconds", e2el)];
    for ((name, client_mean), (probe_sum, probe_count)) in names.into_iter().zip(probe_hist) {
        let (sum, count) = hist(&text, name);
        let server = (sum - 2.0 * probe_sum) / (count - 2.0 * probe_count) * 1e3;
        // The client's latencies add loopback HTTP and SSE parsing: 10% or 5 ms, whichever is larger.
        let tol = (0.1 * server).max(5.0);
        assert!((client_mean - server).abs() <= tol, "{name}: client {client_mean:.1} ms, server {server:.1} ms");
    }
    check_renders(&report);

    // --resume of a session stopped before its inf cell: the 2/s cell is kept, inf runs.
    let mut cut = report.clone();
    cut.complete = false;
    let inf = &mut cut.serve.as_mut().unwrap().cells[1];
    (inf.status, inf.attempts) = (CellOutcome::Pending, Vec::new());
    let partial = dir.path().join("partial.json");
    std::fs::write(&partial, serde_json::to_vec(&cut).unwrap()).unwrap();
    let again = sweep_config(&r.url, &r.metrics_url, &partial);
    let resume = Some(llm_decode_bench::session::resume::open(&partial, &again).expect("same settings"));
    let prior = llm_decode_bench::session::Prior { resume, ..Default::default() };
    let resumed =
        llm_decode_bench::session::start_continuing(again, prior).await.expect("preflight passes").join.await.unwrap();
    let cells = &resumed.serve.as_ref().unwrap().cells;
    assert_eq!(cells[0], s.cells[0], "the 2/s cell is recovered as it was");
    assert_eq!((cells[1].status, cells[1].attempts.len()), (CellOutcome::Measured, 1), "inf ran once");
    let text = metrics_text(&client(), &r.metrics_url).await;
    let reprobed = resumed.serve.as_ref().and_then(|s| s.token_ids).map_or(0, |t| t.accepted);
    let more = prompt_tokens + (u64::from(N) * INPUT) as f64 + f64::from(reprobed) + reuse[0];
    assert_eq!(reprobed, probe_served, "the resumed session probes again");
    assert_eq!(sample_value(&text, "vllm:prompt_tokens_total"), Some(more), "only the inf cell's load and probes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulator_refuses_out_of_vocabulary_token_ids_as_vllm_does() {
    let c = cluster(1, 25.0, |_| {}).await;
    let url = format!("{}/v1/completions", c.info().replicas[0].url);
    let body = json!({"prompt": [1, 2, 999_999], "max_tokens": 4, "stream": true});
    let s = stream(&client(), &url, &[], &body, Duration::from_secs(10)).await;
    assert_eq!(s.status, 400);
    let err: Value = serde_json::from_str(&s.error_body).unwrap();
    assert_eq!(err["error"]["message"], "Token id 999999 is out of vocabulary");
    assert_eq!((err["error"]["type"].clone(), err["error"]["code"].clone()), (json!("BadRequestError"), json!(400)));
    let ok = json!({"prompt": [1000, 2000, 31_999], "max_tokens": 4, "ignore_eos": true, "stream": true,
        "stream_options": {"include_usage": true}});
    let s = stream(&client(), &url, &[], &ok, Duration::from_secs(10)).await;
    assert_eq!(s.status, 200);
    assert_eq!(s.chunks.iter().rev().find_map(|c| c.prompt_tokens), Some(3), "prompt tokens = ids sent");
}

/// The serve sweep of issue 20 (`--max-concurrency 1,4 --request-rate 4,inf`) against the
/// simulator's llama.cpp mode on loopback, which closes the connection after every stream and
/// puts `usage` on the finish chunk: every request completes (no `connect` errors), each
/// attempt's output tokens equal the server's `tokens_predicted_total` delta exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llamacpp_serve_sweep_counts_every_token_once() {
    let n = 32;
    let c = common::llamacpp_cluster(1, 25.0, |cfg| cfg.slot_ctx = Some(8192)).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("serve.json");
    let r = &c.info().replicas[0];
    let cfg = RunConfig {
        plans: vec![PlanKind::Serve],
        rates: vec![Rate::PerSecond(40.0), Rate::Inf],
        serve: ServeConfig {
            num_prompts: n,
            output_len: OUTPUT,
            seed: 7,
            range_ratio: RangeRatio::FIXED,
            goodput: None,
            dataset: None,
            prefix_repetition: None,
            trace: None,
        },
        ..config(&r.url, &r.metrics_url, &out, vec![INPUT], vec![1, 4])
    };
    let report = start(cfg).await.expect("preflight passes").join.await.unwrap();
    validate(&out);
    assert!(report.complete);
    let s = report.serve.as_ref().expect("a serve section");
    assert_eq!(s.cells.len(), 4);
    for cell in &s.cells {
        let a = last(cell);
        assert!(a.errors.is_empty(), "{}: {:?}", cell.request_rate, a.errors);
        assert_eq!((a.metrics.completed, a.metrics.failed), (u64::from(n), 0));
        assert_eq!(a.metrics.total_output_tokens, u64::from(n) * OUTPUT, "counted once, not twice");
        let check = a.server_tokens.as_ref().expect("the server's count");
        assert_eq!(check.counter, "llamacpp:tokens_predicted_total");
        assert!(check.equal, "{check:?}");
        assert_eq!(check.server_output_tokens, (u64::from(n) * OUTPUT) as f64);
    }
}

/// A server that refuses every completion with HTTP 429: each serve cell's vocabulary probe is
/// refused (tried again per cell, never cached), its attempt errored under `rate_limited` with
/// the server's reason, and the log line counts that one error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_probe_is_filed_as_rate_limited_in_every_cell() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("refused.json");
    let path = out.clone();
    let report = common::paused(move || async move {
        let c = common::inproc_cluster(1, 25.0, |cfg| cfg.faults = "http429=1".parse().unwrap());
        let r = &c.info().replicas[0];
        let mut cfg = sweep_config(&r.url, &r.metrics_url, &path);
        cfg.serve.goodput = None;
        common::run_inproc(cfg, &c).await
    })
    .await;
    let s = report.serve.as_ref().expect("a serve section");
    assert!(s.token_ids.is_none(), "no probe succeeded");
    for cell in &s.cells {
        let a = last(cell);
        assert_eq!(a.status, AttemptStatus::Errored, "{}", cell.request_rate);
        let kinds: Vec<_> = a.errors.keys().copied().collect();
        assert_eq!(kinds, [llm_decode_bench::load::sample::ErrorKind::RateLimited], "{:?}", a.errors);
        let reason = a.error_examples.values().next().expect("the reason");
        assert!(reason.contains("HTTP 429"), "{reason}");
    }
}
