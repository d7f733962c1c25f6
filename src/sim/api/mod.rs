//! The HTTP API of one simulated replica (vLLM's OpenAI-compatible server surface).

pub(crate) mod body;
pub(crate) mod chunks;
mod completion;
pub(crate) mod error;
mod misc;
pub(crate) mod stream;

use super::engine::EngineHandle;
use super::expo::MetricsDialect;
use super::faults::{FaultSpec, FaultTally, Power};
use super::params::EngineParams;
use axum::Router;
use axum::routing::{get, post};
use rand::rngs::StdRng;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// Everything a replica's handlers share.
#[derive(Debug)]
pub(crate) struct ReplicaState {
    /// Replica name (`sim-a`, ...).
    pub name: String,
    /// Served model name.
    pub model: String,
    /// Engine model parameters.
    pub params: EngineParams,
    /// The engine thread.
    pub engine: EngineHandle,
    /// Tokens per streamed chunk (vLLM `--stream-interval`).
    pub stream_interval: u32,
    /// Metric names exported on `/metrics`.
    pub dialect: MetricsDialect,
    /// Injected faults.
    pub faults: FaultSpec,
    /// Wall-clock delay of a slow `/metrics` answer.
    pub metrics_slow_delay: Duration,
    /// Fault draws.
    pub rng: Mutex<StdRng>,
    /// Completion requests and the faults drawn for them.
    pub tally: FaultTally,
    /// Request id counter.
    pub next_id: AtomicU64,
    /// `POST /reset_prefix_cache` is mounted (vLLM's `VLLM_SERVER_DEV_MODE=1`).
    pub dev_mode: bool,
    /// Usage carries `prompt_tokens_details.cached_tokens` (vLLM's
    /// `--enable-prompt-tokens-details`; off in stock vLLM).
    pub prompt_tokens_details: bool,
    /// Up or down ([`Power`]): every endpoint answers 503 while down.
    pub power: Arc<Power>,
}

/// The axum router of one replica.
pub(crate) fn router(state: Arc<ReplicaState>) -> Router {
    let mut r = Router::new()
        .route("/v1/completions", post(completion::completions))
        .route("/v1/chat/completions", post(completion::chat))
        .route("/health", get(misc::health))
        .route("/metrics", get(misc::metrics));
    r = match state.dialect {
        MetricsDialect::Sglang => crate::sim::sglang::api::mount(r),
        MetricsDialect::Vllm => r
            .route("/v1/models", get(misc::models))
            .route("/tokenize", post(misc::tokenize))
            .route("/version", get(misc::version)),
    };
    if state.dev_mode && state.dialect == MetricsDialect::Vllm {
        r = r.route("/reset_prefix_cache", post(misc::reset_prefix_cache));
    }
    r.fallback(misc::not_found)
        .layer(axum::middleware::from_fn_with_state(state.clone(), misc::unless_down))
        .with_state(state)
}
