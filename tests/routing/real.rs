//! End-to-end: routing sessions against the simulator in the modes that reproduce real
//! deployments (docs/protocol.md §8): stock vLLM without a cache-reset route (§8.7),
//! vllm-router and sglang-router with their policy fixed at start (§8.8, §8.10), and
//! sglang-router's `unknown` model (§8.4). In process, on tokio's paused clock.

use crate::common;

use common::{inproc_cluster, routing_base, validate};
use llm_decode_bench::config::RunConfig;
use llm_decode_bench::experiment::routing::{Arrival, RoutingConfig};
use llm_decode_bench::report::json::SessionReport;
use llm_decode_bench::report::phase::RoutingPhase;
use llm_decode_bench::session::start_with;
use llm_decode_bench::sim::SimConfig;
use llm_decode_bench::sim::gateway::{GatewayMode, RouterPolicy};
use llm_decode_bench::sim::inproc::InProcCluster;
use std::path::Path;

fn routing_config(c: &InProcCluster, out: &Path, scenarios: &[&str], routes: &[&str]) -> RunConfig {
    let info = c.info();
    let mut cfg = routing_base(c, out);
    cfg.routing = RoutingConfig {
        scenarios: scenarios.iter().map(|s| s.parse().unwrap()).collect(),
        routes: routes.iter().map(|s| s.to_string()).collect(),
        rounds: 1,
        count: 32,
        rps: 8.0,
        arrival: Arrival::Poisson,
        output: 16,
        prompt_tokens: 1500,
        gateway_metrics: Some(info.gateway.metrics_url.clone()),
        ..RoutingConfig::default()
    };
    cfg
}

async fn run(c: &InProcCluster, cfg: RunConfig) -> SessionReport {
    let out = cfg.out.clone().unwrap();
    let report = start_with(cfg, c.backend()).await.expect("preflight").join.await.unwrap();
    assert!(report.complete);
    assert_eq!(validate(&out).phases, report.phases, "the report file reads back unchanged");
    report
}

fn early(p: &RoutingPhase) -> f64 {
    p.early_cache_hit_ratio.as_ref().map(|e| e.ratio).unwrap_or_else(|| panic!("{}: no early hit ratio", p.phase))
}

fn router(mode: GatewayMode, policy: RouterPolicy) -> impl FnOnce(&mut SimConfig) {
    move |c| {
        c.gateway_mode = mode;
        c.router_policy = policy;
    }
}

#[tokio::test(start_paused = true)]
async fn without_dev_mode_a_second_cold_phase_stays_cold_and_says_it_was_not_reset() {
    let c = inproc_cluster(2, 1.0, |_| {});
    let dir = tempfile::tempdir().unwrap();
    let cfg = routing_config(&c, &dir.path().join("cold.json"), &["cold-uniform"], &["random", "least-request"]);
    let report = run(&c, cfg).await;
    let w = report.warnings.iter().filter(|w| w.contains("VLLM_SERVER_DEV_MODE=1")).count();
    assert_eq!(w, 1, "one preflight line says what to set: {:?}", report.warnings);
    let [first, second] = &report.phases[..] else { panic!("two phases: {:?}", report.phases.len()) };
    for p in [first, second] {
        assert_eq!(p.caches_reset, Some(false), "{}", p.phase);
        assert!(p.cache_reset.values().all(|v| v == "unsupported"), "{:?}", p.cache_reset);
    }
    assert_ne!(first.prefix_set, second.prefix_set, "each phase has its own prefixes");
    let (a, b) = (early(first), early(second));
    assert!(b < 0.3 && (b - a).abs() < 0.15, "second cold phase starts cold: {a} then {b}");
    let (ha, hb) = (first.cache_hit_ratio.unwrap(), second.cache_hit_ratio.unwrap());
    assert!((hb - ha).abs() < 0.15, "route order does not warm the second phase: {ha} then {hb}");
}

#[tokio::test(start_paused = true)]
async fn with_dev_mode_every_phase_records_its_reset() {
    let c = inproc_cluster(2, 1.0, |c| c.dev_mode = true);
    let dir = tempfile::tempdir().unwrap();
    let report = run(&c, routing_config(&c, &dir.path().join("dev.json"), &["cold-uniform"], &["random"])).await;
    assert!(!report.warnings.iter().any(|w| w.contains("VLLM_SERVER_DEV_MODE")), "{:?}", report.warnings);
    let p = &report.phases[0];
    assert_eq!(p.caches_reset, Some(true));
    assert!(p.cache_reset.values().all(|v| v == "reset_prefix_cache"), "{:?}", p.cache_reset);
}

#[tokio::test(start_paused = true)]
async fn behind_vllm_router_cache_aware_the_route_is_the_deployed_policy_and_priming_balances() {
    let c = inproc_cluster(2, 1.0, router(GatewayMode::VllmRouter, RouterPolicy::CacheAware));
    let dir = tempfile::tempdir().unwrap();
    let routes = ["random", "least-request", "prefix-cache"];
    let report = run(&c, routing_config(&c, &dir.path().join("vr.json"), &["hot90"], &routes)).await;
    assert!(report.warnings.iter().any(|w| w.contains("fixed policy `cache_aware`")), "{:?}", report.warnings);
    let [p] = &report.phases[..] else { panic!("one route, one phase: {:?}", report.phases.len()) };
    assert_eq!((p.phase.as_str(), p.route.as_str()), ("r1-hot90-cache_aware", "cache_aware"));
    assert_eq!((p.applied_policy.as_deref(), p.route_applied), (Some("cache_aware"), Some(true)));
    assert_eq!(p.config.balanced, Some(true), "owners {:?}", p.config.initial_owners);
    assert!(p.config.setup_attempt.is_some_and(|a| a >= 2), "sequential priming lands on one worker first");
    let owners = p.config.initial_owners.as_ref().unwrap();
    assert!(owners.values().all(|c| c.len() >= 4), "both workers own candidates: {owners:?}");
}

#[tokio::test(start_paused = true)]
async fn behind_sglang_router_the_model_comes_from_the_replicas_and_the_policy_from_its_counters() {
    let c = inproc_cluster(2, 1.0, router(GatewayMode::SglangRouter, RouterPolicy::RoundRobin));
    let dir = tempfile::tempdir().unwrap();
    let cfg = routing_config(&c, &dir.path().join("sg.json"), &["cold-uniform"], &["deployed"]);
    assert_eq!(cfg.model, None, "the gateway's /v1/models says `unknown`");
    let report = run(&c, cfg).await;
    assert_eq!(report.model, c.info().model);
    let [p] = &report.phases[..] else { panic!("one phase") };
    assert_eq!(p.route, "round_robin");
    assert_eq!((p.applied_policy.as_deref(), p.route_applied), (Some("round_robin"), Some(true)));
    assert_eq!(p.success, 32, "{:?}", p.errors_by_kind);
    let deltas = p.routing_counter_deltas.as_ref().unwrap();
    assert!(deltas.iter().any(|d| d.name == "smg_worker_selection_total"));
}
