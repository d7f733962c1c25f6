//! Contract tests: session reports serialised from `json.rs` validate against the JSON Schema.

use super::json::*;
use super::status::{AttemptStatus, CellOutcome};
pub(crate) use super::tests_example::{full_attempt, full_report, minimal_report, summary};
use crate::load::sample::RecordedOutcome;
use crate::report::phase::RoutingPhase;
use proptest::prelude::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The published schema of the session report.
const SCHEMA: &str = include_str!("../../assets/session-report.schema.json");
/// The committed example report (`tests/fixtures/report_example.json`).
const EXAMPLE: &str = include_str!("../../tests/fixtures/report_example.json");

const CELL_STATUSES: [&str; 5] = ["pending", "measured", "errored", "skipped", "skipped_by_operator"];
const ATTEMPT_STATUSES: [&str; 5] = ["measured", "errored", "paused", "stopped", "skipped_by_operator"];
const ERROR_KINDS: [&str; 16] = [
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
    "first_token_timeout",
    "unauthorized",
    "not_event_stream",
    "oversized",
    "redirected",
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
pub(crate) fn assert_valid(instance: &Value) {
    let errors = errors_of(&validator(), instance);
    assert!(errors.is_empty(), "schema errors:\n{}", errors.join("\n"));
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

#[test]
fn example_fixture_validates_reads_back_and_renders() {
    let example: Value = serde_json::from_str(EXAMPLE).expect("fixture is valid JSON");
    assert_valid(&example);
    let parsed: SessionReport = serde_json::from_value(example.clone()).expect("fixture parses");
    assert_eq!(to_value(&parsed), example, "nothing lost or added on the way through the types");
    assert_eq!(parsed.schema_version, SCHEMA_VERSION);
    let phase = &parsed.phases[0];
    assert_eq!(phase.status, AttemptStatus::Measured);
    assert_eq!(phase.config.hot_initial_replica, Some(Some("L20-A".to_string())));
    assert_eq!(parsed.phase_history[0].status, AttemptStatus::Paused);
    let text = super::tables::render_text(&parsed, true, false);
    let lines: Vec<&str> = text.lines().collect();
    for want in [
        "| 16k        | 0.0 (2e) | 564.8 (2e) (7/8)*seq! |",
        "|            |          |                722/20 |",
        "Aggregate source(s): chunk_count, openai_continuous_usage",
        "| prefix-cache |    61/96 |      2.1k/12.0k | L20-A 69 · L20-B 27 | 0.938 | 180.5 |",
    ] {
        assert!(lines.iter().any(|l| l.starts_with(want)), "no line starting {want:?} in\n{text}");
    }
    assert!(text.contains("Scenario hot90"), "{text}");
}

#[test]
fn a_phase_that_could_not_run_validates() {
    let report = SessionReport {
        phases: vec![RoutingPhase::not_run("r9-hot90-x", "no such routing phase")],
        ..minimal_report()
    };
    let value = to_value(&report);
    assert_eq!(value["phases"][0]["error"], "no such routing phase");
    assert_eq!(value["phases"][0]["status"], "errored");
    assert_valid(&value);
    assert!(to_value(&full_report())["phases"][0].get("error").is_none(), "omitted when the phase ran");
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
    assert_rejected("schema_version 1", |v| v["schema_version"] = json!(1));
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
    assert_rejected("free-form phase", |v| v["phase_history"] = json!([{ "name": "r1", "hit_rate": 0.9 }]));
    assert_rejected("missing phase field", |v| remove(v, "/phases/0", "good"));
    assert_rejected("extra phase property", |v| v["phases"][0]["extra"] = json!(1));
    assert_rejected("unknown phase status", |v| v["phase_history"][0]["status"] = json!("pending"));
    assert_rejected("unknown attribution", |v| v["phases"][0]["attribution"] = json!("guessed"));
    assert_rejected("missing config field", |v| remove(v, "/phases/0/config", "seed"));
    assert_rejected("extra config property", |v| v["phases"][0]["config"]["extra"] = json!(1));
    assert_rejected("missing replica field", |v| remove(v, "/phases/0/replicas/L20-A", "engine_completed"));
    assert_rejected("extra replica property", |v| v["phases"][0]["replicas"]["L20-A"]["extra"] = json!(1));
    assert_rejected("family key not a number", |v| {
        v["phases"][0]["families"]["hot"] = json!({"requests": 1, "ttft_p95": null})
    });
    assert_rejected("missing p99", |v| remove(v, "/phases/0/ttft", "p99"));
    assert_rejected("unknown phase error kind", |v| v["phases"][0]["errors_by_kind"]["teapot"] = json!(1));
    assert_rejected("unknown token source", |v| v["phases"][0]["token_sources"] = json!(["telepathy"]));
    assert_rejected("three-element token range", |v| v["phases"][0]["input_tokens_range"] = json!([1, 2, 3]));
    assert_rejected("http status out of range", |v| {
        at(v, &format!("{attempt}/request_samples/0"))["status"] = json!(70_000)
    });
}

/// A shard's attempt names the cell's conc beside its own slice (`cell_requested`); the
/// field is a stream count, absent unsharded.
#[test]
fn a_shards_cell_requested_validates_and_is_a_count() {
    let attempt = "/decode/cells/1/attempts/1";
    let mut value = to_value(&full_report());
    assert!(at(&mut value, attempt).get("cell_requested").is_none(), "absent unsharded");
    at(&mut value, attempt)["cell_requested"] = json!(32);
    assert_valid(&value);
    assert_rejected("cell_requested as string", |v| at(v, attempt)["cell_requested"] = json!("32"));
    assert_rejected("negative cell_requested", |v| at(v, attempt)["cell_requested"] = json!(-1));
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
        let status: AttemptStatus = serde_json::from_value(json!(ATTEMPT_STATUSES[attempt_status])).expect("a status");
        let mut attempt = full_attempt(1, status);
        attempt.aggregate_tps = tps;
        let error_kind = serde_json::from_value(json!(ERROR_KINDS[kind])).expect("an error kind");
        attempt.errors = BTreeMap::from([(error_kind, 3)]);
        attempt.request_samples[2].outcome = RecordedOutcome::Failed(error_kind);
        attempt.running_avg = optional[0].then_some(tps);
        attempt.ttft_ms = optional[1].then(|| summary(tps));
        attempt.prometheus = attempt.prometheus.filter(|_| optional[2]);
        report.runtime = report.runtime.filter(|_| optional[3]);
        if let Some(decode) = report.decode.as_mut() {
            let outcome: CellOutcome = serde_json::from_value(json!(CELL_STATUSES[cell_status])).expect("an outcome");
            decode.cells[0].status = outcome;
            decode.cells[0].attempts = vec![attempt];
        }
        let value = to_value(&report);
        let errors = errors_of(&validator(), &value);
        prop_assert!(errors.is_empty(), "{errors:?}");
        let back: SessionReport = serde_json::from_value(value).expect("parses back");
        prop_assert_eq!(back, report);
    }
}

/// The seed's routing phase (`tests/fixtures/seed_002.json`), the one layout whose names
/// carry no unit.
const SEED_ROUTING: &str = include_str!("../../tests/fixtures/seed_002.json");

#[test]
fn fields_the_seed_lacks_say_their_unit() {
    let seed: Value = serde_json::from_str(SEED_ROUTING).expect("seed is JSON");
    let example: Value = serde_json::from_str(EXAMPLE).expect("fixture is JSON");
    let seed_phase = seed["phases"][0].as_object().expect("a seed phase");
    let phase = example["phases"][0].as_object().expect("an example phase");
    for (key, value) in phase {
        let latency = value.get("p50").is_some();
        if latency && !seed_phase.contains_key(key) {
            assert!(key.ends_with("_s") || key.ends_with("_ms"), "phase field `{key}` is new and has no unit");
        }
    }
    for (key, value) in example["decode"]["cells"][0]["attempts"][0].as_object().expect("an attempt") {
        if value.get("p50").is_some() {
            assert!(key.ends_with("_ms"), "attempt field `{key}` is a latency without `_ms`");
        }
    }
}
