//! Live counters, gauges and histograms of one simulated replica, as its `/metrics` shows them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// vLLM V1 `time_to_first_token_seconds` bucket bounds, seconds.
pub(crate) const TTFT_BOUNDS: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
    160.0, 640.0, 2560.0,
];
/// vLLM V1 `inter_token_latency_seconds` bucket bounds, seconds.
pub(crate) const ITL_BOUNDS: &[f64] =
    &[0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0];
/// vLLM V1 `e2e_request_latency_seconds` (and queue time) bucket bounds, seconds.
pub(crate) const E2E_BOUNDS: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0,
    1920.0, 7680.0,
];

/// A Prometheus histogram with fixed bounds.
#[derive(Debug, Clone)]
pub struct Hist {
    /// Upper bounds of the finite buckets, seconds.
    pub bounds: &'static [f64],
    /// Observations per bucket (not cumulative); the last entry is the `+Inf` bucket.
    pub counts: Vec<u64>,
    /// Sum of observations, seconds.
    pub sum: f64,
    /// Number of observations.
    pub count: u64,
}

impl Hist {
    /// An empty histogram over `bounds`.
    pub fn new(bounds: &'static [f64]) -> Self {
        Self { bounds, counts: vec![0; bounds.len() + 1], sum: 0.0, count: 0 }
    }

    /// Records one observation.
    pub fn observe(&mut self, d: Duration) {
        let v = d.as_secs_f64();
        let i = self.bounds.iter().position(|b| v <= *b).unwrap_or(self.bounds.len());
        self.counts[i] += 1;
        self.sum += v;
        self.count += 1;
    }
}

/// Everything a replica's `/metrics` page reports. Updated by the engine once per step.
#[derive(Debug, Clone)]
pub struct ReplicaStats {
    /// Requests in the running batch.
    pub running: usize,
    /// Requests in the waiting queue (new or preempted).
    pub waiting: usize,
    /// Fraction of KV blocks in use, 0..1.
    pub kv_usage: f64,
    /// KV blocks in use.
    pub kv_used_blocks: usize,
    /// Prompt tokens looked up in the prefix cache, tokens.
    pub prefix_queries: u64,
    /// Prompt tokens found in the prefix cache, tokens.
    pub prefix_hits: u64,
    /// Requests preempted for lack of KV blocks.
    pub preemptions: u64,
    /// Prompt tokens of requests that produced their first token, tokens.
    pub prompt_tokens: u64,
    /// Generated tokens, tokens.
    pub generation_tokens: u64,
    /// Requests finished by stop (EOS).
    pub finished_stop: u64,
    /// Requests finished by reaching max_tokens.
    pub finished_length: u64,
    /// Requests aborted (client gone) after admission.
    pub finished_abort: u64,
    /// Arrival to first token.
    pub ttft: Hist,
    /// Gap between consecutive tokens of a request.
    pub itl: Hist,
    /// Arrival to last token.
    pub e2e: Hist,
    /// Arrival to first scheduling.
    pub queue: Hist,
    /// Prompt tokens of finished requests (SGLang counts at finish), tokens.
    pub fin_prompt_tokens: u64,
    /// Generated tokens of finished requests (SGLang counts at finish), tokens.
    pub fin_generation_tokens: u64,
    /// Cached prompt tokens of finished requests, tokens.
    pub fin_cached_tokens: u64,
    /// Requests finished or aborted (SGLang `num_requests_total`).
    pub fin_requests: u64,
    /// Generated tokens per second over the last second, tok/s.
    pub gen_throughput: f64,
    /// When the replica started, seconds since the Unix epoch (the `_created` values).
    pub created_unix: f64,
    /// What a llama.cpp replica counts (per request and per decode call).
    pub llamacpp: crate::sim::llamacpp::LlamaCounters,
    /// What the SGLang page shows, moved as SGLang moves it.
    pub sglang: crate::sim::sglang::stats::SglangStats,
}

impl Default for ReplicaStats {
    fn default() -> Self {
        let created_unix = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
        Self {
            running: 0,
            waiting: 0,
            kv_usage: 0.0,
            kv_used_blocks: 0,
            prefix_queries: 0,
            prefix_hits: 0,
            preemptions: 0,
            prompt_tokens: 0,
            generation_tokens: 0,
            finished_stop: 0,
            finished_length: 0,
            finished_abort: 0,
            ttft: Hist::new(TTFT_BOUNDS),
            itl: Hist::new(ITL_BOUNDS),
            e2e: Hist::new(E2E_BOUNDS),
            queue: Hist::new(E2E_BOUNDS),
            fin_prompt_tokens: 0,
            fin_generation_tokens: 0,
            fin_cached_tokens: 0,
            fin_requests: 0,
            gen_throughput: 0.0,
            created_unix,
            llamacpp: Default::default(),
            sglang: Default::default(),
        }
    }
}

impl ReplicaStats {
    /// Prefix-cache hit ratio over the replica's lifetime, 0..1.
    pub fn hit_rate(&self) -> f64 {
        if self.prefix_queries == 0 { 0.0 } else { self.prefix_hits as f64 / self.prefix_queries as f64 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observe_fills_the_right_bucket() {
        let mut h = Hist::new(ITL_BOUNDS);
        h.observe(Duration::from_millis(10));
        h.observe(Duration::from_millis(11));
        h.observe(Duration::from_secs(100));
        assert_eq!(h.counts[0], 1);
        assert_eq!(h.counts[1], 1);
        assert_eq!(h.counts[ITL_BOUNDS.len()], 1);
        assert_eq!(h.count, 3);
    }
}
