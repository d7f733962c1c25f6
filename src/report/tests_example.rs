//! Example reports for tests: one with every `Option` set and every collection non-empty, one
//! with every `Option` unset and every collection empty. `tests/fixtures/report_example.json`
//! was written from [`full_report`] once; it is checked on its own, not against this builder.

use super::json::*;
use super::status::{AttemptStatus, CapacityLimit, CellOutcome};
use crate::load::sample::{ErrorKind, RecordedOutcome, TokenSource};
use crate::metrics::gateway::CounterDelta;
use crate::report::phase::{
    Attribution, EarlyHitRatio, FamilyRecord, PhaseConfig, PhaseLatency, ReplicaRecord, RoutingPhase,
};
use crate::stats::Summary;
use std::collections::BTreeMap;

/// A summary whose values all derive from `base` (ms).
pub(crate) fn summary(base: f64) -> Summary {
    Summary {
        count: 12,
        mean: base * 1.25,
        min: base,
        max: base * 4.0,
        p50: base * 1.5,
        p90: base * 2.5,
        p95: base * 3.0,
        p99: base * 3.5,
    }
}

/// One request of an attempt with every optional field set; `outcome` is its report name.
pub(crate) fn request(worker: u32, outcome: &str) -> RequestRecord {
    RequestRecord {
        worker,
        sent_ms: 12.5 * f64::from(worker),
        ttft_ms: Some(480.0),
        e2e_ms: 56_500.0,
        output_tokens: 4096,
        input_tokens: Some(4000),
        window_tokens: 3000,
        itl_ms: Some(13.25),
        outcome: serde_json::from_value(serde_json::json!(outcome)).expect("an outcome name"),
        status: Some(200),
        served_by: Some("r0".into()),
        good: Some(outcome == "completed"),
        schedule_lag_ms: Some(0.5),
    }
}

/// A within-cell saturation test with every `Option` set.
pub(crate) fn full_saturation() -> crate::stats::saturation::Saturation {
    use crate::stats::saturation::{Saturation, SaturationVerdict, TEST, TpsNoise};
    use crate::stats::slope::Trend;
    let trend = |slope: f64| Trend { n: 30, slope, t: 4.5, t_crit: 2.048, change: slope * 29.0, mean: 3.0 };
    Saturation {
        waiting: Some(trend(0.5)),
        ttft: Some(trend(12.0)),
        tps: Some(Trend { t: 0.3, ..trend(0.1) }),
        tps_noise: Some(TpsNoise { source: "per_second".into(), n: 30, mean_tps: 564.1, se_tps: 4.2 }),
        verdict: SaturationVerdict::OverSaturated,
        test: TEST.into(),
    }
}

/// A row's knee with every `Option` set.
pub(crate) fn full_knee() -> RowKnee {
    use crate::stats::knee::{Knee, Rise};
    let knee = Knee {
        at: "8".into(),
        index: 1,
        previous: "1".into(),
        tps_before: 560.0,
        tps_after: 564.8,
        tps_gain: 4.8 / 560.0,
        tps_noise: Some(0.02),
        rising: vec![Rise { metric: "waiting".into(), before: 0.0, after: 1.1 }],
        test: "example".into(),
    };
    RowKnee {
        ctx: 16_384,
        ctx_label: "16k".into(),
        axis: "rate".into(),
        at_conc: Some(8),
        at_rate: Some("inf".into()),
        knee,
    }
}

/// A measured attempt with every `Option` set and every collection non-empty.
pub(crate) fn full_attempt(attempt: u32, status: AttemptStatus) -> DecodeAttempt {
    DecodeAttempt {
        attempt,
        status,
        started_s: 61.5,
        warmup_s: 9.75,
        warmup_timed_out: true,
        window_s: 30.0,
        window_tokens: 16_944,
        aggregate_tps: 564.8,
        aggregate_source: TokenSource::OpenaiContinuousUsage,
        per_request_tps: 70.6,
        decoding_avg: None,
        user_tps: Some(76.5),
        requested: 8,
        running_avg: Some(6.9),
        waiting_avg: Some(1.1),
        streaming_at_start: 7,
        capacity_limited: true,
        capacity_limit: Some(CapacityLimit::MaxNumSeqs),
        turnover: false,
        ttft_ms: Some(summary(481.0)),
        itl_ms: Some(summary(13.0)),
        itl_token_ms: Some(summary(12.5)),
        itl_chunk_ms: Some(summary(14.0)),
        tpot_ms: Some(summary(13.5)),
        latency_ms: Some(summary(56_500.0)),
        errors: BTreeMap::from([(ErrorKind::Stalled, 1), (ErrorKind::ContextOverflow, 1)]),
        error_count: 2,
        error_examples: BTreeMap::from([
            (ErrorKind::Stalled, "no data for 30 s".into()),
            (ErrorKind::ContextOverflow, "HTTP 400: maximum context length".into()),
        ]),
        reconnects: 0,
        prometheus: Some(PromValidation {
            generation_tokens_delta: Some(17_000.0),
            generation_tps: Some(566.5),
            client_over_server: Some(0.997),
            prefix_hits_delta: Some(1024.0),
            prefix_queries_delta: Some(2048.0),
            preemptions_delta: Some(0.0),
            kv_usage_peak: Some(0.875),
            counts_disagree: false,
            server_counter: Some("vllm:generation_tokens_total".into()),
            counts_unchecked: None,
        }),
        client_lag_ms: Some(summary(0.5)),
        target_lost: Vec::new(),
        request_samples: vec![request(0, "completed"), request(1, "cut"), request(2, "stalled")],
        request_outcomes: [
            (RecordedOutcome::Completed, 1),
            (RecordedOutcome::Cut, 1),
            (RecordedOutcome::Failed(ErrorKind::Stalled), 1),
        ]
        .into(),
        goodput: Some(crate::report::goodput::Goodput::new(1, 3, 30.0)),
        saturation: Some(full_saturation()),
        rate: None,
        achieved_rate: None,
        levels: Vec::new(),
        // A cold cache: the requests' heads, well within what they share.
        prefix_cache: crate::report::prefix_cache::PrefixCacheCheck::judge(12.0, 24_000.0, Some(0.02)),
    }
}

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
        error: None,
        baseline: Vec::new(),
    }
}

/// A burst section with one measured cell.
fn full_burst() -> BurstSection {
    BurstSection {
        ctx_labels: vec!["16k".into()],
        conc: vec![4],
        cells: vec![BurstCellReport {
            ctx: 16_384,
            ctx_label: "16k".into(),
            conc: 4,
            status: CellOutcome::Measured,
            timeout_reason: None,
            skip: None,
            baseline: Vec::new(),
            attempts: vec![BurstAttempt {
                attempt: 1,
                status: AttemptStatus::Measured,
                started_s: 90.0,
                requests: 4,
                success: 3,
                error_count: 1,
                errors: BTreeMap::from([(ErrorKind::Overloaded, 1)]),
                error_examples: BTreeMap::from([(ErrorKind::Overloaded, "HTTP 503: the engine is overloaded".into())]),
                reconnects: 1,
                e2e_ms: Some(summary(2500.0)),
                ttft_ms: Some(summary(300.0)),
                itl_token_ms: Some(summary(9.0)),
                tpot_ms: Some(summary(9.5)),
                output_tokens: 768,
                output_tps: 307.2,
                makespan_s: 2.5,
                target_lost: Vec::new(),
                request_samples: vec![request(0, "completed")],
                goodput: Some(crate::report::goodput::Goodput::new(1, 4, 2.5)),
            }],
        }],
    }
}

/// A session report with every `Option` set and every collection non-empty.
pub(crate) fn full_report() -> SessionReport {
    let cell = |conc: u32, status: CellOutcome, attempts: Vec<DecodeAttempt>| DecodeCell {
        ctx: 16_384,
        ctx_label: "16k".into(),
        conc,
        status,
        timeout_reason: Some("needs 140000 KV tokens, 131072 available".into()),
        skip: None,
        attempts,
        rate: None,
        baseline: Vec::new(),
    };
    let point = SeriesPoint {
        t_s: 62.0,
        running: Some(7.0),
        waiting: Some(1.0),
        kv_usage: Some(0.5),
        generation_tokens: Some(123_456.0),
        prefix_hits_tokens: Some(4096.0),
        preemptions: Some(3.0),
    };
    let paused_phase = RoutingPhase { status: AttemptStatus::Paused, started_at: 1_789_009_500.0, ..full_phase() };
    SessionReport {
        gateway_version: Some("0.2.1".into()),
        runtime: Some("0.11.0".into()),
        target: TargetInfo {
            max_model_len: Some(131_072),
            kv_capacity_tokens: Some(262_144),
            replica_info: vec![ReplicaInfo {
                name: "r0".into(),
                metrics_url: "http://10.0.0.1:8000/metrics".into(),
                dialect: "vllm-v1".into(),
                kv_capacity_tokens: Some(131_072),
            }],
            connection_reuse: Some(crate::load::reuse::ConnectionReuse {
                streams_reuse: false,
                evidence: "server closed the connection 0.2 ms after a streamed response (preflight probe)".into(),
                probe_requests: 1,
            }),
            ..minimal_report().target
        },
        plan: PlanInfo {
            slo: Some(crate::report::goodput::PlanSlo {
                ttft_ms: Some(2000.0),
                tpot_ms: Some(50.0),
                e2el_ms: Some(60_000.0),
                source: crate::report::goodput::SloSource::Goodput,
            }),
            ..minimal_report().plan
        },
        calibration: vec![CalibrationInfo { ctx: 16_384, prompt_tokens: 16_380, method: "tokenize".into() }],
        decode: Some(DecodeSection {
            ctx_labels: vec!["16k".into()],
            conc: vec![4, 8],
            cells: vec![
                cell(4, CellOutcome::Errored, vec![full_attempt(1, AttemptStatus::Errored)]),
                cell(
                    8,
                    CellOutcome::Measured,
                    vec![full_attempt(1, AttemptStatus::Paused), full_attempt(2, AttemptStatus::Measured)],
                ),
            ],
            aggregate_sources: vec![TokenSource::ChunkCount, TokenSource::OpenaiContinuousUsage],
            knees: Vec::new(),
        }),
        burst: Some(full_burst()),
        serve: None,
        extensions: Vec::new(),
        phases: vec![full_phase()],
        phase_history: vec![paused_phase, full_phase()],
        actions: vec![ActionRecord { at_s: 75.25, action: "rerun".into(), cell: Some("ctx=16k conc=8".into()) }],
        replica_series: BTreeMap::from([("r0".into(), vec![point])]),
        replica_stale: BTreeMap::new(),
        warnings: vec!["no prefix-cache metrics on r0".into()],
        metrics_source: Some(crate::report::json::MetricsSource {
            kind: "prometheus".into(),
            url: "http://prometheus:9090".into(),
            selector: "job=\"vllm\"".into(),
            scrape_interval_s: Some(15.0),
            scrape_interval_from: Some("samples".into()),
            replica_changes: vec![crate::report::json::ReplicaChange {
                t_s: 42.5,
                replica: "r1".into(),
                change: "joined".into(),
            }],
        }),
        measured_phases: 1,
        planned_phases: 2,
        complete: true,
        ..minimal_report()
    }
}

/// A session report with every `Option` unset and every collection empty.
pub(crate) fn minimal_report() -> SessionReport {
    SessionReport {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo { name: "llm-decode-bench".into(), version: "0.1.0".into() },
        started_at: "2026-11-29T17:30:15Z".into(),
        updated_at: "2026-11-29T17:31:00Z".into(),
        complete: false,
        model: "test-model".into(),
        runtime: None,
        gateway_version: None,
        replicas: 0,
        measured_phases: 0,
        planned_phases: 0,
        target: TargetInfo {
            base_url: "http://127.0.0.1:8000".into(),
            endpoint: "chat".into(),
            max_model_len: None,
            kv_capacity_tokens: None,
            engine_dialect: "unknown".into(),
            replica_info: Vec::new(),
            connection_reuse: None,
        },
        plan: PlanInfo {
            kinds: Vec::new(),
            ctx: Vec::new(),
            conc: Vec::new(),
            window_s: 30.0,
            warmup_timeout_s: 120.0,
            kv_oversubscribe: 1.0,
            run_burst: false,
            settings: BTreeMap::new(),
            slo: None,
            baseline: None,
        },
        calibration: Vec::new(),
        decode: None,
        burst: None,
        serve: None,
        extensions: Vec::new(),
        phases: Vec::new(),
        phase_history: Vec::new(),
        actions: Vec::new(),
        replica_series: BTreeMap::new(),
        replica_stale: BTreeMap::new(),
        warnings: Vec::new(),
        metrics_source: None,
        halted: None,
    }
}
