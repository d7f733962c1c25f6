//! What preflight learned about the target: model, limits, replicas and calibrated prompts.

use crate::metrics::EngineDialect;
use std::sync::Arc;

/// The sum of `parts` when every one is known and there is at least one: an empty sum is
/// an unknown capacity, not a capacity of 0.
pub(crate) fn known_sum(parts: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    let mut total: Option<u64> = None;
    for p in parts {
        total = Some(total.unwrap_or(0) + p?);
    }
    total
}

/// What preflight learned about one replica.
#[derive(Debug, Clone)]
pub struct ReplicaFacts {
    /// Display name.
    pub name: String,
    /// `/metrics` URL.
    pub url: String,
    /// Detected dialect (Unknown when the page could not be read).
    pub dialect: EngineDialect,
    /// KV capacity, tokens.
    pub kv_capacity: Option<u64>,
    /// Why the page could not be read.
    pub error: Option<String>,
}

/// A calibrated prompt.
#[derive(Debug, Clone)]
pub struct Prompt {
    /// Target context size, tokens.
    pub ctx: u64,
    /// The prompt text (without the per-request nonce).
    pub text: Arc<str>,
    /// Tokens the server counts for it.
    pub tokens: u64,
    /// `tokenize`, `usage` or `extrapolated`.
    pub method: String,
    /// Tokens the request form adds around any text (chat template, BOS): the server's count
    /// of an empty text; None when it could not be counted.
    pub form_tokens: Option<u64>,
}

/// Everything preflight found.
#[derive(Debug, Clone)]
pub struct Facts {
    /// Served model.
    pub model: String,
    /// Context length, tokens.
    pub max_model_len: Option<u64>,
    /// `/version`.
    pub runtime: Option<String>,
    /// Gateway version, when a gateway was measured.
    pub gateway_version: Option<String>,
    /// Replicas, in the order given.
    pub replicas: Vec<ReplicaFacts>,
    /// Calibrated prompts, one per context size.
    pub prompts: Vec<Prompt>,
    /// Problems that do not stop the session.
    pub warnings: Vec<String>,
    /// The Prometheus server the replicas are read from (`run --prometheus`), as the report
    /// records it; `None` for direct scraping.
    pub metrics_source: Option<crate::report::json::MetricsSource>,
}

impl Facts {
    /// KV capacity summed over replicas, when every replica reports one; None (unknown, the
    /// KV-fit rule is off) without any replica, e.g. under `--no-metrics`.
    pub fn kv_capacity(&self) -> Option<u64> {
        known_sum(self.replicas.iter().map(|r| r.kv_capacity))
    }

    /// Dialect of the first readable replica.
    pub fn dialect(&self) -> EngineDialect {
        self.replicas.iter().map(|r| r.dialect).find(|d| *d != EngineDialect::Unknown).unwrap_or(EngineDialect::Unknown)
    }

    /// The prompt calibrated for `ctx`.
    pub fn prompt(&self, ctx: u64) -> Option<&Prompt> {
        self.prompts.iter().find(|p| p.ctx == ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::known_sum;

    #[test]
    fn an_empty_or_partial_sum_is_unknown() {
        assert_eq!(known_sum(std::iter::empty()), None, "no replica: unknown, not 0");
        assert_eq!(known_sum([Some(3), None].into_iter()), None);
        assert_eq!(known_sum([Some(3), Some(4)].into_iter()), Some(7));
    }
}
