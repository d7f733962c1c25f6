//! The gateway's own counters and their `/metrics` page (AIBrix names).

use super::prefix::Decision;
use crate::sim::expo::Expo;
use std::collections::BTreeMap;

/// Counters of routing decisions and forwarded requests.
#[derive(Debug, Default, Clone)]
pub struct GatewayCounters {
    /// Requests forwarded, by (target pod, routing strategy).
    pub requests: BTreeMap<(String, String), u64>,
    /// Prefix-cache decisions by match-percent bucket; empty until the first prefix-cache route
    /// (AIBrix registers these families lazily).
    pub decisions: BTreeMap<&'static str, u64>,
    /// Prefix-cache selections by kind.
    pub selections: BTreeMap<&'static str, u64>,
    /// Load-imbalance shortcuts taken.
    pub load_imbalance: u64,
    /// True once the prefix-cache router was first used.
    pub prefix_registered: bool,
}

impl GatewayCounters {
    /// Counts one forwarded request.
    pub fn count_request(&mut self, pod: &str, strategy: &str) {
        *self.requests.entry((pod.to_string(), strategy.to_string())).or_default() += 1;
    }

    /// Counts one prefix-cache routing decision.
    pub fn count_decision(&mut self, d: &Decision) {
        self.prefix_registered = true;
        *self.decisions.entry(d.bucket).or_default() += 1;
        *self.selections.entry(d.selection).or_default() += 1;
        if d.imbalance {
            self.load_imbalance += 1;
        }
    }

    /// The gateway's `/metrics` page.
    pub fn render(&self, model: &str, in_flight: &[(String, usize)]) -> String {
        let mut e = Expo::new(format!("model=\"{model}\""));
        let reqs: Vec<(String, f64)> = self
            .requests
            .iter()
            .map(|((pod, strat), n)| (format!("routing_strategy=\"{strat}\",target_pod=\"{pod}\""), *n as f64))
            .collect();
        let reqs: Vec<(&str, f64)> = reqs.iter().map(|(l, n)| (l.as_str(), *n)).collect();
        e.counter_series("gateway_request", "Requests forwarded by the gateway, per target pod.", &reqs, None);
        let flight: Vec<String> = in_flight
            .iter()
            .map(|(pod, n)| format!("gateway_in_flight_requests{{model=\"{model}\",target_pod=\"{pod}\"}} {}.0", n))
            .collect();
        let mut out = e.finish();
        out.push_str("# HELP gateway_in_flight_requests Requests in flight per target pod.\n# TYPE gateway_in_flight_requests gauge\n");
        for line in flight {
            out.push_str(&line);
            out.push('\n');
        }
        if self.prefix_registered {
            out.push_str(&self.render_prefix(model));
        }
        out
    }

    fn render_prefix(&self, model: &str) -> String {
        let mut e = Expo::new(format!("model=\"{model}\",using_kv_sync=\"false\""));
        let series = |m: &BTreeMap<&'static str, u64>, label: &str| -> Vec<(String, f64)> {
            m.iter().map(|(k, v)| (format!("{label}=\"{k}\""), *v as f64)).collect()
        };
        let dec = series(&self.decisions, "match_percent_bucket");
        let dec: Vec<(&str, f64)> = dec.iter().map(|(l, v)| (l.as_str(), *v)).collect();
        e.counter_series(
            "aibrix_prefix_cache_routing_decisions",
            "Prefix cache routing decisions by match percent.",
            &dec,
            None,
        );
        let sel = series(&self.selections, "selection");
        let sel: Vec<(&str, f64)> = sel.iter().map(|(l, v)| (l.as_str(), *v)).collect();
        e.counter_series(
            "aibrix_prefix_cache_routing_selection",
            "Prefix cache routing selections by kind.",
            &sel,
            None,
        );
        e.counter(
            "aibrix_prefix_cache_load_imbalance",
            "Prefix cache routings decided by load imbalance.",
            self.load_imbalance as f64,
            None,
        );
        e.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_families_appear_after_first_decision() {
        let mut c = GatewayCounters::default();
        c.count_request("sim-a", "random");
        let text = c.render("m", &[("sim-a".into(), 1)]);
        assert!(
            text.contains("gateway_request_total{model=\"m\",routing_strategy=\"random\",target_pod=\"sim-a\"} 1.0")
        );
        assert!(!text.contains("aibrix_"));
        c.count_decision(&Decision { pod: 0, bucket: "76-100", selection: "prefix_match", imbalance: false });
        let text = c.render("m", &[]);
        assert!(text.contains("aibrix_prefix_cache_routing_decisions_total{model=\"m\",using_kv_sync=\"false\",match_percent_bucket=\"76-100\"} 1.0"));
        assert!(text.contains("aibrix_prefix_cache_load_imbalance_total{model=\"m\",using_kv_sync=\"false\"} 0.0"));
        let lines: Vec<_> = text.lines().map(String::from).collect();
        assert!(prometheus_parse::Scrape::parse(lines.into_iter().map(Ok)).is_ok());
    }
}
