//! Requests as the engine sees them, the events it sends back, and per-sequence state.

use std::time::Instant;
use tokio::sync::mpsc::UnboundedSender;

/// Why a request stopped generating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FinishReason {
    /// The model emitted EOS (only without `ignore_eos`).
    Stop,
    /// `max_tokens` was reached.
    Length,
}

impl FinishReason {
    /// The OpenAI `finish_reason` string.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
        }
    }
}

/// What the engine tells the HTTP handler about one request.
#[derive(Debug, Clone)]
pub(crate) enum TokenEvent {
    /// One token was generated at the end of the step finishing at `at`.
    Token {
        /// End of the step that produced it.
        at: Instant,
    },
    /// The request is done; no more events follow.
    Finished {
        /// Why it stopped.
        reason: FinishReason,
        /// Prompt tokens that were served from the prefix cache, tokens.
        cached_tokens: u64,
    },
    /// The engine cannot serve the request (it can never fit in the KV cache).
    Failed {
        /// Human-readable reason.
        message: String,
    },
}

/// A request submitted to a replica's engine.
#[derive(Debug)]
pub(crate) struct EngineRequest {
    /// Prompt token ids.
    pub prompt: Vec<u32>,
    /// Most tokens to generate.
    pub max_tokens: u32,
    /// Tokens generated before EOS (equals `max_tokens` with `ignore_eos`).
    pub stop_after: u32,
    /// When the HTTP request arrived.
    pub arrival: Instant,
    /// The answer is streamed (SGLang labels its request metrics `is_streaming`).
    pub stream: bool,
    /// Where token events go; the request is aborted when the receiver is dropped.
    pub events: UnboundedSender<TokenEvent>,
}

/// Engine-side state of one request.
#[derive(Debug)]
pub(super) struct Seq {
    pub req: EngineRequest,
    /// Chained hashes of the full prompt blocks.
    pub hashes: Vec<u64>,
    /// KV blocks held, in token order.
    pub blocks: Vec<u32>,
    /// Tokens whose KV has been computed.
    pub computed: usize,
    /// Tokens generated so far.
    pub generated: u32,
    /// Leading blocks whose prefix hash has been published to the cache.
    pub hashed: usize,
    /// Tokens to compute in the step being run.
    pub step_new: usize,
    /// Prompt tokens found in the prefix cache at first admission.
    pub cached_tokens: u64,
    /// First admitted to the running batch.
    pub admitted_at: Option<Instant>,
    /// First token emitted.
    pub first_token_at: Option<Instant>,
    /// Last token emitted.
    pub last_token_at: Option<Instant>,
}

impl Seq {
    pub(super) fn new(req: EngineRequest, hashes: Vec<u64>) -> Self {
        Self {
            req,
            hashes,
            blocks: Vec::new(),
            computed: 0,
            generated: 0,
            hashed: 0,
            step_new: 0,
            cached_tokens: 0,
            admitted_at: None,
            first_token_at: None,
            last_token_at: None,
        }
    }

    /// Prompt plus generated tokens.
    pub(super) fn num_tokens(&self) -> usize {
        self.req.prompt.len() + self.generated as usize
    }

    /// True once the client has gone away.
    pub(super) fn abandoned(&self) -> bool {
        self.req.events.is_closed()
    }

    /// The request as SGLang's metrics see it when it leaves at `at`.
    pub(super) fn leaving(&self, at: Instant) -> crate::sim::sglang::stats::Leaving {
        crate::sim::sglang::stats::Leaving {
            stream: self.req.stream,
            prompt: self.req.prompt.len() as u64,
            generated: u64::from(self.generated),
            cached: self.cached_tokens,
            e2e: at.saturating_duration_since(self.req.arrival),
        }
    }
}
