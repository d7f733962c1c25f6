//! End-to-end: family-map balancing on fleets of 8 and 16 simulated replicas, with more
//! families than replicas (and, at 16, the default 8 families: fewer), through the
//! AIBrix-like gateway's routes and behind vllm-router `cache_aware` (docs/protocol.md §8.10).
//! In process, on tokio's paused clock.

use crate::common;

use common::{inproc_cluster, routing_base};
use llm_decode_bench::config::RunConfig;
use llm_decode_bench::experiment::routing::{Arrival, RoutingConfig};
use llm_decode_bench::report::json::SessionReport;
use llm_decode_bench::report::phase::RoutingPhase;
use llm_decode_bench::session::start_with;
use llm_decode_bench::sim::SimConfig;
use llm_decode_bench::sim::gateway::{GatewayMode, RouterPolicy};
use llm_decode_bench::sim::inproc::InProcCluster;
use std::collections::BTreeMap;
use std::path::Path;

fn fleet_config(c: &InProcCluster, out: &Path, families: u32, routes: &[&str]) -> RunConfig {
    let info = c.info();
    let mut cfg = routing_base(c, out);
    cfg.routing = RoutingConfig {
        scenarios: vec!["hot90".parse().unwrap()],
        routes: routes.iter().map(|s| s.to_string()).collect(),
        rounds: 1,
        count: 24,
        rps: 12.0,
        arrival: Arrival::Poisson,
        output: 8,
        prompt_tokens: 600,
        families,
        gateway_metrics: Some(info.gateway.metrics_url.clone()),
        ..RoutingConfig::default()
    };
    cfg
}

async fn run(c: &InProcCluster, cfg: RunConfig) -> SessionReport {
    let report = start_with(cfg, c.backend()).await.expect("preflight").join.await.unwrap();
    assert!(report.complete);
    report
}

/// Families each replica owns at the start of the phase.
fn owned(p: &RoutingPhase) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for owners in p.initial_prefix_owners.values() {
        for o in owners {
            *out.entry(o.clone()).or_insert(0) += 1;
        }
    }
    out
}

/// The phase started from a balanced map: every replica owns families/R rounded down or up.
fn assert_balanced(p: &RoutingPhase, replicas: usize, families: usize, warnings: &[String]) {
    assert_eq!(
        p.config.balanced,
        Some(true),
        "{}: owners {:?}; warnings {warnings:?}",
        p.phase,
        p.config.initial_owners
    );
    assert_eq!(p.initial_prefix_owners.len(), families, "{}", p.phase);
    let per = owned(p);
    let (lo, hi) = (families / replicas, families.div_ceil(replicas));
    assert!(per.values().all(|n| (lo..=hi).contains(n)), "{}: {per:?}", p.phase);
    assert_eq!(per.len(), replicas.min(families), "{}: {per:?}", p.phase);
    assert!(!warnings.iter().any(|w| w.contains("no balanced family map after")), "{warnings:?}");
}

async fn aibrix_routes_balance(replicas: usize, families: u32) {
    let c = inproc_cluster(replicas, 1.0, |_| {});
    let dir = tempfile::tempdir().unwrap();
    let routes = ["random", "least-request", "prefix-cache"];
    let report = run(&c, fleet_config(&c, &dir.path().join("fleet.json"), families, &routes)).await;
    assert_eq!(report.phases.len(), 3);
    for p in &report.phases {
        assert_balanced(p, replicas, families as usize, &report.warnings);
    }
}

async fn cache_aware_balances(replicas: usize, families: u32) {
    let c = inproc_cluster(replicas, 1.0, |s: &mut SimConfig| {
        s.gateway_mode = GatewayMode::VllmRouter;
        s.router_policy = RouterPolicy::CacheAware;
    });
    let dir = tempfile::tempdir().unwrap();
    let report = run(&c, fleet_config(&c, &dir.path().join("ca.json"), families, &["prefix-cache"])).await;
    let [p] = &report.phases[..] else { panic!("one phase: {}", report.phases.len()) };
    assert_balanced(p, replicas, families as usize, &report.warnings);
    assert!(p.config.setup_attempt.is_some_and(|a| a >= 2), "sequential priming piles on one worker first");
}

#[tokio::test(start_paused = true)]
async fn eight_replicas_twelve_families_balance_on_every_aibrix_route() {
    aibrix_routes_balance(8, 12).await;
}

#[tokio::test(start_paused = true)]
async fn sixteen_replicas_balance_with_more_and_with_fewer_families() {
    aibrix_routes_balance(16, 24).await;
    aibrix_routes_balance(16, 8).await;
}

#[tokio::test(start_paused = true)]
async fn eight_and_sixteen_replicas_balance_behind_cache_aware() {
    cache_aware_balances(8, 12).await;
    cache_aware_balances(16, 24).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_replicas_start_in_one_process_and_each_serves_through_the_gateway() {
    let c = common::cluster(64, 50.0, |s: &mut SimConfig| {
        s.gateway_mode = GatewayMode::VllmRouter;
        s.router_policy = RouterPolicy::RoundRobin;
    })
    .await;
    let info = c.info();
    assert_eq!(info.replicas.len(), 64);
    assert_eq!(info.replicas[63].name, "sim-64");
    let http = common::client();
    let body = serde_json::json!({"model": info.model, "prompt": "hello", "max_tokens": 2, "stream": false});
    for _ in 0..64 {
        let r = http.post(format!("{}/v1/completions", info.gateway.url)).json(&body).send().await.unwrap();
        assert_eq!(r.status(), 200);
    }
    let served = || -> Vec<u64> {
        (0..64).map(|i| c.replica_stats(i).map_or(0, |s| s.finished_stop + s.finished_length)).collect()
    };
    // The engines publish their counters when they go idle, just after the last answer.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while served().iter().any(|&n| n != 1) && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(served().iter().all(|&n| n == 1), "round robin reaches every replica once: {:?}", served());
}
