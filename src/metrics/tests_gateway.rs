//! Tests of gateway dialects, counter series, deltas and per-worker counts.

use std::collections::BTreeMap;

use super::gateway::{
    self, CounterDelta, CounterSeries, GatewayDialect, counter_series, deltas, known_family, per_worker_requests,
};
use super::tests_prom::{FIXTURES, fixture};

fn series(name: &str, labels: &[(&str, &str)], value: f64) -> CounterSeries {
    CounterSeries {
        name: name.to_string(),
        labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        value,
    }
}

#[test]
fn dialect_of_every_fixture() {
    for (name, _) in FIXTURES {
        let want = match *name {
            "aibrix_gateway" => GatewayDialect::Aibrix,
            "vllm_router" => GatewayDialect::VllmRouter,
            "smg_router" => GatewayDialect::SglangRouter,
            "sgl_router_legacy" => GatewayDialect::SglangRouterLegacy,
            _ => GatewayDialect::Unknown,
        };
        assert_eq!(GatewayDialect::detect(&fixture(name)), want, "{name}");
    }
}

#[test]
fn dialect_names_serialise_as_strings() {
    let json = serde_json::to_string(&GatewayDialect::SglangRouterLegacy).unwrap();
    assert_eq!(json, "\"sglang-router-legacy\"");
    assert_eq!(GatewayDialect::VllmRouter.to_string(), "vllm-router");
    let back: GatewayDialect = serde_json::from_str("\"aibrix\"").unwrap();
    assert_eq!(back, GatewayDialect::Aibrix);
    for d in GatewayDialect::ALL {
        assert_eq!(d.as_str().parse::<GatewayDialect>().unwrap(), d);
        assert_eq!(serde_json::to_string(&d).unwrap(), format!("\"{d}\""));
    }
    assert!("smg".parse::<GatewayDialect>().is_err());
}

#[test]
fn counter_series_takes_counters_only() {
    let all = counter_series(&fixture("aibrix_gateway"));
    assert_eq!(all.len(), 12);
    assert!(all.iter().all(|s| !s.name.ends_with("_bucket") && !s.name.ends_with("_count")));
    assert!(all.iter().any(|s| s.name == "process_cpu_seconds_total"));
    assert!(!all.iter().any(|s| s.name.starts_with("go_")));
    let engine = counter_series(&fixture("vllm_v1"));
    assert!(engine.iter().all(|s| !s.name.ends_with("_created")));
    assert!(!engine.iter().any(|s| s.name.starts_with("vllm:iteration_tokens_total")));
    let prompt: f64 = engine.iter().filter(|s| s.name == "vllm:prompt_tokens_total").map(|s| s.value).sum();
    assert_eq!(prompt, 8000.0);
    // Untyped pages: `*_total` names count as counters.
    let untyped = super::prom::Scrape::parse_strict("a_total 1\nb 2\n").unwrap();
    assert_eq!(counter_series(&untyped), vec![series("a_total", &[], 1.0)]);
}

#[test]
fn per_worker_requests_by_dialect() {
    let s = fixture("aibrix_gateway");
    let got = per_worker_requests(&s, GatewayDialect::detect(&s));
    let want: BTreeMap<String, f64> =
        [("m-7d9f8c6b5-abcde", 31.0), ("m-7d9f8c6b5-fghij", 22.0)].map(|(k, v)| (k.to_string(), v)).into();
    assert_eq!(got, want);
    let s = fixture("vllm_router");
    let got = per_worker_requests(&s, GatewayDialect::VllmRouter);
    assert_eq!(got["http://127.0.0.1:8001"], 80.0);
    assert_eq!(got["http://127.0.0.1:8002"], 65.0);
    let s = fixture("sgl_router_legacy");
    let got = per_worker_requests(&s, GatewayDialect::SglangRouterLegacy);
    assert_eq!(got.values().sum::<f64>(), 40.0);
    let s = fixture("smg_router");
    assert!(per_worker_requests(&s, GatewayDialect::SglangRouter).is_empty());
    assert!(per_worker_requests(&s, GatewayDialect::Unknown).is_empty());
}

#[test]
fn deltas_list_only_changed_series_sorted() {
    let before = counter_series(&fixture("aibrix_gateway"));
    let mut after = before.clone();
    for s in after.iter_mut() {
        if s.name == "gateway_request_total" && s.labels["target_pod"] == "m-7d9f8c6b5-fghij" {
            s.value += 5.0;
        }
        if s.name == "aibrix_prefix_cache_load_imbalance_total" {
            s.value = 1.0;
        }
    }
    after.push(series("aibrix_prefix_cache_routing_errors_total", &[("reason", "x")], 2.0));
    after.push(series("zero_total", &[], 0.0));
    after.retain(|s| s.name != "process_cpu_seconds_total");
    let d = deltas(&before, &after);
    let names: Vec<&str> = d.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "aibrix_prefix_cache_load_imbalance_total",
            "aibrix_prefix_cache_routing_errors_total",
            "gateway_request_total"
        ]
    );
    assert_eq!((d[0].delta, d[0].reset), (1.0, true));
    assert_eq!((d[1].delta, d[1].reset), (2.0, false));
    assert_eq!(d[2].delta, 5.0);
    assert_eq!(d[2].labels["target_pod"], "m-7d9f8c6b5-fghij");
}

#[test]
fn deltas_sort_by_labels_within_a_name() {
    let before = [series("c_total", &[("w", "b")], 1.0)];
    let after =
        [series("c_total", &[("w", "b")], 3.0), series("c_total", &[("w", "a")], 1.0), series("b_total", &[], 7.0)];
    let d = deltas(&before, &after);
    let keys: Vec<(String, Option<String>)> = d.iter().map(|x| (x.name.clone(), x.labels.get("w").cloned())).collect();
    assert_eq!(keys[0], ("b_total".to_string(), None));
    assert_eq!(keys[1], ("c_total".to_string(), Some("a".to_string())));
    assert_eq!((keys[2].1.as_deref(), d[2].delta), (Some("b"), 2.0));
}

#[test]
fn delta_json_shape() {
    let d = CounterDelta {
        name: "gateway_request_total".into(),
        labels: [("target_pod".to_string(), "p".to_string())].into(),
        delta: 3.0,
        reset: false,
    };
    let json = serde_json::to_string(&d).unwrap();
    assert_eq!(json, r#"{"name":"gateway_request_total","labels":{"target_pod":"p"},"delta":3.0}"#);
    let back: CounterDelta = serde_json::from_str(&json).unwrap();
    assert_eq!(back, d);
    let reset = CounterDelta { reset: true, ..d };
    assert!(serde_json::to_string(&reset).unwrap().ends_with(r#""delta":3.0,"reset":true}"#));
}

#[test]
fn known_families() {
    assert!(known_family("gateway_request_total"));
    assert!(known_family("aibrix_prefix_cache_routing_selection_total"));
    assert!(known_family("vllm_router_request_duration_seconds_bucket"));
    assert!(known_family("smg_worker_selection_total"));
    assert!(known_family("sgl_router_processed_requests_total"));
    assert!(!known_family("vllm:prompt_tokens_total"));
    assert!(!known_family("gateway_request"));
    assert_eq!(GatewayDialect::Aibrix.per_worker_counter(), Some(("gateway_request_total", "target_pod")));
    assert_eq!(gateway::GatewayDialect::SglangRouter.per_worker_counter(), None);
}
