//! Tests of the routing phase entry: SLO counting, request accounting, attribution.

use super::*;
use crate::experiment::routing::plan::phases;
use crate::load::sample::{ErrorKind, Mark, Outcome};
use std::time::Duration;
use tokio::time::Instant;

fn sample(origin: Instant, ttft_ms: u64, family: u32, pod: Option<&str>) -> RequestSample {
    let mut s = RequestSample::new(0, origin);
    s.marks = vec![Mark { at_us: ttft_ms * 1000, tokens: 1 }, Mark { at_us: ttft_ms * 1000 + 100_000, tokens: 11 }];
    s.output_tokens = 11;
    s.prompt_tokens = Some(5000 + u64::from(family));
    s.ended_at = origin + Duration::from_millis(ttft_ms + 100);
    s.outcome = Outcome::Completed(None);
    s.token_source = TokenSource::OpenaiContinuousUsage;
    s.tag = family;
    s.served_by = pod.map(str::to_string);
    s
}

fn replicas() -> Vec<ReplicaRef> {
    vec![
        ReplicaRef { name: "a".into(), base: "http://h:1".into() },
        ReplicaRef { name: "b".into(), base: "http://h:2".into() },
    ]
}

fn entry(samples: &[RequestSample], planned: u32) -> Value {
    let cfg = RoutingConfig::default();
    let spec = phases(&cfg).into_iter().find(|p| p.name == "r1-hot90-prefix-cache").unwrap();
    let reps = replicas();
    let d = PhaseData {
        spec: &spec,
        cfg: &cfg,
        repeat: 104,
        setup: None,
        samples,
        planned,
        replicas: &reps,
        before: None,
        after: None,
        window: None,
        routing_deltas: None,
        started_at: 100.0,
        finished_at: 110.0,
        cache_reset: BTreeMap::new(),
    };
    phase_entry(&d)
}

#[test]
fn good_counts_requests_within_the_slo_and_accounting_adds_up() {
    let o = Instant::now();
    let mut failed = RequestSample::new(0, o);
    failed.outcome = Outcome::Failed { kind: ErrorKind::Overloaded, detail: "503".into() };
    failed.tag = 2;
    let mut cut = sample(o, 500, 1, Some("a"));
    cut.outcome = Outcome::Cut;
    let samples =
        vec![sample(o, 1000, 0, Some("a")), sample(o, 1500, 0, Some("b")), sample(o, 3000, 1, Some("b")), failed, cut];
    let v = entry(&samples, 6);
    assert_eq!(v["good"], 2, "TTFT 1 s and 1.5 s meet the 2 s SLO; 3 s does not");
    assert_eq!((v["success"].as_u64(), v["errors"].as_u64(), v["dropped"].as_u64()), (Some(3), Some(1), Some(2)));
    assert_eq!(v["requests"], 6);
    assert_eq!(v["errors_by_kind"]["overloaded"], 1);
    assert_eq!(v["families"]["0"]["requests"], 2);
    assert!((v["ttft"]["p50"].as_f64().unwrap() - 1.5).abs() < 1e-9);
    assert_eq!(v["input_tokens_range"], json!([5000, 5001]));
    assert!((v["output_tokens_per_second"].as_f64().unwrap() - 4.4).abs() < 1e-9, "44 tokens over 10 s");
}

#[test]
fn header_attribution_fills_replicas_and_families() {
    let o = Instant::now();
    let samples =
        vec![sample(o, 10, 0, Some("a")), sample(o, 10, 0, Some("http://h:2/v1")), sample(o, 10, 3, Some("b"))];
    let v = entry(&samples, 3);
    assert_eq!(v["attribution"], "response_header");
    assert_eq!(v["gateway_verified_requests"], 3);
    assert_eq!(v["replicas"]["a"]["requests"], 1);
    assert_eq!(v["replicas"]["b"]["requests"], 2);
    assert_eq!(v["replicas"]["b"]["family_counts"], json!({"0": 1, "3": 1}));
    assert_eq!(v["routing_counter_deltas"], Value::Null, "no gateway metrics");
}

#[test]
fn without_headers_or_counters_attribution_is_unavailable_not_guessed() {
    let o = Instant::now();
    let samples = vec![sample(o, 10, 0, None), sample(o, 10, 1, None)];
    let v = entry(&samples, 2);
    assert_eq!(v["attribution"], "unavailable");
    assert_eq!(v["family_attribution_available"], false);
    assert_eq!(v["gateway_verified_requests"], 0);
    assert_eq!(v["replicas"]["a"]["family_counts"], Value::Null);
    assert_eq!(v["replicas"]["a"]["requests"], Value::Null);
}
