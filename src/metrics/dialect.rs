//! Which engine produced a `/metrics` page, detected from exact metric names.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::prom::Scrape;

/// The engine family (and generation) behind a `/metrics` page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum EngineDialect {
    /// vLLM V1 engine (`engine` label, `kv_cache_usage_perc`, `prefix_cache_*`).
    #[serde(rename = "vllm-v1")]
    VllmV1,
    /// vLLM V0 engine (`gpu_cache_usage_perc`, `num_requests_swapped`, no `engine` label).
    #[serde(rename = "vllm-v0")]
    VllmV0,
    /// SGLang (`sglang:*`, only with `--enable-metrics`).
    #[serde(rename = "sglang")]
    Sglang,
    /// llama.cpp `llama-server --metrics` (`llamacpp:*`, no labels).
    #[serde(rename = "llama.cpp")]
    LlamaCpp,
    /// Nothing recognised.
    #[default]
    #[serde(rename = "unknown")]
    Unknown,
}

const V1_MARKERS: &[&str] = &["vllm:kv_cache_usage_perc", "vllm:prefix_cache_queries_total"];

impl EngineDialect {
    /// Every dialect, in detection order.
    pub const ALL: [EngineDialect; 5] = [Self::VllmV1, Self::VllmV0, Self::Sglang, Self::LlamaCpp, Self::Unknown];

    /// Stable name: `vllm-v1`, `vllm-v0`, `sglang`, `llama.cpp`, `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::VllmV1 => "vllm-v1",
            Self::VllmV0 => "vllm-v0",
            Self::Sglang => "sglang",
            Self::LlamaCpp => "llama.cpp",
            Self::Unknown => "unknown",
        }
    }

    /// True for both vLLM generations.
    pub fn is_vllm(self) -> bool {
        matches!(self, Self::VllmV1 | Self::VllmV0)
    }

    /// How this engine's counters follow generated tokens while streams run, which decides
    /// what the decode cross-check and the saturation test may read (docs/reports.md §1.2.2).
    pub fn live_tokens(self) -> LiveTokens {
        match self {
            Self::VllmV1 | Self::VllmV0 => LiveTokens::Counter("vllm:generation_tokens_total"),
            Self::LlamaCpp => LiveTokens::Counter("llamacpp:n_busy_slots_per_decode x llamacpp:n_decode_total"),
            Self::Sglang => LiveTokens::Counter("sglang:realtime_tokens_total{mode=\"decode\"}"),
            Self::Unknown => LiveTokens::Unknown,
        }
    }
}

/// What an engine's `/metrics` says about tokens while they are generated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveTokens {
    /// A counter (or product of series, named here) that moves as tokens are generated; an
    /// older build may lack it (see [`EngineDialect::no_live_counter_reason`]).
    Counter(&'static str),
    /// No engine series recognised.
    Unknown,
}

impl LiveTokens {
    /// Why a window's client token count cannot be checked against the server's, if it cannot.
    pub fn unchecked_reason(self, dialect: EngineDialect) -> Option<String> {
        match self {
            Self::Counter(_) => None,
            Self::Unknown => Some(format!("no engine token counter recognised ({dialect} dialect)")),
        }
    }
}

impl EngineDialect {
    /// The counter of generated tokens that every request adds to when it ends (vLLM's moves
    /// per step as well); what a serve cell's total is checked against.
    pub fn generated_tokens_counter(self) -> Option<&'static str> {
        match self {
            Self::VllmV1 | Self::VllmV0 => Some("vllm:generation_tokens_total"),
            Self::Sglang => Some("sglang:generation_tokens_total"),
            Self::LlamaCpp => Some("llamacpp:tokens_predicted_total"),
            Self::Unknown => None,
        }
    }

    /// Why the counts were not compared when the page lacked the live counter (an older build):
    /// the engine's request-end counter is all it has.
    pub fn no_live_counter_reason(self) -> String {
        match (self, self.live_tokens()) {
            (Self::Sglang, LiveTokens::Counter(live)) => format!(
                "server counts move at request end on sglang ({}); this build has no {live}",
                self.generated_tokens_counter().unwrap_or_default()
            ),
            (_, LiveTokens::Counter(live)) => format!("the page has no {live}"),
            (_, other) => other.unchecked_reason(self).unwrap_or_default(),
        }
    }
}

impl EngineDialect {
    /// Detects the dialect from sample names and declared `# TYPE` families:
    ///
    /// 1. Any `vllm:` name → vLLM. Then, in order:
    ///    `vllm:num_requests_swapped` present → V0 (swapping does not exist in V1);
    ///    `vllm:kv_cache_usage_perc` or `vllm:prefix_cache_queries_total` present, or any
    ///    `vllm:` sample carries an `engine` label → V1;
    ///    `vllm:gpu_cache_usage_perc` present → V0;
    ///    otherwise V1, the only generation still shipped (e.g. a histogram-only excerpt).
    /// 2. Else any `sglang:` name → SGLang; else any `llamacpp:` name → llama.cpp.
    /// 3. Else unknown.
    pub fn detect(scrape: &Scrape) -> Self {
        let present = |name: &str| scrape.has(name) || scrape.types().contains_key(name);
        let any_prefix = |prefix: &str| {
            scrape.names().any(|n| n.starts_with(prefix)) || scrape.types().keys().any(|n| n.starts_with(prefix))
        };
        if any_prefix("vllm:") {
            let engine_label =
                scrape.all().iter().any(|s| s.name.starts_with("vllm:") && s.labels.contains_key("engine"));
            if present("vllm:num_requests_swapped") {
                Self::VllmV0
            } else if engine_label || V1_MARKERS.iter().any(|m| present(m)) {
                Self::VllmV1
            } else if present("vllm:gpu_cache_usage_perc") {
                Self::VllmV0
            } else {
                Self::VllmV1
            }
        } else if any_prefix("sglang:") {
            Self::Sglang
        } else if any_prefix("llamacpp:") {
            Self::LlamaCpp
        } else {
            Self::Unknown
        }
    }
}

impl fmt::Display for EngineDialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error for an unrecognised dialect name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown engine dialect {0:?} (expected vllm-v1, vllm-v0, sglang, llama.cpp, unknown)")]
pub struct UnknownDialect(pub String);

impl FromStr for EngineDialect {
    type Err = UnknownDialect;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|d| d.as_str() == s).ok_or_else(|| UnknownDialect(s.to_string()))
    }
}
