//! End-to-end tests of the simulated gateway's vllm-router and sglang-router modes: usage
//! stripping, headers, policies, and metric pages the benchmark recognises.

use crate::common;

use common::*;
use llm_decode_bench::metrics::gateway::{GatewayDialect, per_worker_requests};
use llm_decode_bench::metrics::prom::Scrape;
use llm_decode_bench::sim::Cluster;
use llm_decode_bench::sim::gateway::{GatewayMode, RouterPolicy};
use serde_json::Value;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(30);

async fn router_cluster(mode: GatewayMode, policy: RouterPolicy) -> Cluster {
    cluster(2, 50.0, |c| {
        c.gateway_mode = mode;
        c.router_policy = policy;
    })
    .await
}

/// Requests replica `i` has finished, from its own engine counters.
fn served(c: &Cluster, i: usize) -> u64 {
    c.replica_stats(i).map_or(0, |s| s.finished_stop + s.finished_length + s.finished_abort)
}

/// Waits until the replicas have finished `total` requests between them; returns each one's count.
async fn wait_served(c: &Cluster, total: u64) -> Vec<u64> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let counts: Vec<u64> = (0..c.info().replicas.len()).map(|i| served(c, i)).collect();
        if counts.iter().sum::<u64>() >= total || Instant::now() > deadline {
            return counts;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Sends one streamed request through the gateway and tells which replica served it (by the
/// change of the replicas' own counters, as the benchmark must do behind these routers).
async fn send_and_attribute(c: &Cluster, url: &str, body: &Value, sent_before: u64) -> (Streamed, usize) {
    let before = wait_served(c, sent_before).await;
    let s = stream(&client(), url, &[], body, T).await;
    let after = wait_served(c, sent_before + 1).await;
    let worker = (0..after.len()).find(|&i| after[i] > before[i]).expect("a replica served the request");
    (s, worker)
}

/// Checks the router behaviour every streamed answer must show.
fn assert_router_stream(s: &Streamed, tokens: u64) {
    assert_eq!(s.status, 200, "{}", s.error_body);
    assert!(s.done, "no [DONE]");
    assert_eq!(s.malformed, 0);
    let with_usage: Vec<usize> = (0..s.chunks.len()).filter(|&i| s.chunks[i].completion_tokens.is_some()).collect();
    assert_eq!(with_usage, vec![s.chunks.len() - 1], "usage must come only in the final chunk");
    let last = s.chunks.last().expect("chunks");
    assert!(!last.has_choices, "the final chunk is the usage-only chunk");
    assert_eq!(s.completion_tokens(), Some(tokens));
    for h in ["target-pod", "target-pod-ip", "routing-strategy", "x-worker-url"] {
        assert!(s.headers.get(h).is_none(), "{h} must not be sent");
    }
    let id = s.headers.get("x-request-id").and_then(|v| v.to_str().ok()).expect("x-request-id");
    let groups: Vec<usize> = id.split('-').map(str::len).collect();
    assert_eq!(groups, vec![8, 4, 4, 4, 12], "{id}");
    assert!(id.chars().all(|ch| ch == '-' || ch.is_ascii_hexdigit()), "{id}");
}

async fn scrape(c: &Cluster) -> (Scrape, String) {
    let text = metrics_text(&client(), &c.info().gateway.metrics_url).await;
    (Scrape::parse(&text).expect("router page parses"), text)
}

#[tokio::test]
async fn vllm_router_strips_continuous_usage_and_names_no_worker() {
    let c = router_cluster(GatewayMode::VllmRouter, RouterPolicy::RoundRobin).await;
    let http = client();
    let body = chat_body("hello router", 24);
    let direct = stream(&http, &format!("{}/v1/chat/completions", c.info().replicas[0].url), &[], &body, T).await;
    assert!(direct.chunks.iter().filter(|ch| ch.completion_tokens.is_some()).count() > 2, "replica streams usage");
    let url = format!("{}/v1/chat/completions", c.info().gateway.url);
    let headers = [("routing-strategy", "bogus"), ("x-request-id", "client-chosen")];
    let s = stream(&http, &url, &headers, &body, T).await;
    assert_router_stream(&s, 24);
    assert_ne!(s.headers.get("x-request-id").unwrap(), "client-chosen");
    let again = stream(&http, &url, &[], &body, T).await;
    assert_ne!(again.headers.get("x-request-id"), s.headers.get("x-request-id"));
}

#[tokio::test]
async fn vllm_router_round_robin_alternates_and_page_is_recognised() {
    let c = router_cluster(GatewayMode::VllmRouter, RouterPolicy::RoundRobin).await;
    let url = format!("{}/v1/completions", c.info().gateway.url);
    let mut workers = Vec::new();
    for i in 0..6u64 {
        let (s, w) = send_and_attribute(&c, &url, &completion_body(&format!("rr {i}"), 4), i).await;
        assert_router_stream(&s, 4);
        workers.push(w);
    }
    assert!(workers.windows(2).all(|p| p[0] != p[1]), "round robin must alternate: {workers:?}");
    assert_eq!(wait_served(&c, 6).await, vec![3, 3]);
    let (page, text) = scrape(&c).await;
    assert_eq!(GatewayDialect::detect(&page), GatewayDialect::VllmRouter, "{text}");
    let per_worker = per_worker_requests(&page, GatewayDialect::VllmRouter);
    assert_eq!(per_worker.values().sum::<f64>(), 6.0, "{text}");
    let replica_urls: Vec<&str> = c.info().replicas.iter().map(|r| r.url.as_str()).collect();
    assert!(per_worker.keys().all(|w| replica_urls.contains(&w.as_str())), "{per_worker:?}");
    assert_eq!(page.sum_where("vllm_router_requests_total", "route", "/v1/completions"), Some(6.0));
    assert_eq!(page.sum("vllm_router_policy_decisions_total"), Some(6.0));
    assert_eq!(page.sum("vllm_router_worker_health"), Some(2.0));
    assert_eq!(page.sum("vllm_router_running_requests"), Some(0.0));
}

#[tokio::test]
async fn vllm_router_over_counting_is_opt_in() {
    let c = cluster(2, 50.0, |c| {
        c.gateway_mode = GatewayMode::VllmRouter;
        c.router_overcount = true;
    })
    .await;
    let url = format!("{}/v1/completions", c.info().gateway.url);
    for i in 0..3 {
        let s = stream(&client(), &url, &[], &completion_body(&format!("oc {i}"), 2), T).await;
        assert_eq!(s.status, 200);
    }
    let (page, _) = scrape(&c).await;
    assert_eq!(per_worker_requests(&page, GatewayDialect::VllmRouter).values().sum::<f64>(), 6.0);
    assert_eq!(wait_served(&c, 3).await.iter().sum::<u64>(), 3);
}

#[tokio::test]
async fn sglang_router_stream_and_extra_endpoints() {
    let c = router_cluster(GatewayMode::SglangRouter, RouterPolicy::RoundRobin).await;
    let (http, gw) = (client(), c.info().gateway.url.clone());
    let chat = format!("{gw}/v1/chat/completions");
    let s = stream(&http, &chat, &[("routing-strategy", "bogus")], &chat_body("hi", 12), T).await;
    assert_router_stream(&s, 12);
    let done = stream(&http, &format!("{gw}/v1/completions"), &[], &completion_body("x", 5), T).await;
    assert_router_stream(&done, 5);
    let models: Value = http.get(format!("{gw}/v1/models")).send().await.unwrap().json().await.unwrap();
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], "unknown");
    let tok = http.post(format!("{gw}/tokenize")).json(&serde_json::json!({"prompt": "hi"})).send().await.unwrap();
    assert_eq!(tok.status().as_u16(), 404);
    let loads: Value = http.get(format!("{gw}/get_loads")).send().await.unwrap().json().await.unwrap();
    let loads = loads["workers"].as_array().expect("workers array");
    let urls: Vec<&str> = loads.iter().filter_map(|w| w["worker"].as_str()).collect();
    let replica_urls: Vec<&str> = c.info().replicas.iter().map(|r| r.url.as_str()).collect();
    assert_eq!(urls, replica_urls);
    assert!(loads.iter().all(|w| w["load"].as_u64() == Some(0)), "{loads:?}");
    let workers: Value = http.get(format!("{gw}/workers")).send().await.unwrap().json().await.unwrap();
    assert_eq!(workers["total"], 2);
    assert_eq!(workers["workers"][1]["url"], replica_urls[1]);
}

#[tokio::test]
async fn sglang_router_page_is_recognised_without_worker_on_selections() {
    let c = router_cluster(GatewayMode::SglangRouter, RouterPolicy::Random).await;
    let url = format!("{}/v1/completions", c.info().gateway.url);
    for i in 0..4 {
        let s = stream(&client(), &url, &[], &completion_body(&format!("sg {i}"), 2), T).await;
        assert_eq!(s.status, 200);
    }
    let (page, text) = scrape(&c).await;
    assert_eq!(GatewayDialect::detect(&page), GatewayDialect::SglangRouter, "{text}");
    assert!(per_worker_requests(&page, GatewayDialect::SglangRouter).is_empty());
    assert_eq!(page.sum("smg_worker_selection_total"), Some(4.0));
    assert_eq!(page.label_values("smg_worker_selection_total", "policy"), vec!["random".to_string()]);
    assert!(page.samples("smg_worker_selection_total").all(|s| !s.labels.contains_key("worker")));
    assert_eq!(page.sum_where("smg_http_requests_total", "path", "/v1/completions"), Some(4.0));
    assert_eq!(page.sum_where("smg_router_requests_total", "endpoint", "completions"), Some(4.0));
    assert_eq!(page.sum("smg_worker_health"), Some(2.0));
    assert_eq!(page.label_values("smg_worker_requests_active", "worker").len(), 2);
}

#[tokio::test]
async fn cache_aware_keeps_each_family_on_one_worker() {
    let c = router_cluster(GatewayMode::VllmRouter, RouterPolicy::CacheAware).await;
    let url = format!("{}/v1/completions", c.info().gateway.url);
    let mut owners: Vec<Vec<usize>> = vec![Vec::new(); 4];
    let mut sent = 0;
    for round in 0..4 {
        for (family, owner) in owners.iter_mut().enumerate() {
            let prompt = format!("{}{round}", family_text(family, 200));
            let body = completion_body(&prompt, 2);
            let (s, w) = send_and_attribute(&c, &url, &body, sent).await;
            assert_eq!(s.status, 200);
            owner.push(w);
            sent += 1;
        }
    }
    for (family, ws) in owners.iter().enumerate() {
        assert!(ws.iter().all(|w| *w == ws[0]), "family {family} moved: {ws:?}");
    }
    let (page, text) = scrape(&c).await;
    assert_eq!(page.sum("vllm_router_cache_hits_total"), Some(12.0), "{text}");
    assert_eq!(page.sum("vllm_router_cache_misses_total"), Some(4.0), "{text}");
}
