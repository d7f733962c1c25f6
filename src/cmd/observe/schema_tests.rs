//! The observer's file against assets/observer-report.schema.json: a report with every kind
//! of field validates; each mutation a reader would trip on fails it.

use super::*;
use crate::metrics::observe::health::ShardSeen;
use crate::metrics::observe::{CellFigures, Health, Latency};
use serde_json::{Value, json};

const SCHEMA: &str = include_str!("../../../assets/observer-report.schema.json");

fn validator() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(SCHEMA).expect("schema is valid JSON");
    assert!(jsonschema::draft202012::meta::is_valid(&schema), "schema fails the 2020-12 meta-schema");
    jsonschema::draft202012::new(&schema).expect("schema compiles")
}

fn errors(v: &Value) -> Vec<String> {
    validator().iter_errors(v).map(|e| format!("{}: {e}", e.instance_path)).collect()
}

/// Two shards (one finishes, one vanishes), two cells over two polls, a failed poll.
fn full() -> Value {
    let mut health = Health::new(4.0);
    let seen = |beat, finished| ShardSeen { session: "s-1".into(), heartbeat_unix: beat, finished, active: true };
    let mut events = Vec::new();
    let mut step = |seen: BTreeMap<String, ShardSeen>, at: f64| {
        events.extend(health.update(&seen, at).into_iter().map(|event| EventAt { at_unix: at, event }));
    };
    step(BTreeMap::from([("0".into(), seen(10.0, false)), ("1".into(), seen(10.0, false))]), 10.0);
    step(BTreeMap::from([("0".into(), seen(11.0, false))]), 11.0);
    step(BTreeMap::from([("0".into(), seen(12.0, false)), ("1".into(), seen(12.0, false))]), 12.0);
    step(BTreeMap::from([("0".into(), seen(13.0, true)), ("1".into(), seen(13.0, false))]), 13.0);
    let mut r = ObserverReport {
        schema_version: OBSERVER_SCHEMA_VERSION,
        kind: "observer",
        version: "0.1.0".into(),
        prometheus: "http://127.0.0.1:9090".into(),
        client_selector: r#"job="shards",session="s-1""#.into(),
        scrape_interval_s: 1.0,
        rate_window_s: 4,
        give_up_s: Some(60.0),
        started_unix: 10.0,
        ended_unix: 14.0,
        ended_by: "all_shards_done".into(),
        cells: BTreeMap::new(),
        totals: BTreeMap::new(),
        shards: BTreeMap::new(),
        events,
        poll_errors: vec!["http://127.0.0.1:9090: connection refused".into()],
    };
    let mut c =
        CellFigures { tok_s: Some(812.5), running: 4.0, active_shards: 2.0, started: 12.0, ..Default::default() };
    c.quantiles.insert((Latency::Ttft, 500), 0.012);
    c.errors.insert("stalled".into(), 1.0);
    let idle = CellFigures { tok_s: None, started: 8.0, completed: 8.0, ..Default::default() };
    for at in [11.0, 12.0] {
        let cells =
            BTreeMap::from([("ctx=0 conc=4".to_string(), c.clone()), ("ctx=0 conc=2".to_string(), idle.clone())]);
        r.take(&View { at_unix: at, cells, shards: BTreeMap::new() });
    }
    r.shards = health.shards.clone();
    serde_json::to_value(&r).unwrap()
}

#[test]
fn a_full_observer_report_validates() {
    let v = full();
    let kinds: Vec<&str> = v["events"].as_array().unwrap().iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(kinds, ["joined", "joined", "stale", "back", "finished"], "every event kind is checked");
    assert_eq!(v["cells"]["ctx=0 conc=4"].as_array().map(Vec::len), Some(2));
    assert!(v["cells"]["ctx=0 conc=4"][0]["ttft_p99_s"].is_null());
    assert_eq!(errors(&v), Vec::<String>::new());
    let mut waits = v.clone();
    waits["give_up_s"] = Value::Null;
    waits["ended_by"] = json!("SIGINT");
    assert_eq!(errors(&waits), Vec::<String>::new(), "--observe-give-up 0 and a signal");
}

/// A change to a valid report.
type Mutation = fn(&mut Value);

#[test]
fn mutations_fail_the_schema() {
    let mutations: [(&str, Mutation); 9] = [
        ("a field the schema does not know", |v| v["extra"] = json!(1)),
        ("a missing field", |v| _ = v.as_object_mut().unwrap().remove("totals")),
        ("another kind", |v| v["kind"] = json!("session")),
        ("another version of the format", |v| v["schema_version"] = json!(2)),
        ("an unknown end", |v| v["ended_by"] = json!("bored")),
        ("a negative rate", |v| v["cells"]["ctx=0 conc=4"][0]["tok_s"] = json!(-1.0)),
        ("a count as text", |v| v["totals"]["ctx=0 conc=2"]["started"] = json!("8")),
        ("a stale event without its age", |v| _ = v["events"][2].as_object_mut().unwrap().remove("age_s")),
        ("a joined event with a stale's field", |v| v["events"][0]["vanished"] = json!(true)),
    ];
    for (what, mutate) in mutations {
        let mut v = full();
        mutate(&mut v);
        assert!(!errors(&v).is_empty(), "{what}: still valid");
    }
}
