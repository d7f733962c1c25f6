//! End-to-end: a routing experiment through the simulated AIBrix-like gateway.

use crate::common;

use common::{cluster, config, validate};
use llm_decode_bench::config::MetricsEndpoint;
use llm_decode_bench::config::{PlanKind, RunConfig};
use llm_decode_bench::experiment::routing::{Arrival, RoutingConfig};
use llm_decode_bench::session::start;
use serde_json::Value;
use std::path::Path;

/// Fields every phase must carry (issue 4 / `tests/fixtures/seed_002.json`).
const PHASE_FIELDS: &[&str] = &[
    "phase",
    "scenario",
    "route",
    "config",
    "planned",
    "requests",
    "success",
    "errors",
    "dropped",
    "good",
    "output_tokens_per_second",
    "ttft",
    "tpot",
    "e2e",
    "itl_s",
    "families",
    "replicas",
    "cache_hit_ratio",
    "input_tokens_range",
    "initial_prefix_owners",
    "routing_counter_deltas",
    "gateway_verified_requests",
];
const REPLICA_FIELDS: &[&str] = &[
    "requests",
    "engine_completed",
    "cache_queries_tokens",
    "cache_hit_tokens",
    "cache_hit_ratio",
    "waiting_peak",
    "running_peak",
    "family_counts",
    "kv_usage_peak",
    "preemptions",
    "gateway_outstanding_at_selection_peak",
];

fn routing_config(gateway: &str, replicas: &[(String, String)], out: &Path) -> RunConfig {
    let mut cfg = config(gateway, "http://unused/metrics", out, vec![0], vec![1]);
    cfg.metrics = replicas.iter().map(|(n, u)| MetricsEndpoint { name: n.clone(), url: u.clone() }).collect();
    cfg.plans = vec![PlanKind::Routing];
    cfg.routing = RoutingConfig {
        scenarios: vec!["cold-uniform".parse().unwrap(), "hot90".parse().unwrap()],
        rounds: 1,
        count: 40,
        rps: 25.0,
        arrival: Arrival::Poisson,
        output: 32,
        prompt_tokens: 1500,
        gateway_metrics: Some(format!("{gateway}/metrics")),
        ..RoutingConfig::default()
    };
    cfg
}

fn requests_of(phase: &Value, replica: &str) -> u64 {
    phase["replicas"][replica]["requests"].as_u64().unwrap_or(0)
}

/// The `phases` of the report file at `path`, as plain JSON (the field names on disk).
fn phases_on_disk(path: &Path) -> Vec<Value> {
    let file: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    file["phases"].as_array().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routing_experiment_against_the_sim_gateway() {
    let c = cluster(2, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("routing.json");
    let reps: Vec<(String, String)> =
        c.info().replicas.iter().map(|r| (r.name.clone(), r.metrics_url.clone())).collect();
    let h = start(routing_config(&c.info().gateway.url, &reps, &out)).await.expect("preflight");
    let report = h.join.await.unwrap();
    assert!(report.complete);
    assert_eq!((report.measured_phases, report.planned_phases), (6, 6));
    assert_eq!(report.replicas, 2);
    assert!(report.gateway_version.is_some());
    let on_disk = validate(&out);
    assert_eq!(on_disk.phases.len(), 6);
    assert_eq!(on_disk.phase_history.len(), 6);
    assert_eq!(on_disk.phases, report.phases, "the typed phases read back unchanged");
    let phases = phases_on_disk(&out);
    let names: Vec<&str> = phases.iter().map(|p| p["phase"].as_str().unwrap()).collect();
    assert_eq!(names[0], "r1-cold-uniform-random");
    assert_eq!(names[5], "r1-hot90-prefix-cache");
    for p in &phases {
        for f in PHASE_FIELDS {
            assert!(p.get(*f).is_some(), "{} lacks {f}", p["phase"]);
        }
        for r in ["sim-a", "sim-b"] {
            for f in REPLICA_FIELDS {
                assert!(p["replicas"][r].get(*f).is_some(), "{} {r} lacks {f}", p["phase"]);
            }
        }
        let n = |k: &str| p[k].as_u64().unwrap();
        assert_eq!(n("requests"), n("success") + n("errors") + n("dropped"));
        assert_eq!(n("gateway_verified_requests"), n("success"), "every answered request names its pod");
        assert_eq!(p["attribution"], "response_header");
        let itl = p["itl_s"]["p50"].as_f64().unwrap_or(0.0);
        assert!(itl > 0.0, "{}: per-token ITL p50 {itl} s", p["phase"]);
    }
    let hot_prefix = phases.iter().find(|p| p["phase"] == "r1-hot90-prefix-cache").unwrap();
    let owner = hot_prefix["config"]["hot_initial_replica"].as_str().expect("hot owner recorded").to_string();
    let fam0: u64 = hot_prefix["families"]["0"]["requests"].as_u64().unwrap();
    let on_owner = hot_prefix["replicas"][&owner]["family_counts"]["0"].as_u64().unwrap_or(0);
    assert!(on_owner as f64 >= 0.9 * fam0 as f64, "hot family concentrated on {owner}: {on_owner}/{fam0}");
    assert!(hot_prefix["routing_counter_deltas"].as_array().is_some_and(|d| !d.is_empty()));
    let lr = phases.iter().find(|p| p["phase"] == "r1-hot90-least-request").unwrap();
    let (a, b) = (requests_of(lr, "sim-a") as f64, requests_of(lr, "sim-b") as f64);
    assert!((a - b).abs() <= 0.1 * (a + b), "least-request splits evenly: {a} vs {b}");
    let cold = phases.iter().find(|p| p["phase"] == "r1-cold-uniform-random").unwrap();
    assert_eq!(cold["initial_prefix_owners"], serde_json::json!({}));
    assert!(hot_prefix["config"]["family_map"].as_object().is_some_and(|m| m.len() == 8));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_router_that_names_no_worker_attribution_falls_back_to_counters() {
    use llm_decode_bench::sim::gateway::{GatewayMode, RouterPolicy};
    let c = cluster(2, 25.0, |cfg| {
        cfg.gateway_mode = GatewayMode::VllmRouter;
        cfg.router_policy = RouterPolicy::RoundRobin;
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("router.json");
    let reps: Vec<(String, String)> =
        c.info().replicas.iter().map(|r| (r.name.clone(), r.metrics_url.clone())).collect();
    let mut cfg = routing_config(&c.info().gateway.url, &reps, &out);
    cfg.routing.routes = vec!["random".into()];
    cfg.routing.count = 24;
    let report = start(cfg).await.expect("preflight").join.await.unwrap();
    assert!(report.complete);
    assert_eq!(validate(&out).phases, report.phases);
    for p in &phases_on_disk(&out) {
        let n = |k: &str| p[k].as_u64().unwrap();
        assert_eq!(n("success"), 24, "{}", p["phase"]);
        assert_eq!(p["attribution"], "counter_deltas");
        assert_eq!(p["family_attribution_available"], false);
        assert_eq!(n("gateway_verified_requests"), 0);
        let served: u64 = ["sim-a", "sim-b"].iter().map(|r| requests_of(p, r)).sum();
        assert_eq!(served, 24, "engine counters account for every request");
        assert_eq!(p["replicas"]["sim-a"]["family_counts"], Value::Null, "never guessed");
        assert_eq!(
            p["token_sources"],
            serde_json::json!(["final_usage_scaled"]),
            "the router stripped continuous usage"
        );
        let deltas = p["routing_counter_deltas"].as_array().expect("router counters read");
        assert!(deltas.iter().any(|d| d["name"] == "vllm_router_processed_requests_total"));
    }
    let hot = report.phases.iter().find(|p| p.scenario == "hot90").unwrap();
    assert_eq!(hot.config.balanced, Some(true), "priming attributed by counter deltas");
    assert!(matches!(hot.config.hot_initial_replica, Some(Some(_))));
}
