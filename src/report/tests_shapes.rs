//! Every shape a session report comes in, for the format tests: decode only, decode with
//! bursts, routing only, an interrupted session (`complete: false`, stopped and paused
//! attempts), re-run cells (several attempts), a serve sweep, the full example and the empty
//! report.

use super::json::{BurstCellReport, DecodeCell, SessionReport};
use super::status::{AttemptStatus as A, CellOutcome as C};
use super::tests_example::{full_attempt, full_phase, full_report, minimal_report, request};
use crate::report::phase::RoutingPhase;

/// A `16k` decode cell at `conc` with attempts of the given statuses.
fn cell(conc: u32, status: C, attempts: &[A]) -> DecodeCell {
    let attempts = attempts.iter().zip(1..).map(|(s, n)| full_attempt(n, *s)).collect();
    let baseline = Vec::new();
    DecodeCell {
        ctx: 16_384,
        ctx_label: "16k".into(),
        conc,
        status,
        timeout_reason: None,
        skip: None,
        attempts,
        rate: None,
        baseline,
        runs: None,
    }
}

/// The full report's routing phase renamed to `round`-`scenario`-`route`, with `status`.
fn phase(round: u32, scenario: &str, route: &str, status: A) -> RoutingPhase {
    let name = format!("r{round}-{scenario}-{route}");
    RoutingPhase { phase: name, scenario: scenario.into(), route: route.into(), status, ..full_phase() }
}

/// A decode matrix only (one errored and one measured cell).
pub(crate) fn decode_only() -> SessionReport {
    let full = full_report();
    SessionReport { decode: full.decode, complete: true, ..minimal_report() }
}

/// Decode with Phase 3: a measured burst cell and a KV-skipped one.
pub(crate) fn with_burst() -> SessionReport {
    let mut report = full_report();
    report.phases.clear();
    report.phase_history.clear();
    if let Some(burst) = report.burst.as_mut() {
        burst.conc.push(8);
        let skipped = BurstCellReport { conc: 8, status: C::Skipped, attempts: Vec::new(), ..burst.cells[0].clone() };
        burst.cells.push(skipped);
    }
    report
}

/// Routing phases only: two scenarios, two routes.
pub(crate) fn routing_only() -> SessionReport {
    let phases = vec![
        phase(1, "cold-uniform", "random", A::Measured),
        phase(1, "cold-uniform", "prefix-cache", A::Measured),
        phase(1, "hot90", "random", A::Measured),
        phase(1, "hot90", "prefix-cache", A::Measured),
    ];
    SessionReport {
        phase_history: phases.clone(),
        measured_phases: phases.len(),
        planned_phases: phases.len(),
        phases,
        complete: true,
        ..minimal_report()
    }
}

/// A session stopped mid-way: a measured cell, the cell it stopped in (pending, a paused then
/// a stopped attempt), a cell never run; a routing phase stopped (in the history only).
pub(crate) fn interrupted() -> SessionReport {
    let mut report = decode_only();
    report.complete = false;
    if let Some(d) = report.decode.as_mut() {
        d.conc = vec![4, 8, 16];
        d.cells = vec![
            cell(4, C::Measured, &[A::Measured]),
            cell(8, C::Pending, &[A::Paused, A::Stopped]),
            cell(16, C::Pending, &[]),
        ];
    }
    let done = phase(1, "hot90", "random", A::Measured);
    report.phases = vec![done.clone()];
    report.phase_history = vec![done, phase(1, "hot90", "prefix-cache", A::Stopped)];
    report.measured_phases = 1;
    report.planned_phases = 2;
    report
}

/// Re-run cells: a decode cell measured three times, one skipped by the operator, and a
/// routing phase run twice (both attempts in the history, the latest in `phases`).
pub(crate) fn rerun() -> SessionReport {
    let mut report = decode_only();
    if let Some(d) = report.decode.as_mut() {
        let mut again = cell(4, C::Measured, &[A::Measured, A::Measured, A::Measured]);
        again.attempts[2].aggregate_tps = 600.25;
        d.cells = vec![again, cell(8, C::SkippedByOperator, &[A::SkippedByOperator])];
    }
    let first = phase(1, "hot90", "prefix-cache", A::Measured);
    let latest = RoutingPhase { good: 70, ..first.clone() };
    report.phases = vec![latest.clone()];
    report.phase_history = vec![first, latest];
    report
}

/// A serve sweep at one input len: a measured cell at `inf` (two requests, one failed, and a
/// re-run) and a skipped one at `4` requests/s.
pub(crate) fn with_serve() -> SessionReport {
    use super::serve::{ServeAttempt, ServeCellReport, ServeMetrics, ServeSection};
    let metrics = ServeMetrics {
        completed: 1,
        failed: 1,
        total_input_tokens: 1024,
        total_output_tokens: 128,
        duration_s: 2.5,
        request_throughput: 0.4,
        output_throughput: 51.2,
        total_token_throughput: 460.8,
        median_ttft_ms: Some(85.0),
        p99_ttft_ms: Some(90.5),
        median_tpot_ms: Some(7.25),
        p99_tpot_ms: Some(8.0),
        median_itl_token_ms: Some(7.0),
        p99_itl_token_ms: Some(9.5),
        median_e2el_ms: Some(1006.0),
        p99_e2el_ms: Some(1010.0),
        ..ServeMetrics::default()
    };
    let attempt = |n: u32| ServeAttempt {
        attempt: n,
        status: A::Measured,
        started_s: 10.0 * f64::from(n),
        num_prompts: 2,
        errors: [(crate::load::sample::ErrorKind::ServerError, 1)].into(),
        error_examples: [(crate::load::sample::ErrorKind::ServerError, "HTTP 500: internal error".into())].into(),
        reconnects: 0,
        metrics: metrics.clone(),
        request_samples: vec![request(0, "completed"), request(1, "server_error")],
        server_tokens: None,
        prefix_cache: crate::report::prefix_cache::PrefixCacheCheck::judge(980.0, 1000.0, Some(0.0)),
        schedule_lag: crate::report::schedule_lag::ScheduleLag::of(
            &[crate::report::schedule_lag::Slot { due_ms: 0.0, sent_ms: 30.0, end_ms: 90.0 }],
            2,
        ),
        shard_gaps: None,
    };
    let cell = |rate: &str, status: C, attempts: Vec<ServeAttempt>| ServeCellReport {
        input_len: 1024,
        ctx_label: "1k".into(),
        max_concurrency: 2,
        request_rate: rate.into(),
        timeout_reason: (status == C::Skipped).then(|| "does not fit".into()),
        skip: None,
        status,
        attempts,
        baseline: Vec::new(),
        runs: None,
    };
    let serve = ServeSection {
        ctx_labels: vec!["1k".into()],
        conc: vec![2],
        request_rates: vec!["inf".into(), "4".into()],
        burstiness: 1.0,
        num_prompts: 2,
        output_len: 128,
        seed: 0,
        random_range_ratio: 0.25,
        goodput_slo: None,
        dataset: Some(crate::report::dataset::DatasetRecord {
            name: "sharegpt".into(),
            path: "ShareGPT_V3.json".into(),
            sha256: "ab".repeat(32),
            bytes: 670_000_000,
            entries: 94_145,
            unusable: 12,
            sampled: 4,
            filtered: 1,
            per_cell: 2,
            reused: false,
            seed: 0,
            input_len_source: "tokenize".into(),
            output_len_source: "tokenize".into(),
            mean_input_tokens: Some(212.5),
            mean_output_tokens: 180.0,
            tokenizer: Some(crate::report::dataset::TokenizerRecord {
                path: "Llama-3.1-8B/tokenizer.json".into(),
                sha256: "cd".repeat(32),
                compared: 8,
                disagreed: 0,
            }),
        }),
        prefix_repetition: Some(crate::report::dataset::PrefixRepetitionRecord {
            prefix_len: 256,
            suffix_len: 256,
            num_prefixes: 10,
            output_len: 128,
            per_cell: 2,
            expected_prefix_hit_ratio: 0.0,
        }),
        trace: Some(crate::report::dataset::TraceRecord {
            name: "mooncake_trace".into(),
            path: "trace.jsonl".into(),
            sha256: "cd".repeat(32),
            bytes: 4096,
            entries: 23_608,
            replayed: 2,
            replay_speed: 2.0,
            span_s: 1.5,
            block_tokens: 512,
            mean_input_tokens: 900.0,
            mean_output_tokens: 40.0,
            expected_prefix_hit_ratio: 0.25,
        }),
        token_ids: None,
        knees: Vec::new(),
        cells: vec![cell("inf", C::Measured, vec![attempt(1), attempt(2)]), cell("4", C::Skipped, Vec::new())],
    };
    SessionReport { serve: Some(serve), complete: true, ..minimal_report() }
}

/// Every shape, named.
pub(crate) fn shapes() -> Vec<(&'static str, SessionReport)> {
    vec![
        ("decode", decode_only()),
        ("burst", with_burst()),
        ("routing", routing_only()),
        ("interrupted", interrupted()),
        ("rerun", rerun()),
        ("serve", with_serve()),
        ("full", full_report()),
        ("empty", minimal_report()),
    ]
}

/// A cell skipped for the model's context is not left under the legend's KV-cache `∅` line:
/// its own line says why, once per ctx and reason (issue 23's trial: the demo's 128k cells).
#[test]
fn a_context_skip_says_why_beside_the_kv_legend() {
    use super::skip::SkipKind;
    let skip = |conc: u32, kind: SkipKind, why: &str| DecodeCell {
        skip: Some(kind),
        timeout_reason: Some(why.into()),
        ..cell(conc, C::Skipped, &[])
    };
    let long = "a 131072-token prompt and 64 output tokens exceed max_model_len 131072";
    let decode = super::json::DecodeSection {
        ctx_labels: vec!["16k".into()],
        conc: vec![1, 4, 16],
        cells: vec![
            skip(1, SkipKind::ContextLength, long),
            skip(4, SkipKind::ContextLength, long),
            skip(16, SkipKind::KvCache, "deficit 655360 tokens"),
        ],
        aggregate_sources: Vec::new(),
        knees: Vec::new(),
    };
    let report = SessionReport { decode: Some(decode), ..minimal_report() };
    let view = super::tables::decode_view(&report).expect("a decode view");
    assert_eq!(view.skip_notes, [format!("∅ ctx=16k conc 1, 4: {long}")]);
    let text = super::formats::ReportFormat::Text.render(&report, Default::default());
    assert!(text.contains("conc 1, 4: a 131072-token prompt"), "{text}");
}
