//! The calibrator's vocabulary: the counter it asks, its errors, options and result.

use std::future::Future;

/// Counts the tokens the server sees for a prompt text.
pub(crate) trait TokenCounter {
    /// Returns the prompt tokens of a request carrying `text`, in tokens, including the fixed overhead of
    /// the request form (chat template, nonce, BOS): what `usage.prompt_tokens` would report. A counter
    /// backed by a bare tokenizer adds the overhead itself.
    fn count(&self, text: &str) -> impl Future<Output = Result<u64, CountError>> + Send;
}

/// Why a [`TokenCounter`] could not count a text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CountError {
    /// The counter refused the text as too long (e.g. over the model's `max_model_len`).
    #[error("text too long for the counter: {0}")]
    TooLong(String),
    /// Any other failure: transport, HTTP status, unreadable reply.
    #[error("token count failed: {0}")]
    Failed(String),
    /// The counter gave no answer within its deadline: calibration stops at once, for this
    /// target and every later one (a server that does not answer a probe will not answer the next).
    #[error("{0}")]
    NoAnswer(String),
}

/// Why no prompt could be calibrated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CalibrateError {
    /// Not a single count succeeded, so nothing is known about the tokenizer.
    #[error("no token count succeeded for a {target}-token target after {probes} probe(s): {reason}")]
    NoCount {
        /// The requested total, in tokens.
        target: u64,
        /// Counter calls made for this target.
        probes: u32,
        /// The last counter error, or why no call was made.
        reason: String,
    },
    /// A count got no answer in time ([`CountError::NoAnswer`]).
    #[error("{0}")]
    NoAnswer(String),
}

/// Tuning of [`calibrate`](super::calibrate).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CalibrateOptions {
    /// Accepted relative error of the count (0.01 = 1%); never tighter than ±1 token.
    pub tolerance: f64,
    /// Counter calls allowed per target.
    pub max_probes: u32,
    /// Tokens the request form adds around the text (chat template, nonce), in tokens; the count of
    /// an empty text.
    pub overhead_tokens: u64,
}

impl Default for CalibrateOptions {
    fn default() -> Self {
        Self { tolerance: 0.01, max_probes: 8, overhead_tokens: 0 }
    }
}

/// A prompt text calibrated to a token count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Calibrated {
    /// The requested total, overhead included, in tokens.
    pub target_tokens: u64,
    /// The prompt text: a whole-word prefix of the filler stream for the seed.
    pub text: String,
    /// Total the server sees for `text`, overhead included, in tokens: as counted, or the overhead for an
    /// empty text, or the estimate when `extrapolated`.
    pub tokens: u64,
    /// Counter calls made for this target.
    pub probes: u32,
    /// The text is final: `tokens` was counted and is within tolerance of the target, or the target is at
    /// or below the overhead and the empty text is as close as the request form allows.
    pub converged: bool,
    /// The counter failed on texts this long, so `text` was sized from shorter counts and `tokens` is
    /// an estimate.
    pub extrapolated: bool,
    /// One line on how the result was reached, for logs.
    pub note: String,
}
