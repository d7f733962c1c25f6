//! The server-side check of a decode window: engine counter deltas next to the client's
//! count (docs/reports.md §1.2.2).

use serde::{Deserialize, Serialize};

/// Prometheus counters over the window, next to the client's view.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PromValidation {
    /// Generated tokens (sum over replicas), tokens.
    pub generation_tokens_delta: Option<f64>,
    /// The same per second of window, tok/s.
    pub generation_tps: Option<f64>,
    /// Client aggregate tok/s / server tok/s.
    pub client_over_server: Option<f64>,
    /// Prefix-cache hits, tokens.
    pub prefix_hits_delta: Option<f64>,
    /// Prefix-cache lookups, tokens.
    pub prefix_queries_delta: Option<f64>,
    /// Preemptions.
    pub preemptions_delta: Option<f64>,
    /// Peak KV usage in the window, fraction 0..1.
    pub kv_usage_peak: Option<f64>,
    /// Client and Prometheus token counts of the window disagree by more than 5% (or the
    /// server counted none while the client received some): the figures are suspect. Never
    /// set when the counts were not compared (`counts_unchecked`).
    #[serde(default)]
    pub counts_disagree: bool,
    /// The engine series `generation_tokens_delta` was read from (it moves as tokens are
    /// generated), e.g. `vllm:generation_tokens_total`; absent when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_counter: Option<String>,
    /// Why the client's and the server's token counts were not compared, e.g. "server counts
    /// move at request end on sglang (sglang:generation_tokens_total)"; absent when they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts_unchecked: Option<String>,
}
