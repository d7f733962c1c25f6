//! The physical model of one simulated vLLM replica and its default parameters.
//!
//! Each replica is stepped by a scheduler thread like vLLM V1's engine core:
//!
//! * **Continuous batching.** Waiting requests are admitted FCFS while fewer than
//!   `max_num_seqs` are running and the step's token budget (`max_num_batched_tokens`,
//!   chunked prefill) is not spent. Running requests are scheduled first: a decoding request
//!   costs one token of budget, a request still prefilling takes up to the remaining budget.
//! * **Step time.** `base + per_seq x scheduled_seqs + per_prefill_token x prefill_tokens +
//!   per_ctx_token x resident_context_tokens`. Every scheduled request whose last token was
//!   computed samples one new token at the end of the step. Aggregate decode tok/s is
//!   therefore `n / step(n)`: it grows sub-linearly with concurrency (the `per_seq` term) and
//!   falls with context length (the `per_ctx_token` term); long prefills stall decode of the
//!   whole batch for the step they share (chunked-prefill interference).
//! * **Paged KV cache.** `kv_blocks` blocks of `block_size` tokens. Full prompt blocks are
//!   named by chained hashes of their token ids; freed blocks stay reusable (LRU) until a new
//!   allocation evicts them, so a repeated prefix skips prefill (`prefix_cache_hits`). When a
//!   running request needs a block and none is free, the newest running request is preempted
//!   (its blocks freed, recomputed later) and counted.
//! * **Admission limit.** `prompt + max_tokens > max_model_len` is refused with HTTP 400.
//!
//! Defaults reproduce the shapes of `tests/fixtures/seed_000.txt` (a 27B FP8 model on one L20-class GPU):
//!
//! | quantity | default | consequence |
//! |---|---|---|
//! | `step_base` | 5.6 ms | |
//! | `step_per_seq` | 1.15 ms | 1 stream ≈ 148 tok/s, 4 ≈ 390 tok/s (2.6x), 8 ≈ 544 tok/s |
//! | `step_per_prefill_token` | 170 µs | 16k-token prompt ≈ 2.8 s TTFT, 64k ≈ 11 s |
//! | `step_per_ctx_token_ns` | 2.5 ns | one 64k stream ≈ 145 tok/s; 4 x 64k ≈ 360 tok/s |
//! | `max_num_seqs` | 8 | concurrency ceiling: 16 requested streams run 8 |
//! | `max_num_batched_tokens` | 2048 | prefill chunk per step |
//! | `kv_blocks` x `block_size` | 22528 x 16 = 360,448 tokens | 64k x 8 runs short of blocks and preempts |
//! | `max_model_len` | 131072 | a 128k prompt plus any output overflows: HTTP 400 |
//!
//! `speed` divides every modelled duration: at `--speed 20` a step that models 10 ms takes
//! 0.5 ms of wall time, and the replica's own metrics report the wall time clients see.

use std::time::Duration;

/// Parameters of one replica's engine model. Durations are modelled (before `speed`).
#[derive(Debug, Clone, PartialEq)]
pub struct EngineParams {
    /// Most requests running at once (vLLM `--max-num-seqs`).
    pub max_num_seqs: usize,
    /// Token budget of one engine step, tokens (vLLM `--max-num-batched-tokens`).
    pub max_num_batched_tokens: usize,
    /// KV-cache blocks on the device (vLLM `num_gpu_blocks`).
    pub kv_blocks: usize,
    /// Tokens per KV block.
    pub block_size: usize,
    /// Longest prompt + output a request may have, tokens.
    pub max_model_len: usize,
    /// Fixed cost of one step.
    pub step_base: Duration,
    /// Cost per request scheduled in the step.
    pub step_per_seq: Duration,
    /// Cost per prompt (prefill) token computed in the step.
    pub step_per_prefill_token: Duration,
    /// Cost per resident context token of the scheduled requests, nanoseconds.
    pub step_per_ctx_token_ns: f64,
    /// Time a request spends in the API server (parsing, tokenising) before the engine queues
    /// it, and so outside both `running` and `waiting`. Closed-loop streams with short outputs
    /// spend it between requests, which lowers the running average with nothing waiting (docs/protocol.md §8.6).
    pub frontend_delay: Duration,
    /// Modelled time runs this many times faster than wall time.
    pub speed: f64,
}

impl Default for EngineParams {
    fn default() -> Self {
        Self {
            max_num_seqs: 8,
            max_num_batched_tokens: 2048,
            kv_blocks: 22_528,
            block_size: 16,
            max_model_len: 131_072,
            step_base: Duration::from_micros(5_600),
            step_per_seq: Duration::from_micros(1_150),
            step_per_prefill_token: Duration::from_micros(170),
            step_per_ctx_token_ns: 2.5,
            frontend_delay: Duration::ZERO,
            speed: 1.0,
        }
    }
}

impl EngineParams {
    /// KV capacity in tokens (`kv_blocks x block_size`).
    pub fn kv_capacity_tokens(&self) -> usize {
        self.kv_blocks * self.block_size
    }

    /// Modelled duration of one step, before the speed factor.
    pub fn step_cost(&self, seqs: usize, prefill_tokens: usize, ctx_tokens: usize) -> Duration {
        let times = |d: Duration, n: usize| d.saturating_mul(u32::try_from(n).unwrap_or(u32::MAX));
        self.step_base
            .saturating_add(times(self.step_per_seq, seqs))
            .saturating_add(times(self.step_per_prefill_token, prefill_tokens))
            .saturating_add(crate::units::secs(self.step_per_ctx_token_ns * 1e-9 * ctx_tokens as f64))
    }

    /// Wall-clock duration of a modelled duration under the speed factor.
    pub fn wall(&self, modelled: Duration) -> Duration {
        crate::units::secs(modelled.as_secs_f64() / self.speed.max(1e-9))
    }

    /// Checks the parameters for values that would make the model meaningless.
    pub fn validate(&self) -> Result<(), String> {
        let checks = [
            (self.max_num_seqs == 0, "--max-num-seqs must be at least 1"),
            (self.max_num_batched_tokens == 0, "--max-num-batched-tokens must be at least 1"),
            (self.kv_blocks == 0, "--kv-blocks must be at least 1"),
            (self.block_size == 0, "--block-size must be at least 1"),
            (self.max_model_len < 2, "--max-model-len must be at least 2"),
            (!(self.speed.is_finite() && self.speed > 0.0), "--speed must be a positive number"),
        ];
        match checks.iter().find(|(bad, _)| *bad) {
            Some((_, msg)) => Err((*msg).to_string()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok_per_s(p: &EngineParams, n: usize, ctx: usize) -> f64 {
        n as f64 / p.step_cost(n, 0, n * ctx).as_secs_f64()
    }

    #[test]
    fn defaults_match_seed_shapes() {
        let p = EngineParams::default();
        let one = tok_per_s(&p, 1, 0);
        assert!((140.0..=150.0).contains(&one), "1 stream: {one}");
        let four = tok_per_s(&p, 4, 0);
        assert!((2.5..=3.0).contains(&(four / one)), "4 streams: {four}");
        assert!(tok_per_s(&p, 4, 65_536) < four, "context must slow decode");
        assert_eq!(p.kv_capacity_tokens(), 360_448);
        assert!(8 * 65_536 > p.kv_capacity_tokens(), "64k x 8 must run short of KV");
    }

    #[test]
    fn speed_divides_wall_time() {
        let p = EngineParams { speed: 20.0, ..EngineParams::default() };
        assert_eq!(p.wall(Duration::from_millis(100)), Duration::from_millis(5));
        assert!(EngineParams { speed: 0.0, ..p }.validate().is_err());
    }
}
