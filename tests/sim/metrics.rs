//! Every simulated `/metrics` page parses, carries the documented names, and is read back by
//! the crate's own dialect detection.

use crate::common;

use common::*;
use llm_decode_bench::metrics::prom::Scrape;
use llm_decode_bench::metrics::{EngineDialect, EngineSample, GatewayDialect};
use llm_decode_bench::sim::expo::MetricsDialect;
use std::time::Duration;

const VLLM_NAMES: &[&str] = &[
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",
    "vllm:prefix_cache_queries_total",
    "vllm:prefix_cache_hits_total",
    "vllm:num_preemptions_total",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:request_success_total",
    "vllm:time_to_first_token_seconds_bucket",
    "vllm:inter_token_latency_seconds_bucket",
    "vllm:cache_config_info",
    "vllm:generation_tokens_created",
];

/// prometheus-parse accepts the page (it skips `name:with:colons` samples, which is why the
/// crate reads pages with its own parser), and the crate's strict parser reads every line.
fn parse_both(text: &str) -> Scrape {
    let lines = text.lines().map(|l| Ok(l.to_string()));
    prometheus_parse::Scrape::parse(lines).expect("prometheus-parse accepts the page");
    Scrape::parse_strict(text).expect("every line parses")
}

#[tokio::test]
async fn vllm_replica_page_has_every_name_with_labels() {
    let c = cluster(2, 50.0, |_| {}).await;
    let http = client();
    stream(
        &http,
        &format!("{}/v1/completions", c.info().replicas[0].url),
        &[],
        &completion_body("warm", 3),
        Duration::from_secs(10),
    )
    .await;
    for r in &c.info().replicas {
        let text = metrics_text(&http, &r.metrics_url).await;
        let scrape = parse_both(&text);
        for name in VLLM_NAMES {
            assert!(scrape.has(name), "{name} missing on {}", r.name);
        }
        let s = scrape.samples("vllm:num_requests_running").next().unwrap();
        assert_eq!(s.labels.get("engine").map(String::as_str), Some("0"));
        assert!(s.labels.contains_key("model_name"));
        let sample = EngineSample::detect(&scrape);
        assert_eq!(sample.dialect, EngineDialect::VllmV1);
        assert_eq!(sample.kv_capacity_tokens, Some(360_448.0));
    }
    let first =
        EngineSample::detect(&Scrape::parse(&metrics_text(&http, &c.info().replicas[0].metrics_url).await).unwrap());
    assert_eq!(first.generation_tokens, Some(3.0));
}

#[tokio::test]
async fn sglang_dialect_replica_is_detected_as_sglang() {
    let c = cluster(2, 50.0, |cfg| cfg.dialects = vec![MetricsDialect::Vllm, MetricsDialect::Sglang]).await;
    let http = client();
    let b = &c.info().replicas[1];
    stream(&http, &format!("{}/v1/completions", b.url), &[], &completion_body("warm", 5), Duration::from_secs(10))
        .await;
    let scrape = parse_both(&metrics_text(&http, &b.metrics_url).await);
    let sample = EngineSample::detect(&scrape);
    assert_eq!(sample.dialect, EngineDialect::Sglang);
    assert_eq!(sample.kv_capacity_tokens, Some(360_448.0));
    assert_eq!(sample.generation_tokens, Some(5.0), "counted when the request finished");
    let a = parse_both(&metrics_text(&http, &c.info().replicas[0].metrics_url).await);
    assert_eq!(EngineSample::detect(&a).dialect, EngineDialect::VllmV1);
}

#[tokio::test]
async fn gateway_page_is_detected_as_aibrix() {
    let c = cluster(2, 50.0, |_| {}).await;
    let http = client();
    let url = format!("{}/v1/completions", c.info().gateway.url);
    stream(
        &http,
        &url,
        &[("routing-strategy", "prefix-cache")],
        &completion_body(&family_text(1, 100), 2),
        Duration::from_secs(10),
    )
    .await;
    let scrape = parse_both(&metrics_text(&http, &c.info().gateway.metrics_url).await);
    assert_eq!(GatewayDialect::detect(&scrape), GatewayDialect::Aibrix);
    let workers = llm_decode_bench::metrics::gateway::per_worker_requests(&scrape, GatewayDialect::Aibrix);
    assert_eq!(workers.values().sum::<f64>(), 1.0);
}
