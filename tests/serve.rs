//! End-to-end: the serve experiment (`run --plan serve`) against the simulator at its default
//! (real-time) engine model, checked against the simulator's own server-side record.

mod common;

use common::{client, cluster, config, metrics_text, sample_value, stream, validate};
use llm_decode_bench::config::serve::ServeConfig;
use llm_decode_bench::config::{PlanKind, Rate};
use llm_decode_bench::report::formats::{RenderSettings, ReportFormat};
use llm_decode_bench::report::serve::{ServeAttempt, ServeCellReport};
use llm_decode_bench::report::status::{AttemptStatus, CellOutcome};
use llm_decode_bench::session::start;
use llm_decode_bench::stats::Slo;
use serde_json::{Value, json};
use std::time::Duration;

const N: u32 = 8;
const INPUT: u64 = 200;
const OUTPUT: u64 = 24;

fn last(c: &ServeCellReport) -> &ServeAttempt {
    c.attempts.last().expect("an attempt")
}

/// Mean of a histogram from its `_sum` and `_count`, ms.
fn hist_mean_ms(text: &str, name: &str) -> f64 {
    let sum = sample_value(text, &format!("{name}_sum")).expect("histogram sum");
    let count = sample_value(text, &format!("{name}_count")).expect("histogram count");
    sum / count * 1e3
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_sweep_matches_the_servers_own_record() {
    let c = cluster(1, 1.0, |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("serve.json");
    let r = &c.info().replicas[0];
    let slo = Slo { ttft: Some(Duration::from_secs(10)), tpot: None, e2e: None };
    let mut cfg = config(&r.url, &r.metrics_url, &out, vec![INPUT], vec![4]);
    cfg.plans = vec![PlanKind::Serve];
    cfg.rates = vec![Rate::PerSecond(2.0), Rate::Inf];
    cfg.serve = ServeConfig { num_prompts: N, output_len: OUTPUT, seed: 7, goodput: Some(slo) };
    let report = start(cfg).await.expect("preflight passes").join.await.unwrap();
    assert!(validate(&out) == report, "the file holds the final report");
    assert!(report.complete);
    let s = report.serve.as_ref().expect("a serve section");
    assert_eq!(s.request_rates, ["2", "inf"]);
    assert_eq!(s.goodput_slo.and_then(|g| g.ttft_ms), Some(10_000.0), "the SLO used is recorded");
    assert_eq!(s.cells.len(), 2, "one cell per rate");

    let mut client_ttft = 0.0;
    let mut client_e2el = 0.0;
    let (mut completed, mut output) = (0, 0);
    for cell in &s.cells {
        assert_eq!(cell.status, CellOutcome::Measured, "{}", cell.request_rate);
        let m = &last(cell).metrics;
        assert_eq!(last(cell).status, AttemptStatus::Measured);
        assert_eq!((m.completed, m.failed), (u64::from(N), 0), "{}", cell.request_rate);
        assert_eq!(m.total_input_tokens, u64::from(N) * INPUT);
        assert_eq!(m.total_output_tokens, u64::from(N) * OUTPUT, "ignore_eos: exactly max_tokens each");
        assert!((m.output_throughput * m.duration_s - m.total_output_tokens as f64).abs() < 1e-6);
        assert_eq!(m.request_goodput, Some(m.request_throughput), "every request within 10 s");
        let (ttft, tpot, itl) = (m.median_ttft_ms.unwrap(), m.median_tpot_ms.unwrap(), m.median_itl_ms.unwrap());
        assert!(ttft > 0.0 && tpot > 0.0 && itl > 0.0 && m.std_e2el_ms.is_some() && m.p99_itl_token_ms.is_some());
        client_ttft += m.mean_ttft_ms.unwrap() * m.completed as f64;
        client_e2el += m.mean_e2el_ms.unwrap() * m.completed as f64;
        (completed, output) = (completed + m.completed, output + m.total_output_tokens);
    }
    let paced = &s.cells[0];
    let d = last(paced).metrics.duration_s;
    assert!(d >= f64::from(N - 1) / 2.0, "arrivals at 2/s spread {N} requests over {d} s");
    let sent: Vec<f64> = last(paced).request_samples.iter().map(|r| r.sent_ms).collect();
    assert!(sent[sent.len() - 1] - sent[0] >= 1500.0, "sends are spread out: {sent:?}");
    let burst = last(&s.cells[1]).request_samples.iter().map(|r| r.sent_ms).fold(0.0, f64::max);
    assert!(burst < d * 1e3 / 2.0, "at inf the sends are not paced");

    let text = metrics_text(&client(), &r.metrics_url).await;
    assert_eq!(
        sample_value(&text, "vllm:prompt_tokens_total"),
        Some((2 * N as u64 * INPUT) as f64),
        "exact prompt lengths"
    );
    assert_eq!(sample_value(&text, "vllm:generation_tokens_total"), Some(output as f64));
    assert_eq!(sample_value(&text, "vllm:request_success_total"), Some(completed as f64));
    let n = completed as f64;
    for (name, client_mean) in
        [("vllm:time_to_first_token_seconds", client_ttft / n), ("vllm:e2e_request_latency_seconds", client_e2el / n)]
    {
        let server = hist_mean_ms(&text, name);
        // The client's latencies add loopback HTTP and SSE parsing: 10% or 5 ms, whichever is larger.
        let tol = (0.1 * server).max(5.0);
        assert!((client_mean - server).abs() <= tol, "{name}: client {client_mean:.1} ms, server {server:.1} ms");
    }

    let rendered = ReportFormat::Text.render(&report, RenderSettings { ascii: true, dim_ansi: false });
    assert!(
        rendered.contains("Serve output tok/s") && rendered.contains("2/s") && rendered.contains("inf"),
        "{rendered}"
    );
    let rows: Value = serde_json::from_str(&ReportFormat::Vllm.render(&report, RenderSettings::default())).unwrap();
    let rows: Vec<&Value> = rows.as_array().unwrap().iter().filter(|r| r["kind"] == "serve").collect();
    assert_eq!(rows.len(), 2);
    let m = &last(&s.cells[1]).metrics;
    assert_eq!((rows[1]["request_rate"].clone(), rows[0]["request_rate"].clone()), (json!("inf"), json!(2.0)));
    assert_eq!(rows[1]["completed"], json!(m.completed));
    assert_eq!(rows[1]["median_tpot_ms"], json!(m.median_tpot_ms));
    assert_eq!(rows[1]["p99_itl_ms"], json!(m.p99_itl_ms));
    assert_eq!(rows[1]["max_concurrency"], json!(4));
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
