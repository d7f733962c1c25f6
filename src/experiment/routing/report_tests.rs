//! Tests of the routing phase entry: SLO counting, request accounting, attribution, and the
//! field layout of `tests/fixtures/seed_002.json`.

use super::*;
use crate::config::routing::RoutingConfig;
use crate::experiment::routing::attribution::ReplicaRef;
use crate::experiment::routing::plan::phases;
use crate::load::sample::{ErrorKind, Mark, Outcome};
use crate::metrics::gateway::CounterDelta;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::time::Instant;

fn sample(origin: Instant, ttft_ms: u64, family: u32, pod: Option<&str>) -> RequestSample {
    let mut s = RequestSample::new(0, origin);
    s.marks =
        vec![Mark { at_us: ttft_ms * 1000, tokens: 1 }, Mark { at_us: ttft_ms * 1000 + 100_000, tokens: 11 }].into();
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

fn entry(samples: &[RequestSample], planned: u32) -> RoutingPhase {
    entry_with(samples, planned, None)
}

fn entry_with(samples: &[RequestSample], planned: u32, setup: Option<&Setup>) -> RoutingPhase {
    let cfg = RoutingConfig::default();
    let spec = phases(&cfg).into_iter().find(|p| p.name == "r1-hot90-prefix-cache").unwrap();
    let reps = replicas();
    let d = PhaseData {
        spec: &spec,
        cfg: &cfg,
        repeat: 104,
        setup,
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
    assert_eq!(v.good, 2, "TTFT 1 s and 1.5 s meet the 2 s SLO; 3 s does not");
    assert_eq!((v.success, v.errors, v.dropped), (3, 1, 2));
    assert_eq!(v.requests, 6);
    assert_eq!(v.errors_by_kind, BTreeMap::from([(ErrorKind::Overloaded, 1)]));
    assert_eq!(v.families[&0].requests, 2);
    assert!((v.ttft.p50.unwrap() - 1.5).abs() < 1e-9);
    assert_eq!(v.input_tokens_range, Some([5000, 5001]));
    assert!((v.output_tokens_per_second - 4.4).abs() < 1e-9, "44 tokens over 10 s");
    assert_eq!(v.status, AttemptStatus::Measured);
    let json = serde_json::to_value(&v).unwrap();
    assert_eq!(json["errors_by_kind"], json!({"overloaded": 1}), "kinds are keyed by their report name");
    assert_eq!(json["families"]["0"]["requests"], 2, "families are keyed by their number as a string");
}

#[test]
fn header_attribution_fills_replicas_and_families() {
    let o = Instant::now();
    let samples =
        vec![sample(o, 10, 0, Some("a")), sample(o, 10, 0, Some("http://h:2/v1")), sample(o, 10, 3, Some("b"))];
    let v = entry(&samples, 3);
    assert_eq!(v.attribution, Attribution::ResponseHeader);
    assert_eq!(v.gateway_verified_requests, 3);
    assert_eq!(v.replicas["a"].requests, Some(1));
    assert_eq!(v.replicas["b"].requests, Some(2));
    assert_eq!(v.replicas["b"].family_counts, Some(BTreeMap::from([(0, 1), (3, 1)])));
    assert_eq!(v.routing_counter_deltas, None, "no gateway metrics");
    assert_eq!(v.token_sources, [TokenSource::OpenaiContinuousUsage]);
}

#[test]
fn without_headers_or_counters_attribution_is_unavailable_not_guessed() {
    let o = Instant::now();
    let samples = vec![sample(o, 10, 0, None), sample(o, 10, 1, None)];
    let v = entry(&samples, 2);
    assert_eq!(v.attribution, Attribution::Unavailable);
    assert!(!v.family_attribution_available);
    assert_eq!(v.gateway_verified_requests, 0);
    let json = serde_json::to_value(&v).unwrap();
    assert_eq!(json["attribution"], "unavailable");
    assert_eq!(json["replicas"]["a"]["family_counts"], Value::Null, "null, not an empty map");
    assert_eq!(json["replicas"]["a"]["requests"], Value::Null);
    assert_eq!(json["replicas"]["a"]["gateway_outstanding_at_selection_peak"], Value::Null);
}

#[test]
fn only_failures_make_an_errored_phase() {
    let o = Instant::now();
    let mut failed = RequestSample::new(0, o);
    failed.outcome = Outcome::Failed { kind: ErrorKind::Connect, detail: "refused".into() };
    let v = entry(&[failed.clone(), failed], 2);
    assert_eq!((v.status, v.success, v.errors), (AttemptStatus::Errored, 0, 2));
    assert_eq!(v.ttft, PhaseLatency::default(), "no completed request, no percentiles");
    assert_eq!(v.input_tokens_range, None);
    assert_eq!(entry(&[], 2).status, AttemptStatus::Measured, "nothing failed");
}

#[test]
fn itl_is_per_token_over_completed_requests_in_seconds_beside_per_request_tpot() {
    let o = Instant::now();
    // 10 tokens in one chunk 100 ms after the first: ten 10 ms gaps.
    let chunked = sample(o, 10, 0, Some("a"));
    // One token per chunk, 40 ms apart: ten 40 ms gaps.
    let mut steady = sample(o, 10, 1, Some("b"));
    steady.marks = (0..11).map(|i| Mark { at_us: 10_000 + i * 40_000, tokens: i + 1 }).collect();
    steady.ended_at = o + Duration::from_millis(410);
    // A failed stream's gaps (1 s) are not counted.
    let mut failed = sample(o, 10, 2, None);
    failed.marks =
        failed.marks.iter().enumerate().map(|(i, m)| if i == 1 { Mark { at_us: 1_010_000, ..m } } else { m }).collect();
    failed.outcome = Outcome::Failed { kind: ErrorKind::Overloaded, detail: "503".into() };
    let v = entry(&[chunked.clone(), steady, failed], 3);
    let (p50, p99) = (v.itl.p50.unwrap(), v.itl.p99.unwrap());
    assert!((0.01..=0.04).contains(&p50), "p50 {p50} s between the two streams' gaps");
    assert!((p99 - 0.04).abs() < 1e-9, "p99 {p99} s: the steady stream, not the failed one's 1 s");
    assert!((v.tpot.p50.unwrap() - 0.025).abs() < 1e-9, "TPOT per request: 10 ms and 40 ms");
    let one = entry(&[chunked], 1);
    assert!((one.itl.p50.unwrap() - 0.01).abs() < 1e-9, "a chunk of k tokens counts k gaps of a k-th");
    let h = super::super::headline::headline(&one);
    assert!((h.itl_p50_ms.unwrap() - 10.0).abs() < 1e-6, "the headline's ITL in ms");
    assert!(crate::cell::headline::attempt_line(&h).contains("ITL p50 10 ms  TPOT p50 10 ms"));
    assert_eq!(entry(&[], 1).itl, PhaseLatency::default(), "no tokens, null percentiles");
    let json = serde_json::to_value(&one).unwrap();
    assert!(json["itl_s"]["p50"].as_f64().is_some_and(|x| x > 0.0));
}

fn hot_setup() -> Setup {
    let owners = BTreeMap::from([("a".to_string(), vec![0, 2, 4, 6]), ("b".to_string(), vec![1, 3, 5, 7])]);
    Setup { attempt: 2, family_map: vec![1, 0, 2, 3, 4, 5, 6, 7], owners, balanced: true }
}

#[test]
fn a_primed_phase_records_its_setup() {
    let v = entry_with(&[sample(Instant::now(), 10, 0, Some("a"))], 1, Some(&hot_setup()));
    let c = &v.config;
    assert_eq!((c.setup_attempt, c.balanced, c.priming_candidates), (Some(2), Some(true), Some(16)));
    assert_eq!(c.family_map.as_ref().map(|m| m[&0]), Some(1));
    assert_eq!(c.hot_initial_replica, Some(Some("b".to_string())), "family 0 uses candidate 1, primed on b");
    assert_eq!(v.initial_prefix_owners[&1], ["a"]);
    let unprimed = serde_json::to_value(entry(&[], 1)).unwrap();
    assert!(unprimed["config"].get("family_map").is_none(), "setup fields only for primed phases");
    assert_eq!(unprimed["initial_prefix_owners"], json!({}));
}

/// Every key path of a phase of the reference routing report (`tests/fixtures/seed_002.json`), with the keys of
/// maps (families, replicas, ...) written `*` and array elements `[]`.
const SEED_LAYOUT: &str = "cache_hit_ratio config config/count config/family_map config/family_map/* \
    config/hot_fraction config/hot_initial_replica config/initial_owners config/initial_owners/* config/output \
    config/phase config/priming_candidates config/repeat config/route config/rps config/scenario config/seed \
    config/setup_attempt dropped e2e e2e/p50 e2e/p95 e2e/p99 elapsed errors families families/* \
    families/*/requests families/*/ttft_p95 finished_at gateway_verified_requests good initial_prefix_owners \
    initial_prefix_owners/* input_tokens_range output_tokens_per_second phase planned replicas replicas/* \
    replicas/*/cache_hit_ratio replicas/*/cache_hit_tokens replicas/*/cache_queries_tokens \
    replicas/*/engine_completed replicas/*/family_counts replicas/*/family_counts/* \
    replicas/*/gateway_outstanding_at_selection_peak replicas/*/kv_usage_peak replicas/*/preemptions \
    replicas/*/requests replicas/*/running_peak replicas/*/waiting_peak requests route routing_counter_deltas \
    routing_counter_deltas/[]/delta routing_counter_deltas/[]/labels routing_counter_deltas/[]/labels/* \
    routing_counter_deltas/[]/name scenario started_at success tpot tpot/p50 tpot/p95 tpot/p99 ttft ttft/p50 \
    ttft/p95 ttft/p99";
/// The paths this tool writes beyond the seed's.
const EXTRA_LAYOUT: &str = "attribution cache_reset cache_reset/* caches_reset config/balanced error_examples error_examples/* errors_by_kind \
    errors_by_kind/* family_attribution_available itl_s itl_s/p50 itl_s/p95 itl_s/p99 schedule_lag_ms schedule_lag_ms/count schedule_lag_ms/max \
    schedule_lag_ms/mean schedule_lag_ms/min schedule_lag_ms/p50 schedule_lag_ms/p90 schedule_lag_ms/p95 \
    schedule_lag_ms/p99 owner_hit_ratio reconnects status token_sources";

/// Key paths of `v` under `prefix`, as in [`SEED_LAYOUT`].
fn key_paths(v: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    const MAPS: [&str; 10] = [
        "families",
        "replicas",
        "family_counts",
        "family_map",
        "initial_owners",
        "initial_prefix_owners",
        "labels",
        "cache_reset",
        "errors_by_kind",
        "error_examples",
    ];
    let is_map = MAPS.iter().any(|m| prefix.ends_with(m));
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                let key = if is_map { "*" } else { k.as_str() };
                let path = if prefix.is_empty() { key.to_string() } else { format!("{prefix}/{key}") };
                out.insert(path.clone());
                key_paths(x, &path, out);
            }
        }
        Value::Array(a) => a.iter().filter(|x| x.is_object()).for_each(|x| key_paths(x, &format!("{prefix}/[]"), out)),
        _ => {}
    }
}

#[test]
fn a_phase_keeps_every_field_of_the_seed_layout() {
    let o = Instant::now();
    let mut failed = RequestSample::new(0, o);
    failed.outcome = Outcome::Failed { kind: ErrorKind::Overloaded, detail: "503".into() };
    failed.scheduled_at = Some(o);
    let mut ok = sample(o, 10, 0, Some("a"));
    ok.scheduled_at = Some(o);
    let mut v = entry_with(&[ok, failed], 2, Some(&hot_setup()));
    let delta =
        CounterDelta { name: "x_total".into(), labels: [("k".into(), "v".into())].into(), delta: 1.0, reset: false };
    v.routing_counter_deltas = Some(vec![delta]);
    v.cache_reset = [("a".to_string(), "reset_prefix_cache".to_string())].into();
    let mut got = BTreeSet::new();
    key_paths(&serde_json::to_value(&v).unwrap(), "", &mut got);
    let want: BTreeSet<String> =
        SEED_LAYOUT.split_whitespace().chain(EXTRA_LAYOUT.split_whitespace()).map(String::from).collect();
    assert_eq!(got.difference(&want).collect::<Vec<_>>(), Vec::<&String>::new(), "paths not in the layout");
    assert_eq!(want.difference(&got).collect::<Vec<_>>(), Vec::<&String>::new(), "paths of the layout missing");
}

#[test]
fn built_phases_validate_against_the_schema() {
    use crate::report::json::SessionReport;
    use crate::report::tests_schema::{assert_valid, minimal_report};
    let o = Instant::now();
    let primed = entry_with(&[sample(o, 10, 0, Some("a")), sample(o, 3000, 1, None)], 3, Some(&hot_setup()));
    let unprimed = entry(&[sample(o, 10, 0, None)], 1);
    let report =
        SessionReport { phases: vec![primed.clone()], phase_history: vec![unprimed, primed], ..minimal_report() };
    let value = serde_json::to_value(&report).unwrap();
    assert_valid(&value);
    let back: SessionReport = serde_json::from_value(value).unwrap();
    assert_eq!(back, report, "phases read back unchanged");
}

#[test]
fn the_seed_layout_is_the_reference_reports_own() {
    let text = include_str!("../../../tests/fixtures/seed_002.json");
    let seed: Value = serde_json::from_str(text).expect("the reference routing report parses");
    let mut paths = BTreeSet::new();
    for phase in seed["phases"].as_array().expect("phases") {
        key_paths(phase, "", &mut paths);
    }
    let listed: BTreeSet<String> = SEED_LAYOUT.split_whitespace().map(str::to_string).collect();
    assert_eq!(paths, listed, "SEED_LAYOUT must list exactly the key paths of the reference phases");
}
