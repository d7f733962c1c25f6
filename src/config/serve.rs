//! Settings of the serve experiment (`run --plan serve`): `vllm bench serve`'s random
//! workload, sized by its flag names.

use crate::stats::Slo;

/// What every serve cell sends, besides its input length, concurrency and rate.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeConfig {
    /// Requests per cell (`--count`, alias `--num-prompts`).
    pub num_prompts: u32,
    /// `max_tokens` of each request, sent with `ignore_eos` (`--output`, alias
    /// `--random-output-len`).
    pub output_len: u64,
    /// Seed of the prompts' token ids and of the arrival gaps (`--seed`).
    pub seed: u64,
    /// The `--goodput` SLO; None when not given (no `request_goodput`, as vLLM).
    pub goodput: Option<Slo>,
}
