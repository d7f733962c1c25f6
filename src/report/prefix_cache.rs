//! The server's prefix cache over one attempt's own requests (issue 24): the replicas'
//! prefix-cache counters read before the first request and after the last (vLLM
//! `prefix_cache_hits`/`queries`, SGLang `cached_tokens`, llama.cpp `prompt_tokens_cached`,
//! `metrics::engine`), beside the most the attempt's workload can share. An attempt whose
//! hits exceed that found prompts an earlier run left in the cache: it is `warm`, and its
//! figures are not cold-cache figures.

use serde::{Deserialize, Serialize};

/// Share of prompt tokens a cache may serve beyond the workload's own sharing before an
/// attempt is warm: room for tokens every request shares whatever its prompt (a BOS token,
/// a chat template) on token-granular caches.
pub const WARM_MARGIN: f64 = 0.05;

/// What the prefix cache served an attempt, and whether it was warm.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct PrefixCacheCheck {
    /// Prompt tokens served from the prefix cache over the attempt, summed over replicas.
    pub hits_tokens: f64,
    /// Prompt tokens looked up in it.
    pub queries_tokens: f64,
    /// `hits_tokens / queries_tokens`, 0 to 1.
    pub hit_ratio: f64,
    /// The most the attempt's own requests can share, 0 to 1 (0: no two prompts share a
    /// cached block); null when not known (prompts repeated on purpose).
    pub expected_max_ratio: Option<f64>,
    /// True when `hit_ratio` exceeds `expected_max_ratio` by more than [`WARM_MARGIN`].
    pub warm: bool,
}

impl PrefixCacheCheck {
    /// The check of counters that moved by `hits` of `queries` tokens, or None when no prompt
    /// was looked up (no counters, or nothing sent).
    pub fn judge(hits: f64, queries: f64, expected_max_ratio: Option<f64>) -> Option<Self> {
        if !(queries > 0.0 && hits.is_finite() && hits >= 0.0) {
            return None;
        }
        let hit_ratio = (hits / queries).min(1.0);
        let warm = expected_max_ratio.is_some_and(|e| hit_ratio > e + WARM_MARGIN);
        Some(Self { hits_tokens: hits, queries_tokens: queries, hit_ratio, expected_max_ratio, warm })
    }

    /// What a warm attempt's note says: `98.4% of prompt tokens came from the prefix cache,
    /// the workload shares at most 0.0%`.
    pub fn warm_note(&self) -> String {
        let at_most = self.expected_max_ratio.unwrap_or(0.0) * 100.0;
        format!(
            "warm cache: {:.1}% of prompt tokens came from the prefix cache, the workload shares at most {at_most:.1}%",
            self.hit_ratio * 100.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_beyond_the_workload_are_warm_and_a_few_shared_tokens_are_not() {
        let cold = PrefixCacheCheck::judge(40.0, 1000.0, Some(0.0)).unwrap();
        assert!(!cold.warm && (cold.hit_ratio - 0.04).abs() < 1e-12, "a BOS a request is not warm");
        let warm = PrefixCacheCheck::judge(980.0, 1000.0, Some(0.0)).unwrap();
        assert!(warm.warm);
        assert_eq!(
            warm.warm_note(),
            "warm cache: 98.0% of prompt tokens came from the prefix cache, the workload shares at most 0.0%"
        );
        let shared = PrefixCacheCheck::judge(375.0, 1000.0, Some(0.375)).unwrap();
        assert!(!shared.warm, "the workload's own sharing");
        assert!(PrefixCacheCheck::judge(500.0, 1000.0, Some(0.375)).unwrap().warm);
        assert!(!PrefixCacheCheck::judge(1000.0, 1000.0, None).unwrap().warm, "unknown sharing: never judged");
        assert_eq!(PrefixCacheCheck::judge(0.0, 0.0, Some(0.0)), None);
        assert_eq!(PrefixCacheCheck::judge(f64::NAN, 10.0, Some(0.0)), None);
    }
}
