//! The llama.cpp engine mode: every replica answers like a real `llama-server --metrics`
//! (commit 7e4c0a9, captured in `tests/fixtures/llamacpp_7e4c0a9/`).
//!
//! The engine underneath is the simulator's own scheduler, set up the way llama-server runs:
//!
//! * **Slots.** `--max-num-seqs` slots (`total_slots`), each with a context of `--slot-ctx`
//!   tokens (llama.cpp's `-c` split over `-np`); the KV cache holds every slot in full, so
//!   nothing is ever preempted. Requests beyond the slots wait (`requests_deferred`).
//! * **Limits.** A prompt that does not fit its slot is refused before any event with HTTP 400
//!   `exceed_context_size_error`; a generation stops when prompt + output fills the slot
//!   (`finish_reason: "length"`), whatever `max_tokens` asked for.
//! * **Prompt cache.** Token-exact (block size 1): a repeated prompt re-evaluates only its last
//!   token, as llama-server's slot cache does.
//! * **Wire.** llama.cpp's stream shapes, discovery endpoints, error bodies, `llamacpp:*`
//!   metrics without labels, and, on loopback, the connection closed after every streamed
//!   response although it was advertised as kept alive ([`server`]).

mod body;
mod chunks;
mod completion;
mod counters;
mod discovery;
mod error;
mod metrics;
pub(crate) mod server;
mod stream;

pub(crate) use counters::LlamaCounters;

use super::SimConfig;
use super::api::ReplicaState;
use super::params::EngineParams;
use axum::Router;
use axum::routing::{get, post};
use std::fmt;
use std::sync::Arc;

/// The `build_info` (and `system_fingerprint`) of the imitated build.
pub(crate) const BUILD_INFO: &str = "b1-7e4c0a9";

/// Which server every replica of the simulator imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum EngineMode {
    /// vLLM's OpenAI-compatible server (in the metrics dialect of `--metrics-dialect`).
    #[default]
    #[value(name = "vllm")]
    Vllm,
    /// llama.cpp's `llama-server --metrics` (7e4c0a9): slots, `llamacpp:*` metrics, its streams.
    #[value(name = "llamacpp")]
    Llamacpp,
}

impl EngineMode {
    /// Stable name, as on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Vllm => "vllm",
            Self::Llamacpp => "llamacpp",
        }
    }
}

impl fmt::Display for EngineMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The context of one slot, tokens: `--slot-ctx`, else the KV capacity shared out over the
/// slots (at most `--max-model-len`), as llama-server splits `-c` over `-np`.
pub(crate) fn slot_ctx(cfg: &SimConfig) -> usize {
    let shared = cfg.engine.kv_capacity_tokens() / cfg.engine.max_num_seqs.max(1);
    cfg.slot_ctx.unwrap_or_else(|| shared.min(cfg.engine.max_model_len))
}

/// The engine parameters of a llama.cpp replica: a token-exact cache (block size 1) holding
/// every slot in full, and the slot as the longest sequence.
pub(crate) fn engine_params(cfg: &SimConfig) -> EngineParams {
    let ctx = slot_ctx(cfg);
    EngineParams {
        block_size: 1,
        kv_blocks: ctx.saturating_mul(cfg.engine.max_num_seqs),
        max_model_len: ctx,
        ..cfg.engine.clone()
    }
}

/// Now, seconds since the Unix epoch (the `created` fields).
fn unix_seconds() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Rejects a llama.cpp configuration no replica can run: a slot under 2 tokens, slots that
/// together hold more than the KV capacity (llama-server splits its `-c` over `-np`), or a
/// `--slot-ctx` for the vLLM mode, which has no slots.
pub(crate) fn validate(cfg: &SimConfig) -> Result<(), String> {
    let Some(ctx) = cfg.slot_ctx else {
        return match cfg.engine_mode == EngineMode::Llamacpp && slot_ctx(cfg) < 2 {
            true => Err("the KV capacity shared out over --max-num-seqs leaves a slot under 2 tokens".into()),
            false => Ok(()),
        };
    };
    if cfg.engine_mode != EngineMode::Llamacpp {
        return Err("--slot-ctx is the context of a llama.cpp slot: give it with --engine llamacpp".into());
    }
    if ctx < 2 {
        return Err("--slot-ctx must be at least 2 tokens".into());
    }
    let (slots, kv) = (cfg.engine.max_num_seqs, cfg.engine.kv_blocks.saturating_mul(cfg.engine.block_size));
    match ctx.checked_mul(slots).is_some_and(|all| all <= kv) {
        true => Ok(()),
        false => Err(format!(
            "--slot-ctx {ctx} x {slots} slots (--max-num-seqs) exceeds the KV capacity of {kv} tokens \
             (--kv-blocks x --block-size); raise --kv-blocks or lower --slot-ctx"
        )),
    }
}

/// Everything a llama.cpp replica's handlers share.
#[derive(Debug)]
pub(crate) struct LlamaState {
    /// The replica (engine, faults, power, ids); its `params` are [`engine_params`].
    pub replica: ReplicaState,
    /// Context of one slot, tokens (`n_ctx` in `/props`, `/slots`, `/v1/models`).
    pub slot_ctx: usize,
    /// The model's training context (`n_ctx_train`), tokens: the configured `--max-model-len`.
    pub n_ctx_train: usize,
}

impl LlamaState {
    /// The state of a replica of `cfg` built as `replica`.
    pub(crate) fn new(replica: ReplicaState, cfg: &SimConfig) -> Self {
        Self { replica, slot_ctx: slot_ctx(cfg), n_ctx_train: cfg.engine.max_model_len }
    }

    /// Number of slots (`total_slots`).
    pub(crate) fn slots(&self) -> usize {
        self.replica.params.max_num_seqs
    }
}

/// The axum router of one llama.cpp replica.
pub(crate) fn router(state: Arc<LlamaState>) -> Router {
    Router::new()
        .route("/v1/completions", post(completion::completions))
        .route("/completions", post(completion::completions))
        .route("/v1/chat/completions", post(completion::chat))
        .route("/chat/completions", post(completion::chat))
        .route("/v1/models", get(discovery::models))
        .route("/models", get(discovery::models))
        .route("/props", get(discovery::props))
        .route("/slots", get(discovery::slots))
        .route("/health", get(discovery::health))
        .route("/v1/health", get(discovery::health))
        .route("/tokenize", post(discovery::tokenize_endpoint))
        .route("/metrics", get(metrics::metrics))
        .fallback(discovery::not_found)
        .method_not_allowed_fallback(discovery::not_found)
        .layer(axum::middleware::from_fn_with_state(state.clone(), discovery::unless_down))
        .layer(axum::middleware::from_fn(server::llama_headers))
        .with_state(state)
}

#[cfg(test)]
#[path = "inproc_tests.rs"]
mod inproc_tests;
