//! Unit tests of the Prometheus API reading: answers, values, durations, grouping.

use super::*;
use crate::metrics::engine::EngineSample;
use serde_json::json;

fn answer() -> Value {
    json!({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "vllm:num_requests_running", "job": "sim", "instance": "h:1", "pod": "sim-a",
                    "model_name": "m", "engine": "0"},
         "values": [[100.0, "2"], [101.0, "3"]]},
        {"metric": {"__name__": "vllm:generation_tokens_total", "job": "sim", "instance": "h:1", "pod": "sim-a",
                    "model_name": "m", "engine": "0"},
         "values": [[100.0, "10"], [101.0, "25"]]},
        {"metric": {"__name__": "vllm:kv_cache_usage_perc", "job": "sim", "instance": "h:2", "engine": "0"},
         "values": [[100.5, "0.25"], [101.5, "NaN"]]}
    ]}})
}

#[test]
fn an_answer_groups_into_replicas_with_their_newest_samples() {
    let series = parse_matrix(&answer()).unwrap();
    assert_eq!(series.len(), 3);
    let reads = group(&series);
    let names: Vec<&str> = reads.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["h:2", "sim-a"], "pod label first, else instance");
    let a = &reads[1];
    assert_eq!((a.instance.as_str(), a.at_unix), ("h:1", 101.0));
    let s = EngineSample::detect(&a.scrape);
    assert_eq!((s.running, s.generation_tokens), (Some(3.0), Some(25.0)), "counters stay raw values");
    assert_eq!(s.dialect, crate::metrics::EngineDialect::VllmV1);
    assert!(a.scrape.all().iter().all(|x| !x.labels.contains_key("job") && x.labels.contains_key("engine")));
    assert!(reads[0].scrape.all()[0].value.is_nan());
    assert_eq!(median_spacing(&series), Some(1.0));
}

#[test]
fn errors_and_other_result_types_are_refused() {
    let vector = json!({"status": "success", "data": {"resultType": "vector", "result": []}});
    assert!(parse_matrix(&vector).unwrap_err().contains("matrix"));
    assert_eq!(parse_matrix(&json!({"data": {"resultType": "matrix", "result": []}})).unwrap(), vec![]);
}

#[test]
fn values_and_durations_parse_as_the_api_writes_them() {
    assert_eq!(parse_value("+Inf"), Some(f64::INFINITY));
    assert_eq!(parse_value("-Inf"), Some(f64::NEG_INFINITY));
    assert_eq!(parse_value("1e+09"), Some(1e9));
    assert!(parse_value("NaN").unwrap().is_nan());
    assert_eq!(parse_value("x"), None);
    for (text, secs) in [("15s", 15.0), ("1m", 60.0), ("1m30s", 90.0), ("500ms", 0.5), ("\"1s\"", 1.0)] {
        assert_eq!(parse_prom_duration(text), Some(secs), "{text}");
    }
    assert_eq!(parse_prom_duration("soon"), None);
}

#[test]
fn the_selector_is_checked_and_joined_into_the_query() {
    let s = PromServer::new("http://p:9090/", "{job=\"vllm\"}").unwrap();
    assert_eq!(s.url, "http://p:9090");
    assert_eq!(s.range_selector(&["a:b", "c:d"], 45), "{__name__=~\"a:b|c:d\",job=\"vllm\"}[45s]");
    let all = PromServer::new("http://p:9090", " ").unwrap();
    assert_eq!(all.range_selector(&["a"], 0), "{__name__=~\"a\"}[1s]");
    assert!(PromServer::new("p:9090", "").unwrap_err().starts_with("--prometheus"));
    assert!(PromServer::new("http://p", "a{b}").unwrap_err().contains("--replica-selector"));
}
