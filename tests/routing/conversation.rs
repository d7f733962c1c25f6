//! The routing plan's `conversation` scenario through the simulated AIBrix-like gateway: each
//! family is a conversation whose requests are its growing turns; `prefix-cache` keeps every
//! conversation on one replica (the owner map's counts sit in one column) and serves the
//! growing history from cache, while `random` splits conversations over both replicas and
//! finds less of it cached.

use crate::common;

use common::{cluster, config, validate};
use llm_decode_bench::config::MetricsEndpoint;
use llm_decode_bench::config::{PlanKind, RunConfig};
use llm_decode_bench::experiment::routing::{Arrival, RoutingConfig};
use llm_decode_bench::session::start;
use serde_json::Value;

/// Conversations served by more than one replica in `phase`.
fn split_conversations(phase: &Value) -> usize {
    let mut by_family: std::collections::BTreeMap<String, usize> = Default::default();
    for r in phase["replicas"].as_object().unwrap().values() {
        for (f, n) in r["family_counts"].as_object().into_iter().flatten() {
            if n.as_u64().unwrap_or(0) > 0 {
                *by_family.entry(f.clone()).or_default() += 1;
            }
        }
    }
    by_family.values().filter(|n| **n > 1).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversations_stay_on_one_replica_under_prefix_cache_and_split_under_random() {
    let c = cluster(2, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("routing.json");
    let info = c.info();
    let mut cfg: RunConfig = config(&info.gateway.url, "http://unused/metrics", &out, vec![0], vec![1]);
    cfg.metrics =
        info.replicas.iter().map(|r| MetricsEndpoint { name: r.name.clone(), url: r.metrics_url.clone() }).collect();
    cfg.plans = vec![PlanKind::Routing];
    cfg.routing = RoutingConfig {
        scenarios: vec!["conversation".parse().unwrap()],
        routes: vec!["random".into(), "prefix-cache".into()],
        rounds: 1,
        count: 48,
        families: 6,
        rps: 20.0,
        arrival: Arrival::Constant,
        output: 16,
        prompt_tokens: 400,
        gateway_metrics: Some(format!("{}/metrics", info.gateway.url)),
        ..RoutingConfig::default()
    };
    let report = start(cfg).await.expect("preflight").join.await.unwrap();
    assert!(report.complete);
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let _ = validate(&out);
    let phases = file["phases"].as_array().unwrap();
    let phase = |name: &str| phases.iter().find(|p| p["phase"] == name).unwrap_or_else(|| panic!("{name}"));
    let (random, prefix) = (phase("r1-conversation-random"), phase("r1-conversation-prefix-cache"));
    for p in [random, prefix] {
        assert_eq!(p["success"].as_u64(), Some(48), "{}", p["phase"]);
    }
    assert_eq!(split_conversations(prefix), 0, "prefix-cache keeps each conversation on one replica");
    assert!(split_conversations(random) >= 3, "random splits conversations: {}", split_conversations(random));
    let hit = |p: &Value| p["cache_hit_ratio"].as_f64().unwrap_or(0.0);
    assert!(hit(prefix) > hit(random) + 0.1, "history found in cache: {} vs {}", hit(prefix), hit(random));
}
