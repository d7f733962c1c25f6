//! Gateway and router metrics: dialect detection, counter series, deltas, per-worker counts.
//!
//! Known schemes (docs/protocol.md §4, §5, §8): AIBrix (`aibrix_*`, `gateway_*`),
//! vllm-router (`vllm_router_*`), sglang-router current (`smg_*`, no per-worker request
//! counter) and legacy (`sgl_router_*`). Unknown counters are passed through untouched.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::prom::Scrape;

/// Which gateway/router produced a `/metrics` page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum GatewayDialect {
    /// AIBrix gateway plugin (`aibrix_*`, `gateway_request_total`).
    #[serde(rename = "aibrix")]
    Aibrix,
    /// vllm-project/router (`vllm_router_*`).
    #[serde(rename = "vllm-router")]
    VllmRouter,
    /// sglang-router / SGLang Model Gateway, current naming (`smg_*`).
    #[serde(rename = "sglang-router")]
    SglangRouter,
    /// sglang-router, legacy naming (`sgl_router_*`).
    #[serde(rename = "sglang-router-legacy")]
    SglangRouterLegacy,
    /// Nothing recognised.
    #[default]
    #[serde(rename = "unknown")]
    Unknown,
}

const AIBRIX: &[&str] = &[
    "aibrix_prefix_cache_routing_decisions_total",
    "aibrix_prefix_cache_routing_selection_total",
    "aibrix_prefix_cache_load_imbalance_total",
    "aibrix_prefix_cache_routing_errors_total",
    "aibrix_prefix_cache_routing_latency_seconds",
    "aibrix_prefix_cache_indexer_status",
    "gateway_request_total",
    "gateway_in_flight_requests",
    "gateway_model_in_flight_requests",
    "gateway_ttft_bucket_total",
    "gateway_tpot_bucket_total",
];

const VLLM_ROUTER: &[&str] = &[
    "vllm_router_requests_total",
    "vllm_router_processed_requests_total",
    "vllm_router_policy_decisions_total",
    "vllm_router_running_requests",
    "vllm_router_cache_hits_total",
    "vllm_router_cache_misses_total",
    "vllm_router_load_balancing_events_total",
    "vllm_router_worker_health",
    "vllm_router_request_duration_seconds",
    "vllm_router_prefix_routing_decisions_total",
];

const SMG: &[&str] = &[
    "smg_http_requests_total",
    "smg_http_request_duration_seconds",
    "smg_http_responses_total",
    "smg_router_requests_total",
    "smg_worker_requests_active",
    "smg_worker_health",
    "smg_worker_selection_total",
];

const SGL_ROUTER: &[&str] = &[
    "sgl_router_requests_total",
    "sgl_router_request_duration_seconds",
    "sgl_router_request_errors_total",
    "sgl_router_retries_total",
    "sgl_router_active_workers",
    "sgl_router_worker_health",
    "sgl_router_worker_load",
    "sgl_router_processed_requests_total",
    "sgl_router_running_requests",
    "sgl_router_policy_decisions_total",
    "sgl_router_cache_hits_total",
    "sgl_router_cache_misses_total",
    "sgl_router_tree_size",
    "sgl_router_load_balancing_events_total",
    "sgl_router_http_responses_total",
];

impl GatewayDialect {
    /// Every dialect, in detection order.
    pub const ALL: [GatewayDialect; 5] =
        [Self::Aibrix, Self::VllmRouter, Self::SglangRouter, Self::SglangRouterLegacy, Self::Unknown];

    /// Stable name: `aibrix`, `vllm-router`, `sglang-router`, `sglang-router-legacy`, `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Aibrix => "aibrix",
            Self::VllmRouter => "vllm-router",
            Self::SglangRouter => "sglang-router",
            Self::SglangRouterLegacy => "sglang-router-legacy",
            Self::Unknown => "unknown",
        }
    }

    /// Detects by name prefix over samples and declared families, in this order:
    /// `aibrix_` or a known AIBrix `gateway_*` family; `vllm_router_`; `smg_`; `sgl_router_`.
    pub fn detect(scrape: &Scrape) -> Self {
        let names: Vec<&str> = scrape.names().chain(scrape.types().keys().map(String::as_str)).collect();
        let any = |f: &dyn Fn(&str) -> bool| names.iter().any(|n| f(n));
        if any(&|n| n.starts_with("aibrix_") || family_in(n, AIBRIX)) {
            Self::Aibrix
        } else if any(&|n| n.starts_with("vllm_router_")) {
            Self::VllmRouter
        } else if any(&|n| n.starts_with("smg_")) {
            Self::SglangRouter
        } else if any(&|n| n.starts_with("sgl_router_")) {
            Self::SglangRouterLegacy
        } else {
            Self::Unknown
        }
    }

    /// The per-worker request counter and its worker label, where the scheme has one.
    pub fn per_worker_counter(self) -> Option<(&'static str, &'static str)> {
        match self {
            Self::Aibrix => Some(("gateway_request_total", "target_pod")),
            Self::VllmRouter => Some(("vllm_router_processed_requests_total", "worker")),
            Self::SglangRouterLegacy => Some(("sgl_router_processed_requests_total", "worker")),
            Self::SglangRouter | Self::Unknown => None,
        }
    }
}

impl fmt::Display for GatewayDialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error for an unrecognised gateway dialect name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown gateway dialect {0:?} (expected aibrix, vllm-router, sglang-router, sglang-router-legacy, unknown)")]
pub struct UnknownGateway(pub String);

impl FromStr for GatewayDialect {
    type Err = UnknownGateway;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|d| d.as_str() == s).ok_or_else(|| UnknownGateway(s.to_string()))
    }
}

/// True if `name` is a gateway family this module knows (histogram sample suffixes
/// `_bucket`/`_sum`/`_count` are accepted too).
pub fn known_family(name: &str) -> bool {
    [AIBRIX, VLLM_ROUTER, SMG, SGL_ROUTER].iter().any(|table| family_in(name, table))
}

fn family_in(name: &str, table: &[&str]) -> bool {
    let base = ["_bucket", "_sum", "_count"].iter().find_map(|s| name.strip_suffix(s)).filter(|b| table.contains(b));
    table.contains(&name) || base.is_some()
}

/// One counter series of a scrape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterSeries {
    /// Exposed sample name, e.g. `vllm_router_processed_requests_total`.
    pub name: String,
    /// All labels of the series.
    pub labels: BTreeMap<String, String>,
    /// Cumulative value.
    pub value: f64,
}

/// The change of one counter series between two scrapes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterDelta {
    /// Exposed sample name.
    pub name: String,
    /// All labels of the series.
    pub labels: BTreeMap<String, String>,
    /// Increase over the interval (the later value itself after a reset).
    pub delta: f64,
    /// The counter went down (process restart). Omitted from JSON when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reset: bool,
}

/// Every counter series of the page, in page order: typed counters (never their
/// `_created`), and untyped samples named `*_total`.
pub fn counter_series(scrape: &Scrape) -> Vec<CounterSeries> {
    scrape
        .all()
        .iter()
        .filter(|s| scrape.is_counter_value(&s.name))
        .map(|s| CounterSeries { name: s.name.clone(), labels: s.labels.clone(), value: s.value })
        .collect()
}

/// Series whose value changed between `before` and `after`, sorted by name then labels.
/// A series new in `after` counts from 0; one missing from `after` is left out; a value
/// that went down is a reset (delta = the later value). NaN values are ignored, and a
/// series listed twice in one slice keeps its last value.
pub fn deltas(before: &[CounterSeries], after: &[CounterSeries]) -> Vec<CounterDelta> {
    let key = |s: &CounterSeries| (s.name.clone(), s.labels.clone());
    let before: BTreeMap<_, f64> = before.iter().map(|s| (key(s), s.value)).collect();
    let after: BTreeMap<_, f64> = after.iter().map(|s| (key(s), s.value)).collect();
    let mut out = Vec::new();
    for ((name, labels), value) in after {
        let prev = before.get(&(name.clone(), labels.clone())).copied();
        if value.is_nan() || prev.is_some_and(f64::is_nan) {
            continue;
        }
        let prev = prev.unwrap_or(0.0);
        if value == prev {
            continue;
        }
        let reset = value < prev;
        let delta = if reset { value } else { value - prev };
        out.push(CounterDelta { name, labels, delta, reset });
    }
    out
}

/// Requests per worker from the dialect's per-worker counter (AIBrix by `target_pod`,
/// vllm-router and legacy sglang-router by `worker`); empty for `smg_*` and unknown pages.
/// Note: vllm-router's counter is known to over-count; prefer engine counters.
pub fn per_worker_requests(scrape: &Scrape, dialect: GatewayDialect) -> BTreeMap<String, f64> {
    match dialect.per_worker_counter() {
        Some((name, label)) => scrape.sum_by(name, label),
        None => BTreeMap::new(),
    }
}
