//! Settings of the sustained-decode experiment (`run --plan decode`) and its burst phase: how
//! a cell warms up, which cells are skipped, and what each stream asks for.

use super::KnobStep;
use std::time::Duration;

/// What decode cells and bursts do, besides the shared ctx x load grid and window.
#[derive(Debug, Clone)]
pub struct DecodeConfig {
    /// Longest warmup per cell (`--warmup-timeout`).
    pub warmup_timeout: Duration,
    /// Extra warmup after admission, before the window opens (`--settle`).
    pub settle: Duration,
    /// Skip a cell when ctx x conc exceeds KV capacity times this (`--kv-oversubscribe`).
    pub kv_oversubscribe: f64,
    /// Run Phase 3 (bursts) after the matrix (`--run-burst`).
    pub run_burst: bool,
    /// Skip a row's cells past its knee once the row has one (`--stop-at-knee`).
    pub stop_at_knee: bool,
    /// Output tokens per burst request, tokens (`--burst-tokens`).
    pub burst_tokens: u64,
    /// `max_tokens` of sustained streams, tokens (None: what max_model_len leaves, at least the
    /// floor; `--max-tokens`).
    pub max_tokens: Option<u64>,
    /// Fewest output tokens a sustained stream asks for, tokens (`--min-stream-tokens`).
    pub min_stream_tokens: u64,
    /// How far one `+` / `-` of the monitor's load knob turns a decode cell (`--knob-step`).
    pub knob_step: KnobStep,
    /// At the window's end, let every stream finish the request it is on (up to 8 s) instead
    /// of cutting it (`--drain`).
    pub drain: bool,
}
