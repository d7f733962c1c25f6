//! Contract tests: session reports serialised from `json.rs` validate against the JSON Schema.

use super::json::*;
use crate::stats::Summary;
use proptest::prelude::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The published schema of the session report.
const SCHEMA: &str = include_str!("../../assets/session-report.schema.json");
/// A complete example report, equal to [`full_report`].
const EXAMPLE: &str = include_str!("../../tests/fixtures/report_example.json");

const CELL_STATUSES: [&str; 6] = ["pending", "measured", "errored", "skipped", "skipped_by_operator", "failed"];
const ATTEMPT_STATUSES: [&str; 5] = ["measured", "errored", "paused", "stopped", "skipped_by_operator"];
const ERROR_KINDS: [&str; 11] = [
    "context_overflow",
    "bad_request",
    "rate_limited",
    "overloaded",
    "server_error",
    "connect",
    "stream_reset",
    "stalled",
    "stream_error",
    "incomplete",
    "malformed_chunk",
];

/// The compiled schema; panics (failing the test) when the schema is broken.
fn validator() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(SCHEMA).expect("schema is valid JSON");
    jsonschema::draft202012::new(&schema).expect("schema compiles")
}

/// Every validation error of `instance`, one `path: message` line each.
fn errors_of(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    validator.iter_errors(instance).map(|e| format!("{}: {e}", e.instance_path)).collect()
}

/// Asserts that `instance` validates, listing every error otherwise.
fn assert_valid(instance: &Value) {
    let errors = errors_of(&validator(), instance);
    assert!(errors.is_empty(), "schema errors:\n{}", errors.join("\n"));
}

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

/// One request of an attempt with every optional field set.
fn request(worker: u32, outcome: &str) -> RequestRecord {
    RequestRecord {
        worker,
        sent_ms: 12.5 * f64::from(worker),
        ttft_ms: Some(480.0),
        e2e_ms: 56_500.0,
        output_tokens: 4096,
        window_tokens: 3000,
        itl_ms: Some(13.25),
        outcome: outcome.to_string(),
        status: Some(200),
        served_by: Some("r0".into()),
    }
}

/// A measured attempt with every `Option` set and every collection non-empty.
pub(crate) fn full_attempt(attempt: u32, status: &str) -> DecodeAttempt {
    DecodeAttempt {
        attempt,
        status: status.to_string(),
        started_s: 61.5,
        warmup_s: 9.75,
        warmup_timed_out: true,
        window_s: 30.0,
        window_tokens: 16_944,
        aggregate_tps: 564.8,
        aggregate_source: "openai_continuous_usage".into(),
        per_request_tps: 70.6,
        user_tps: Some(76.5),
        requested: 8,
        running_avg: Some(6.9),
        waiting_avg: Some(1.1),
        streaming_at_start: 7,
        capacity_limited: true,
        ttft_ms: Some(summary(481.0)),
        itl_ms: Some(summary(13.0)),
        itl_token_ms: Some(summary(12.5)),
        itl_chunk_ms: Some(summary(14.0)),
        tpot_ms: Some(summary(13.5)),
        latency_ms: Some(summary(56_500.0)),
        errors: BTreeMap::from([("stalled".into(), 1), ("context_overflow".into(), 1)]),
        error_count: 2,
        error_examples: BTreeMap::from([
            ("stalled".into(), "no data for 30 s".into()),
            ("context_overflow".into(), "HTTP 400: maximum context length".into()),
        ]),
        prometheus: Some(PromValidation {
            generation_tokens_delta: Some(17_000.0),
            generation_tps: Some(566.5),
            client_over_server: Some(0.997),
            prefix_hits_delta: Some(1024.0),
            prefix_queries_delta: Some(2048.0),
            preemptions_delta: Some(0.0),
            kv_usage_peak: Some(0.875),
        }),
        client_lag_ms: Some(summary(0.5)),
        request_samples: vec![request(0, "completed"), request(1, "cut"), request(2, "stalled")],
    }
}

/// A session report with every `Option` set and every collection non-empty.
pub(crate) fn full_report() -> SessionReport {
    let cell = |conc: u32, status: &str, attempts: Vec<DecodeAttempt>| DecodeCell {
        ctx: 16_384,
        ctx_label: "16k".into(),
        conc,
        status: status.to_string(),
        timeout_reason: Some("needs 140000 KV tokens, 131072 available".into()),
        attempts,
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
            ..minimal_report().target
        },
        calibration: vec![CalibrationInfo { ctx: 16_384, prompt_tokens: 16_380, method: "tokenize".into() }],
        decode: Some(DecodeSection {
            ctx_labels: vec!["16k".into()],
            conc: vec![4, 8],
            cells: vec![
                cell(4, "errored", vec![full_attempt(1, "errored")]),
                cell(8, "measured", vec![full_attempt(1, "paused"), full_attempt(2, "measured")]),
            ],
            aggregate_sources: vec!["openai_continuous_usage".into(), "chunk_count".into()],
        }),
        burst: Some(BurstSection {
            ctx_labels: vec!["16k".into()],
            conc: vec![4],
            cells: vec![BurstCellReport {
                ctx: 16_384,
                ctx_label: "16k".into(),
                conc: 4,
                status: "measured".into(),
                timeout_reason: None,
                attempts: vec![BurstAttempt {
                    attempt: 1,
                    status: "measured".into(),
                    started_s: 90.0,
                    requests: 4,
                    success: 3,
                    error_count: 1,
                    errors: BTreeMap::from([("overloaded".into(), 1)]),
                    e2e_ms: Some(summary(2500.0)),
                    ttft_ms: Some(summary(300.0)),
                    output_tokens: 768,
                    output_tps: 307.2,
                    makespan_s: 2.5,
                    request_samples: vec![request(0, "completed")],
                }],
            }],
        }),
        phases: vec![json!({ "name": "r1-hot90-prefix-cache", "hit_rate": 0.9 })],
        actions: vec![ActionRecord { at_s: 75.25, action: "rerun".into(), cell: Some("ctx=16k conc=8".into()) }],
        replica_series: BTreeMap::from([("r0".into(), vec![point])]),
        warnings: vec!["no prefix-cache metrics on r0".into()],
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
        },
        plan: PlanInfo {
            kinds: Vec::new(),
            ctx: Vec::new(),
            conc: Vec::new(),
            window_s: 30.0,
            warmup_timeout_s: 120.0,
            kv_oversubscribe: 1.0,
            run_burst: false,
        },
        calibration: Vec::new(),
        decode: None,
        burst: None,
        phases: Vec::new(),
        phase_history: Vec::new(),
        actions: Vec::new(),
        replica_series: BTreeMap::new(),
        warnings: Vec::new(),
    }
}

/// The JSON value of a report, as the writer would produce it.
fn to_value(report: &SessionReport) -> Value {
    serde_json::to_value(report).expect("reports serialise")
}

#[test]
fn schema_is_valid_json_and_compiles() {
    let schema: Value = serde_json::from_str(SCHEMA).expect("schema is valid JSON");
    assert!(jsonschema::draft202012::meta::is_valid(&schema), "schema fails the 2020-12 meta-schema");
    assert_eq!(schema["properties"]["schema_version"]["const"], json!(SCHEMA_VERSION));
    let _ = validator();
}

#[test]
fn full_report_validates() {
    let value = to_value(&full_report());
    assert!(value["decode"]["cells"][1]["attempts"][1]["request_samples"][2]["ttft_ms"].is_number());
    assert_valid(&value);
}

#[test]
fn minimal_report_validates() {
    let value = to_value(&minimal_report());
    assert!(value.get("gateway_version").is_none(), "skipped when None");
    assert!(value["runtime"].is_null() && value["decode"].is_null());
    assert_valid(&value);
}

/// Regenerates the example fixture: `WRITE_REPORT_EXAMPLE=tests/fixtures/report_example.json cargo test`.
#[test]
fn write_example_when_asked() {
    if let Some(path) = std::env::var_os("WRITE_REPORT_EXAMPLE") {
        let text = serde_json::to_string_pretty(&full_report()).expect("reports serialise");
        std::fs::write(path, text + "\n").expect("fixture written");
    }
}

#[test]
fn example_fixture_validates_and_matches_the_builder() {
    let example: Value = serde_json::from_str(EXAMPLE).expect("fixture is valid JSON");
    assert_valid(&example);
    let parsed: SessionReport = serde_json::from_value(example.clone()).expect("fixture parses");
    assert_eq!(parsed, full_report());
    assert_eq!(example, to_value(&full_report()), "regenerate the fixture from full_report()");
}

/// Applies `mutate` to the full report's JSON and asserts the schema rejects the result.
fn assert_rejected(what: &str, mutate: impl FnOnce(&mut Value)) {
    let mut value = to_value(&full_report());
    mutate(&mut value);
    assert!(!validator().is_valid(&value), "accepted: {what}");
}

/// The value at JSON pointer `ptr` (test data is known to have it).
fn at<'a>(value: &'a mut Value, ptr: &str) -> &'a mut Value {
    value.pointer_mut(ptr).unwrap_or_else(|| panic!("nothing at {ptr}"))
}

/// Removes `key` from the object at `ptr`.
fn remove(value: &mut Value, ptr: &str, key: &str) {
    at(value, ptr).as_object_mut().and_then(|o| o.remove(key)).unwrap_or_else(|| panic!("no {key} in {ptr}"));
}

#[test]
fn broken_contracts_are_rejected() {
    let attempt = "/decode/cells/1/attempts/1";
    assert_rejected("missing model", |v| remove(v, "", "model"));
    assert_rejected("missing optional-but-always-written runtime", |v| remove(v, "", "runtime"));
    assert_rejected("missing attempt field", |v| remove(v, attempt, "latency_ms"));
    assert_rejected("missing summary p99", |v| remove(v, &format!("{attempt}/ttft_ms"), "p99"));
    assert_rejected("replicas as string", |v| v["replicas"] = json!("two"));
    assert_rejected("negative count", |v| v["replicas"] = json!(-1));
    assert_rejected("fractional count", |v| v["target"]["max_model_len"] = json!(1.5));
    assert_rejected("conc above u32", |v| v["plan"]["conc"] = json!([4_294_967_296_u64]));
    assert_rejected("null model", |v| v["model"] = Value::Null);
    assert_rejected("null aggregate_tps", |v| at(v, attempt)["aggregate_tps"] = Value::Null);
    assert_rejected("schema_version 2", |v| v["schema_version"] = json!(2));
    assert_rejected("unknown cell status", |v| v["decode"]["cells"][0]["status"] = json!("running"));
    assert_rejected("unknown attempt status", |v| at(v, attempt)["status"] = json!("pending"));
    assert_rejected("unknown error kind", |v| at(v, attempt)["errors"]["teapot"] = json!(1));
    assert_rejected("unknown example kind", |v| at(v, attempt)["error_examples"]["teapot"] = json!("x"));
    assert_rejected("unknown outcome", |v| at(v, &format!("{attempt}/request_samples/0"))["outcome"] = json!("ok"));
    assert_rejected("extra top-level property", |v| v["extra"] = json!(1));
    assert_rejected("extra attempt property", |v| at(v, attempt)["extra"] = json!(1));
    assert_rejected("extra summary property", |v| at(v, &format!("{attempt}/itl_ms"))["p999"] = json!(1.0));
    assert_rejected("extra series property", |v| v["replica_series"]["r0"][0]["extra"] = json!(1));
    assert_rejected("phase not an object", |v| v["phases"] = json!([1]));
    assert_rejected("http status out of range", |v| {
        at(v, &format!("{attempt}/request_samples/0"))["status"] = json!(70_000)
    });
}

#[test]
fn errors_name_the_offending_path() {
    let mut value = to_value(&full_report());
    value["replica_series"]["r0"][0]["running"] = json!("7");
    value["plan"]["kinds"] = json!("decode");
    let errors = errors_of(&validator(), &value);
    assert!(errors.iter().any(|e| e.starts_with("/replica_series/r0/0/running: ")), "{errors:?}");
    assert!(errors.iter().any(|e| e.starts_with("/plan/kinds: ")), "{errors:?}");
}

/// A finite value that JSON round-trips exactly (a multiple of 1/8).
fn exact_f64() -> impl Strategy<Value = f64> {
    (0_u32..1_000_000).prop_map(|n| f64::from(n) / 8.0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn generated_cells_validate_and_round_trip(
        cell_status in 0..CELL_STATUSES.len(),
        attempt_status in 0..ATTEMPT_STATUSES.len(),
        kind in 0..ERROR_KINDS.len(),
        optional in proptest::collection::vec(any::<bool>(), 4),
        tps in exact_f64(),
    ) {
        let mut report = full_report();
        let mut attempt = full_attempt(1, ATTEMPT_STATUSES[attempt_status]);
        attempt.aggregate_tps = tps;
        attempt.errors = BTreeMap::from([(ERROR_KINDS[kind].to_string(), 3)]);
        attempt.request_samples[2].outcome = ERROR_KINDS[kind].to_string();
        attempt.running_avg = optional[0].then_some(tps);
        attempt.ttft_ms = optional[1].then(|| summary(tps));
        attempt.prometheus = attempt.prometheus.filter(|_| optional[2]);
        report.runtime = report.runtime.filter(|_| optional[3]);
        if let Some(decode) = report.decode.as_mut() {
            decode.cells[0].status = CELL_STATUSES[cell_status].to_string();
            decode.cells[0].attempts = vec![attempt];
        }
        let value = to_value(&report);
        let errors = errors_of(&validator(), &value);
        prop_assert!(errors.is_empty(), "{errors:?}");
        let back: SessionReport = serde_json::from_value(value).expect("parses back");
        prop_assert_eq!(back, report);
    }
}
