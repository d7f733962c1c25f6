//! The routing policy a gateway actually applied, read from its own counters: vllm-router's
//! `vllm_router_policy_decisions_total{policy,worker}`, sglang-router's
//! `smg_worker_selection_total{policy}` (legacy `sgl_router_policy_decisions_total`). Both
//! routers fix their policy at start and ignore the `routing-strategy` header
//! (docs/protocol.md §8.8), so a route asked of them is checked against what they did.

use crate::metrics::gateway::{CounterDelta, CounterSeries, GatewayDialect};
use std::collections::BTreeMap;

/// Counters whose `policy` label names the policy that picked the worker.
const POLICY_COUNTERS: &[&str] =
    &["vllm_router_policy_decisions_total", "smg_worker_selection_total", "sgl_router_policy_decisions_total"];

/// The route name a session uses for "whatever policy the router was started with".
pub(crate) const DEPLOYED: &str = "deployed";

/// True for gateways whose policy is fixed at start (they ignore `routing-strategy`).
pub(crate) fn fixed_policy(dialect: GatewayDialect) -> bool {
    matches!(dialect, GatewayDialect::VllmRouter | GatewayDialect::SglangRouter | GatewayDialect::SglangRouterLegacy)
}

fn policy_label<'a>(name: &str, labels: &'a BTreeMap<String, String>) -> Option<&'a str> {
    POLICY_COUNTERS.contains(&name).then(|| labels.get("policy").map(String::as_str)).flatten()
}

/// Decisions per policy over a phase (only policies that decided something).
pub(crate) fn applied_policies(deltas: &[CounterDelta]) -> BTreeMap<String, f64> {
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    for d in deltas.iter().filter(|d| d.delta > 0.0) {
        if let Some(p) = policy_label(&d.name, &d.labels) {
            *out.entry(p.to_string()).or_default() += d.delta;
        }
    }
    out
}

/// The policy that made most of the phase's decisions (None without policy counters).
pub(crate) fn applied_policy(deltas: &[CounterDelta]) -> Option<String> {
    applied_policies(deltas).into_iter().max_by(|a, b| a.1.total_cmp(&b.1)).map(|(p, _)| p)
}

/// The policy a router's page names, even before it decided anything (zero-valued series).
pub(crate) fn deployed_policy(series: &[CounterSeries]) -> Option<String> {
    series.iter().find_map(|s| policy_label(&s.name, &s.labels)).map(str::to_string)
}

fn canonical(name: &str) -> String {
    let n = name.trim().to_ascii_lowercase().replace('-', "_");
    match n.as_str() {
        "prefix_cache" => "cache_aware".into(),
        _ => n,
    }
}

/// Whether asking for `route` got `policy` (AIBrix's `prefix-cache` is the routers'
/// `cache_aware`; `-` and `_` are the same).
pub(crate) fn route_matches(route: &str, policy: &str) -> bool {
    canonical(route) == canonical(policy)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(name: &str, labels: &[(&str, &str)], delta: f64) -> CounterDelta {
        CounterDelta {
            name: name.into(),
            labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            delta,
            reset: false,
        }
    }

    #[test]
    fn the_policy_comes_from_the_counters_that_moved() {
        let d = vec![
            delta("vllm_router_policy_decisions_total", &[("policy", "cache_aware"), ("worker", "a")], 6.0),
            delta("vllm_router_policy_decisions_total", &[("policy", "cache_aware"), ("worker", "b")], 26.0),
            delta("vllm_router_policy_decisions_total", &[("policy", "random"), ("worker", "b")], 0.0),
            delta("vllm_router_requests_total", &[("route", "/v1/completions")], 32.0),
        ];
        assert_eq!(applied_policies(&d), [("cache_aware".to_string(), 32.0)].into());
        assert_eq!(applied_policy(&d).as_deref(), Some("cache_aware"));
        let smg = vec![delta("smg_worker_selection_total", &[("policy", "round_robin"), ("model", "m")], 4.0)];
        assert_eq!(applied_policy(&smg).as_deref(), Some("round_robin"));
        assert_eq!(applied_policy(&[]), None);
    }

    #[test]
    fn routes_match_their_router_policy_names() {
        assert!(route_matches("prefix-cache", "cache_aware"));
        assert!(route_matches("round-robin", "round_robin"));
        assert!(route_matches("cache_aware", "cache_aware"));
        assert!(!route_matches("random", "cache_aware"));
        assert!(!route_matches("least-request", "round_robin"));
        assert!(fixed_policy(GatewayDialect::SglangRouter) && !fixed_policy(GatewayDialect::Aibrix));
        let s = CounterSeries {
            name: "vllm_router_policy_decisions_total".into(),
            labels: [("policy".to_string(), "random".to_string())].into(),
            value: 0.0,
        };
        assert_eq!(deployed_policy(&[s]).as_deref(), Some("random"));
    }
}
