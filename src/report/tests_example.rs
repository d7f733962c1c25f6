//! Example reports for tests: one with every `Option` set and every collection non-empty, one
//! with every `Option` unset and every collection empty. `tests/fixtures/report_example.json`
//! was written from [`full_report`] once; it is checked on its own, not against this builder.

use super::json::*;
use super::status::{AttemptStatus, CapacityLimit, CellOutcome};
use crate::load::sample::{ErrorKind, RecordedOutcome, TokenSource};
use crate::report::phase::RoutingPhase;
use crate::stats::Summary;
use std::collections::BTreeMap;

/// The routing phase of the examples.
#[path = "tests_example_phase.rs"]
mod phase;
pub(crate) use phase::full_phase;

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
        within_noise: false,
        noise_interval: None,
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
        cell_requested: None,
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
        shard_dists: None,
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
            runs: None,
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
                prefix_cache: None,
                shard_dists: None,
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
        runs: None,
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
        sweep: None,
        shard: None,
        merge: None,
    }
}
