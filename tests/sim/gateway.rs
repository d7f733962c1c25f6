//! End-to-end tests of the simulated gateway's routing strategies and counters.

use crate::common;

use common::*;
use std::collections::HashMap;
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

fn pod(s: &Streamed) -> String {
    s.headers.get("target-pod").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string()
}

#[tokio::test]
async fn chat_through_gateway_with_prefix_cache_names_its_pod() {
    let c = cluster(2, 50.0, |_| {}).await;
    let url = format!("{}/v1/chat/completions", c.info().gateway.url);
    let s = stream(&client(), &url, &[("routing-strategy", "prefix-cache")], &chat_body("hello", 32), T).await;
    assert_eq!(s.status, 200);
    assert!(s.done);
    assert_eq!(s.completion_tokens(), Some(32));
    assert!(pod(&s).starts_with("sim-"));
    assert_eq!(s.headers.get("routing-strategy").unwrap(), "prefix-cache");
    let m = metrics_text(&client(), &c.info().gateway.metrics_url).await;
    for family in [
        "aibrix_prefix_cache_routing_decisions_total",
        "aibrix_prefix_cache_routing_selection_total",
        "aibrix_prefix_cache_load_imbalance_total",
        "gateway_request_total",
    ] {
        assert!(m.contains(family), "{family} missing from gateway metrics");
    }
}

#[tokio::test]
async fn prefix_cache_keeps_each_family_on_one_replica() {
    let c = cluster(2, 50.0, |_| {}).await;
    let http = client();
    let url = format!("{}/v1/completions", c.info().gateway.url);
    let mut owners: HashMap<usize, Vec<String>> = HashMap::new();
    for round in 0..4 {
        for family in 0..4 {
            let prompt = format!("{}{}", family_text(family, 200), round);
            let s = stream(&http, &url, &[("routing-strategy", "prefix-cache")], &completion_body(&prompt, 2), T).await;
            owners.entry(family).or_default().push(pod(&s));
        }
    }
    for (family, pods) in owners {
        assert!(pods.iter().all(|p| *p == pods[0]), "family {family} moved: {pods:?}");
    }
    let m = metrics_text(&http, &c.info().gateway.metrics_url).await;
    let matched = sample_value(&m, "aibrix_prefix_cache_routing_selection_total").unwrap();
    assert_eq!(matched, 16.0);
    assert!(m.contains("match_percent_bucket=\"76-100\"} 12.0"), "{m}");
}

#[tokio::test]
async fn least_request_balances_concurrent_requests() {
    // Every stream stalls (open and silent) after its first tokens, so every request is still
    // in flight at the gateway when the next one is routed: requests are sent one after the
    // other, each once the previous one's answer began, and the split depends on no timing.
    let c = cluster(2, 5.0, |cfg| cfg.faults = "stall=1".parse().unwrap()).await;
    let http = client();
    let url = format!("{}/v1/completions", c.info().gateway.url);
    let mut open = Vec::new();
    for i in 0..16 {
        let req = http.post(&url).header("routing-strategy", "least-request");
        let resp = req.json(&completion_body(&format!("q{i}"), 40)).send().await.expect("request sent");
        assert_eq!(resp.status(), 200);
        open.push(resp);
    }
    let pods: Vec<String> =
        open.iter().map(|r| r.headers().get("target-pod").and_then(|v| v.to_str().ok()).unwrap_or("").into()).collect();
    let mut split: HashMap<&str, usize> = HashMap::new();
    for p in &pods {
        *split.entry(p.as_str()).or_default() += 1;
    }
    assert_eq!(split.len(), 2, "{split:?}");
    assert!(split.values().all(|n| *n == 8), "{split:?}");
    assert!(pods.windows(2).all(|w| w[0] != w[1]), "each request goes to the less loaded pod: {pods:?}");
    let m = metrics_text(&http, &c.info().gateway.metrics_url).await;
    assert_eq!(sample_value(&m, "gateway_in_flight_requests"), Some(16.0), "all 16 still in flight");
}

#[tokio::test]
async fn random_spreads_over_replicas() {
    let c = cluster(2, 50.0, |_| {}).await;
    let http = client();
    let url = format!("{}/v1/completions", c.info().gateway.url);
    let mut split: HashMap<String, usize> = HashMap::new();
    for i in 0..40 {
        let s = stream(&http, &url, &[("routing-strategy", "random")], &completion_body(&format!("r{i}"), 1), T).await;
        *split.entry(pod(&s)).or_default() += 1;
    }
    assert_eq!(split.len(), 2, "{split:?}");
    assert!(split.values().all(|n| *n >= 8), "{split:?}");
    let m = metrics_text(&http, &c.info().gateway.metrics_url).await;
    assert!(!m.contains("aibrix_"), "prefix-cache families appear only once that router is used");
    assert_eq!(sample_value(&m, "gateway_request_total"), Some(40.0));
}

#[tokio::test]
async fn unknown_strategy_is_a_400() {
    let c = cluster(2, 50.0, |_| {}).await;
    let url = format!("{}/v1/completions", c.info().gateway.url);
    let s = stream(&client(), &url, &[("routing-strategy", "fastest")], &completion_body("x", 1), T).await;
    assert_eq!(s.status, 400);
    assert!(s.headers.contains_key("x-error-routing"));
}

#[tokio::test]
async fn without_a_strategy_no_pod_is_named() {
    let c = cluster(2, 50.0, |_| {}).await;
    let url = format!("{}/v1/completions", c.info().gateway.url);
    let s = stream(&client(), &url, &[], &completion_body("x", 3), T).await;
    assert_eq!(s.completion_tokens(), Some(3));
    assert!(s.headers.get("target-pod").is_none());
}
