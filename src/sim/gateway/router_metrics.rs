//! Counters of the router modes and their `/metrics` pages in vllm-router (`vllm_router_*`) and
//! sglang-router 0.3.x (`smg_*`) names (docs/protocol.md §5, §8).

use super::mode::RouterPolicy;
use std::collections::BTreeMap;
use std::fmt::Write;

/// What a router-mode gateway has counted so far.
#[derive(Debug, Default, Clone)]
pub struct RouterCounters {
    /// Requests proxied, by route (`vllm_router_requests_total{route}`).
    pub routes: BTreeMap<String, u64>,
    /// Requests counted as processed, by worker index (`vllm_router_processed_requests_total`).
    pub processed: BTreeMap<usize, u64>,
    /// Policy decisions, by worker index (`vllm_router_policy_decisions_total`).
    pub decisions: BTreeMap<usize, u64>,
    /// cache_aware decisions that followed a prefix match.
    pub cache_hits: u64,
    /// cache_aware decisions without a usable prefix match.
    pub cache_misses: u64,
    /// Every HTTP request to the router, by (method, path) (`smg_http_requests_total`).
    pub http: BTreeMap<(String, String), u64>,
    /// Routed requests, by (model, endpoint, streaming) (`smg_router_requests_total`).
    pub router_requests: BTreeMap<(String, &'static str, bool), u64>,
    /// Worker selections, by model (`smg_worker_selection_total`, no worker label).
    pub selections: BTreeMap<String, u64>,
}

/// One worker as the router pages name it.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerView {
    /// Base URL, e.g. `http://127.0.0.1:8001` (the `worker` label).
    pub url: String,
    /// Requests in flight through the router.
    pub running: usize,
}

/// Escapes a label value for the text exposition format.
fn esc(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Writes one family: HELP, TYPE and a sample per (labels, value).
fn family(out: &mut String, name: &str, help: &str, kind: &str, series: &[(String, f64)]) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    for (labels, v) in series {
        let _ =
            if labels.is_empty() { writeln!(out, "{name} {v:?}") } else { writeln!(out, "{name}{{{labels}}} {v:?}") };
    }
}

fn per_worker(workers: &[WorkerView], value: impl Fn(usize, &WorkerView) -> f64) -> Vec<(String, f64)> {
    workers.iter().enumerate().map(|(i, w)| (format!("worker=\"{}\"", esc(&w.url)), value(i, w))).collect()
}

impl RouterCounters {
    /// Counts one HTTP request to the router (sglang-router's edge layer).
    pub fn count_http(&mut self, method: &str, path: &str) {
        *self.http.entry((method.to_string(), path.to_string())).or_default() += 1;
    }

    /// The vllm-router page.
    pub fn render_vllm(&self, policy: RouterPolicy, workers: &[WorkerView]) -> String {
        let mut out = String::with_capacity(2048);
        let routes: Vec<(String, f64)> =
            self.routes.iter().map(|(r, n)| (format!("route=\"{}\"", esc(r)), *n as f64)).collect();
        family(&mut out, "vllm_router_requests_total", "Total number of requests by route", "counter", &routes);
        let count = |m: &BTreeMap<usize, u64>, i: usize| m.get(&i).copied().unwrap_or(0) as f64;
        let processed = per_worker(workers, |i, _| count(&self.processed, i));
        family(
            &mut out,
            "vllm_router_processed_requests_total",
            "Total requests processed by each worker",
            "counter",
            &processed,
        );
        let running = per_worker(workers, |_, w| w.running as f64);
        family(&mut out, "vllm_router_running_requests", "Number of running requests per worker", "gauge", &running);
        let decisions: Vec<(String, f64)> = workers
            .iter()
            .enumerate()
            .map(|(i, w)| (format!("policy=\"{policy}\",worker=\"{}\"", esc(&w.url)), count(&self.decisions, i)))
            .collect();
        family(
            &mut out,
            "vllm_router_policy_decisions_total",
            "Total routing policy decisions by policy and worker",
            "counter",
            &decisions,
        );
        let health = per_worker(workers, |_, _| 1.0);
        family(
            &mut out,
            "vllm_router_worker_health",
            "Worker health status (1=healthy, 0=unhealthy)",
            "gauge",
            &health,
        );
        if policy == RouterPolicy::CacheAware {
            self.render_vllm_cache(&mut out);
        }
        out
    }

    fn render_vllm_cache(&self, out: &mut String) {
        let (hits, misses) = (self.cache_hits as f64, self.cache_misses as f64);
        family(
            out,
            "vllm_router_cache_hits_total",
            "Total cache hits in cache-aware routing",
            "counter",
            &[(String::new(), hits)],
        );
        family(
            out,
            "vllm_router_cache_misses_total",
            "Total cache misses in cache-aware routing",
            "counter",
            &[(String::new(), misses)],
        );
        let outcomes = [("outcome=\"prefix_hit\"".to_string(), hits), ("outcome=\"prefix_miss\"".to_string(), misses)];
        family(
            out,
            "vllm_router_prefix_routing_decisions_total",
            "Prefix routing decisions by outcome",
            "counter",
            &outcomes,
        );
    }

    /// The sglang-router (SGLang Model Gateway, `smg_*`) page.
    pub fn render_sglang(&self, policy: RouterPolicy, workers: &[WorkerView]) -> String {
        let mut out = String::with_capacity(2048);
        let http: Vec<(String, f64)> = self
            .http
            .iter()
            .map(|((m, p), n)| (format!("method=\"{}\",path=\"{}\"", esc(m), esc(p)), *n as f64))
            .collect();
        family(&mut out, "smg_http_requests_total", "Total HTTP requests received by the gateway", "counter", &http);
        let routed: Vec<(String, f64)> = self
            .router_requests
            .iter()
            .map(|((model, endpoint, streaming), n)| {
                let labels = format!(
                    "router_type=\"http\",backend_type=\"regular\",connection_mode=\"http\",model=\"{}\",endpoint=\"{endpoint}\",streaming=\"{streaming}\"",
                    esc(model)
                );
                (labels, *n as f64)
            })
            .collect();
        family(&mut out, "smg_router_requests_total", "Requests processed by the router", "counter", &routed);
        let active = per_worker(workers, |_, w| w.running as f64);
        family(&mut out, "smg_worker_requests_active", "Active requests per worker", "gauge", &active);
        let health = per_worker(workers, |_, _| 1.0);
        family(&mut out, "smg_worker_health", "Worker health status (1=healthy, 0=unhealthy)", "gauge", &health);
        let selections: Vec<(String, f64)> = self
            .selections
            .iter()
            .map(|(model, n)| {
                let labels = format!(
                    "worker_type=\"regular\",connection_mode=\"http\",model=\"{}\",policy=\"{policy}\"",
                    esc(model)
                );
                (labels, *n as f64)
            })
            .collect();
        family(
            &mut out,
            "smg_worker_selection_total",
            "Worker selection events by load balancer",
            "counter",
            &selections,
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workers() -> Vec<WorkerView> {
        vec![
            WorkerView { url: "http://127.0.0.1:8001".into(), running: 2 },
            WorkerView { url: "http://127.0.0.1:8002".into(), running: 0 },
        ]
    }

    fn parses(text: &str) {
        let lines: Vec<_> = text.lines().map(String::from).collect();
        assert!(prometheus_parse::Scrape::parse(lines.into_iter().map(Ok)).is_ok(), "{text}");
    }

    #[test]
    fn vllm_router_page_names_workers_by_url() {
        let mut c = RouterCounters::default();
        *c.routes.entry("/v1/completions".into()).or_default() += 3;
        c.processed.insert(0, 2);
        c.processed.insert(1, 1);
        c.decisions.insert(0, 2);
        let text = c.render_vllm(RouterPolicy::RoundRobin, &workers());
        assert!(text.contains("vllm_router_requests_total{route=\"/v1/completions\"} 3.0"));
        assert!(text.contains("vllm_router_processed_requests_total{worker=\"http://127.0.0.1:8002\"} 1.0"));
        assert!(text.contains("vllm_router_running_requests{worker=\"http://127.0.0.1:8001\"} 2.0"));
        assert!(text.contains(
            "vllm_router_policy_decisions_total{policy=\"round_robin\",worker=\"http://127.0.0.1:8002\"} 0.0"
        ));
        assert!(text.contains("# TYPE vllm_router_worker_health gauge"));
        assert!(!text.contains("cache_hits"));
        parses(&text);
        let cache = c.render_vllm(RouterPolicy::CacheAware, &workers());
        assert!(cache.contains("vllm_router_prefix_routing_decisions_total{outcome=\"prefix_hit\"} 0.0"));
        parses(&cache);
    }

    #[test]
    fn sglang_page_has_no_worker_on_selections() {
        let mut c = RouterCounters::default();
        c.count_http("POST", "/v1/chat/completions");
        c.count_http("GET", "/get_loads");
        *c.router_requests.entry(("unknown".into(), "chat", true)).or_default() += 1;
        *c.selections.entry("unknown".into()).or_default() += 1;
        let text = c.render_sglang(RouterPolicy::Random, &workers());
        assert!(text.contains("smg_http_requests_total{method=\"GET\",path=\"/get_loads\"} 1.0"));
        assert!(text.contains("endpoint=\"chat\",streaming=\"true\"} 1.0"));
        assert!(text.contains("smg_worker_selection_total{worker_type=\"regular\",connection_mode=\"http\",model=\"unknown\",policy=\"random\"} 1.0"));
        assert!(text.contains("smg_worker_health{worker=\"http://127.0.0.1:8002\"} 1.0"));
        assert!(!text.contains("vllm_router_") && !text.contains("gateway_"));
        parses(&text);
    }
}
