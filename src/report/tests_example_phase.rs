//! The routing phase of the example reports (`tests_example`): a primed hot phase with every
//! `Option` set and every collection non-empty.

use super::{AttemptStatus, ErrorKind, TokenSource, summary};
use crate::metrics::gateway::CounterDelta;
use crate::report::phase::{
    Attribution, EarlyHitRatio, FamilyRecord, PhaseConfig, PhaseLatency, ReplicaRecord, RoutingPhase,
};

fn latency(p50: f64, p95: f64, p99: f64) -> PhaseLatency {
    PhaseLatency { p50: Some(p50), p95: Some(p95), p99: Some(p99) }
}

/// One replica of [`full_phase`] with every `Option` set.
fn replica(requests: u64, hit_tokens: f64, families: [(u32, u64); 2]) -> ReplicaRecord {
    ReplicaRecord {
        requests: Some(requests),
        engine_completed: Some(requests as f64),
        cache_queries_tokens: Some(hit_tokens * 1.25),
        cache_hit_tokens: Some(hit_tokens),
        cache_hit_ratio: Some(0.8),
        waiting_peak: Some(3.0),
        running_peak: Some(8.0),
        family_counts: Some(families.into()),
        kv_usage_peak: Some(0.25),
        preemptions: Some(0.0),
        gateway_outstanding_at_selection_peak: Some(13),
    }
}

/// The `config` of [`full_phase`]: a primed hot phase, every setup field set.
fn full_config(phase: &str, route: &str, scenario: &str) -> PhaseConfig {
    PhaseConfig {
        repeat: 104,
        output: 128,
        count: 96,
        rps: 1.6,
        seed: 102,
        phase: phase.into(),
        route: route.into(),
        scenario: scenario.into(),
        hot_fraction: 0.9,
        setup_attempt: Some(1),
        family_map: Some([(0, 0), (1, 3)].into()),
        priming_candidates: Some(16),
        initial_owners: Some([("L20-A".to_string(), vec![0, 2]), ("L20-B".to_string(), vec![1, 3])].into()),
        balanced: Some(true),
        hot_initial_replica: Some(Some("L20-A".into())),
    }
}

/// A primed hot phase (`tests/fixtures/seed_002.json` layout) with every `Option` set and every collection non-empty.
pub(crate) fn full_phase() -> RoutingPhase {
    let (name, route, scenario) = ("r1-hot90-prefix-cache", "prefix-cache", "hot90");
    RoutingPhase {
        phase: name.into(),
        scenario: scenario.into(),
        route: route.into(),
        config: full_config(name, route, scenario),
        started_at: 1_789_009_620.25,
        finished_at: 1_789_009_680.5,
        elapsed: 60.25,
        planned: 96,
        requests: 96,
        success: 95,
        errors: 1,
        dropped: 0,
        good: 61,
        output_tokens_per_second: 180.5,
        ttft: latency(2.125, 11.5, 12.0),
        tpot: latency(0.0625, 0.09375, 0.125),
        e2e: latency(9.5, 15.75, 16.5),
        families: [
            (0, FamilyRecord { requests: 86, ttft_p95: Some(11.75) }),
            (1, FamilyRecord { requests: 10, ttft_p95: Some(0.5) }),
        ]
        .into(),
        replicas: [
            ("L20-A".to_string(), replica(69, 174_048.0, [(0, 64), (1, 5)])),
            ("L20-B".to_string(), replica(27, 20_224.0, [(0, 22), (1, 5)])),
        ]
        .into(),
        cache_hit_ratio: Some(0.9375),
        input_tokens_range: Some([5041, 5050]),
        initial_prefix_owners: [(0, vec!["L20-A".to_string()]), (1, vec!["L20-B".to_string()])].into(),
        routing_counter_deltas: Some(vec![CounterDelta {
            name: "aibrix_prefix_cache_routing_selection_total".into(),
            labels: [("selection".to_string(), "prefix_match".to_string())].into(),
            delta: 95.0,
            reset: false,
        }]),
        gateway_verified_requests: 95,
        status: AttemptStatus::Measured,
        attribution: Attribution::ResponseHeader,
        family_attribution_available: true,
        errors_by_kind: [(ErrorKind::Overloaded, 1)].into(),
        error_examples: [(ErrorKind::Overloaded, "HTTP 503: the engine is overloaded".to_string())].into(),
        reconnects: 2,
        schedule_lag_ms: Some(summary(0.5)),
        token_sources: vec![TokenSource::OpenaiContinuousUsage],
        itl: latency(0.03125, 0.0625, 0.09375),
        cache_reset: [("L20-A".to_string(), "reset_prefix_cache".to_string())].into(),
        caches_reset: Some(true),
        prefix_set: Some("0a1b2c3d-5".into()),
        // Primed: every request could be served its prefix.
        prefix_cache: crate::report::prefix_cache::PrefixCacheCheck::judge(453_750.0, 484_000.0, Some(1.0)),
        early_cache_hit_ratio: Some(EarlyHitRatio { ratio: 0.125, requests: 24, source: "engine_counters".into() }),
        applied_policy: Some("cache_aware".into()),
        route_applied: Some(true),
        owner_hit_ratio: Some(0.9375),
        shard_dists: Some(shard_dists()),
        error: None,
        baseline: Vec::new(),
        runs: None,
    }
}

/// The values a shard's phase carries, every collection non-empty.
fn shard_dists() -> crate::report::phase_shard::PhaseShardDists {
    use crate::report::shard_dists::HeldValues;
    let held = |v: &[f64]| HeldValues { count: v.len() as u64, values: v.to_vec() };
    let mut gaps = crate::stats::GapDist::new();
    gaps.push(31.25);
    crate::report::phase_shard::PhaseShardDists {
        ttft_s: held(&[0.25, 0.5]),
        tpot_s: held(&[0.03125]),
        e2e_s: held(&[4.0, 4.5]),
        itl_token_ms: crate::stats::SavedGapDist::of(&gaps),
        family_ttft_s: [(0, held(&[0.25])), (1, held(&[0.5]))].into(),
        schedule_lag_ms: held(&[0.5, 0.75]),
    }
}
