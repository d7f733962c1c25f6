//! What one request measured: its own timestamps, token timeline, outcome and attribution.

use super::chunk::FinishReason;
use super::timeline::Timeline;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::Instant;

/// How a request's output tokens were counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// `usage.completion_tokens` on every chunk (`continuous_usage_stats`): exact per chunk.
    OpenaiContinuousUsage,
    /// Content chunks counted, then scaled so the total matches the final usage chunk.
    FinalUsageScaled,
    /// Content chunks counted as one token each (no usage from the server).
    ChunkCount,
    /// No output was received.
    None,
}

impl TokenSource {
    /// The report name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenaiContinuousUsage => "openai_continuous_usage",
            Self::FinalUsageScaled => "final_usage_scaled",
            Self::ChunkCount => "chunk_count",
            Self::None => "none",
        }
    }
}

/// Why a request failed. Failures are data: every kind is counted per cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// HTTP 400 for prompt + output over the model's context length.
    ContextOverflow,
    /// Another HTTP 4xx (not 429).
    BadRequest,
    /// HTTP 429.
    RateLimited,
    /// HTTP 503 (overload / admission control).
    Overloaded,
    /// Another HTTP 5xx.
    ServerError,
    /// No answer: the connection could not be made (nor on the fresh ones of its re-sends), or
    /// it closed after the request was written and before any answer (never re-sent: the
    /// server may have it).
    Connect,
    /// The body broke off mid-stream (connection reset).
    StreamReset,
    /// No data arrived for longer than the idle timeout.
    Stalled,
    /// The stream carried an error event.
    StreamError,
    /// The stream ended without a finish reason or `[DONE]`.
    Incomplete,
    /// A chunk was not valid JSON (the request may still have finished).
    MalformedChunk,
    /// No first token within the first-token timeout while the attempt received none.
    FirstTokenTimeout,
    /// HTTP 401 or 403: the server refused the credentials (the session stops).
    Unauthorized,
    /// A success answer whose body is not an event stream (HTML, JSON, an undecoded encoding).
    NotEventStream,
    /// An answer over a size limit: a response head too large for the client, or an
    /// event-stream line or event over [`crate::load::limits::SSE_LINE_MAX`].
    Oversized,
    /// A 3xx redirect: never followed, so the request and its key go nowhere else.
    Redirected,
}

impl ErrorKind {
    /// True when retrying the same request cannot succeed (the closed loop stops that stream).
    pub fn is_permanent(self) -> bool {
        matches!(
            self,
            Self::ContextOverflow
                | Self::BadRequest
                | Self::FirstTokenTimeout
                | Self::Unauthorized
                | Self::NotEventStream
                | Self::Oversized
                | Self::Redirected
        )
    }

    /// The report name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ContextOverflow => "context_overflow",
            Self::BadRequest => "bad_request",
            Self::RateLimited => "rate_limited",
            Self::Overloaded => "overloaded",
            Self::ServerError => "server_error",
            Self::Connect => "connect",
            Self::StreamReset => "stream_reset",
            Self::Stalled => "stalled",
            Self::StreamError => "stream_error",
            Self::Incomplete => "incomplete",
            Self::MalformedChunk => "malformed_chunk",
            Self::FirstTokenTimeout => "first_token_timeout",
            Self::Unauthorized => "unauthorized",
            Self::NotEventStream => "not_event_stream",
            Self::Oversized => "oversized",
            Self::Redirected => "redirected",
        }
    }
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The server finished it (`[DONE]` or a finish reason).
    Completed(Option<FinishReason>),
    /// The client stopped it on purpose (end of a measurement window, pause, stop).
    Cut,
    /// It failed.
    Failed {
        /// Failure class.
        kind: ErrorKind,
        /// One-line detail (server message or transport error), without secrets.
        detail: String,
    },
}

/// Failed requests counted by kind, with the first one-line reason of each kind (what the
/// reports keep as `errors` and `error_examples`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ErrorTally {
    /// Failed requests by kind.
    pub counts: BTreeMap<ErrorKind, u64>,
    /// The first failure's detail of each kind.
    pub examples: BTreeMap<ErrorKind, String>,
}

impl ErrorTally {
    /// The tally of `samples`' failures.
    pub fn of<'a>(samples: impl IntoIterator<Item = &'a RequestSample>) -> Self {
        let mut t = Self::default();
        for (kind, detail) in samples.into_iter().filter_map(RequestSample::failure) {
            *t.counts.entry(kind).or_default() += 1;
            t.examples.entry(kind).or_insert_with(|| detail.to_string());
        }
        t
    }
}

impl Outcome {
    /// The failure class, if it failed.
    pub fn error_kind(&self) -> Option<ErrorKind> {
        match self {
            Self::Failed { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    /// The outcome as reports record it.
    pub fn recorded(&self) -> RecordedOutcome {
        match self {
            Self::Completed(_) => RecordedOutcome::Completed,
            Self::Cut => RecordedOutcome::Cut,
            Self::Failed { kind, .. } => RecordedOutcome::Failed(*kind),
        }
    }
}

/// How a request ended, as a report records it: written `completed`, `cut` or the error
/// kind's name (`connect`), so a report's `outcome` strings and `request_outcomes` keys read
/// as before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RecordedOutcome {
    /// The server finished it.
    Completed,
    /// The client stopped it on purpose.
    Cut,
    /// It failed, of this kind.
    Failed(ErrorKind),
}

impl RecordedOutcome {
    /// The report name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Cut => "cut",
            Self::Failed(kind) => kind.as_str(),
        }
    }
}

impl Serialize for RecordedOutcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for RecordedOutcome {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        match name.as_str() {
            "completed" => Ok(Self::Completed),
            "cut" => Ok(Self::Cut),
            kind => ErrorKind::deserialize(serde::de::value::StrDeserializer::<D::Error>::new(kind)).map(Self::Failed),
        }
    }
}

/// One point of a request's token timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    /// When the chunk's bytes were read, microseconds after `sent_at`.
    pub at_us: u64,
    /// Output tokens received so far, including this chunk.
    pub tokens: u64,
}

/// Everything one request measured. Timestamps are taken by the worker itself.
#[derive(Debug, Clone)]
pub struct RequestSample {
    /// Worker (stream slot) that sent it.
    pub worker: u32,
    /// When an open-loop schedule wanted it sent (None in closed loop).
    pub scheduled_at: Option<Instant>,
    /// When the request was handed to the HTTP client.
    pub sent_at: Instant,
    /// Token timeline, one mark per chunk that carried output (compact, exact).
    pub marks: Timeline,
    /// When the request ended (last byte, error or cut).
    pub ended_at: Instant,
    /// Output tokens, by `token_source`.
    pub output_tokens: u64,
    /// How tokens were counted.
    pub token_source: TokenSource,
    /// Chunks that carried output.
    pub content_chunks: u64,
    /// `usage.prompt_tokens`, tokens.
    pub prompt_tokens: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`, tokens.
    pub cached_tokens: Option<u64>,
    /// How it ended.
    pub outcome: Outcome,
    /// Chunks that were not valid JSON.
    pub malformed_chunks: u32,
    /// HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// Replica named by the response (`target-pod`, `x-worker-url` or a configured header).
    pub served_by: Option<String>,
    /// Free-form tag of the caller (e.g. the prompt family).
    pub tag: u32,
    /// Times the request was sent again on a fresh connection because the send before
    /// provably never reached the server (at most `load::resend::MAX_RESENDS`).
    pub reconnects: u32,
    /// The verdict against [`super::live::LiveCounters::slo`] this stream contributes to the
    /// live in-flight goodput, from its tokens so far (taken back when it settles).
    pub live_verdict: Option<bool>,
    /// The answer's text, kept only when the caller asks by setting it to `Some` before the
    /// send (a conversation that sends the model's own answers back, `--history model`).
    pub text: Option<String>,
}

impl RequestSample {
    /// A sample for a request that has not produced anything yet.
    pub fn new(worker: u32, sent_at: Instant) -> Self {
        Self {
            worker,
            scheduled_at: None,
            sent_at,
            marks: Timeline::new(),
            ended_at: sent_at,
            output_tokens: 0,
            token_source: TokenSource::None,
            content_chunks: 0,
            prompt_tokens: None,
            cached_tokens: None,
            outcome: Outcome::Cut,
            malformed_chunks: 0,
            status: None,
            served_by: None,
            tag: 0,
            reconnects: 0,
            live_verdict: None,
            text: None,
        }
    }

    /// Instant of timeline mark `m`.
    pub fn mark_at(&self, m: &Mark) -> Instant {
        self.sent_at + Duration::from_micros(m.at_us)
    }

    /// When the first output arrived.
    pub fn first_token_at(&self) -> Option<Instant> {
        self.marks.first().map(|m| self.mark_at(&m))
    }

    /// When the last output arrived.
    pub fn last_token_at(&self) -> Option<Instant> {
        self.marks.last().map(|m| self.mark_at(&m))
    }

    /// Start of the latency clock: the scheduled time in open loop (so a late send cannot
    /// hide queueing), else the send time.
    pub fn start(&self) -> Instant {
        self.scheduled_at.map_or(self.sent_at, |s| s.min(self.sent_at))
    }

    /// Time to first token from [`Self::start`].
    pub fn ttft(&self) -> Option<Duration> {
        self.first_token_at().map(|t| t.saturating_duration_since(self.start()))
    }

    /// End-to-end latency from [`Self::start`].
    pub fn e2e(&self) -> Duration {
        self.ended_at.saturating_duration_since(self.start())
    }

    /// How late the send was against its schedule.
    pub fn schedule_lag(&self) -> Option<Duration> {
        self.scheduled_at.map(|s| self.sent_at.saturating_duration_since(s))
    }

    /// The failure class, if it failed.
    pub fn error_kind(&self) -> Option<ErrorKind> {
        self.outcome.error_kind()
    }

    /// The failure class and its one-line detail, if it failed.
    pub fn failure(&self) -> Option<(ErrorKind, &str)> {
        match &self.outcome {
            Outcome::Failed { kind, detail } => Some((*kind, detail)),
            _ => None,
        }
    }

    /// True when the server finished the request.
    pub fn completed(&self) -> bool {
        matches!(self.outcome, Outcome::Completed(_))
    }

    /// Inter-token latency over the whole request: (last - first) / (tokens after the first
    /// chunk), as docs/reports.md §1.2 defines it.
    pub fn itl(&self) -> Option<Duration> {
        let (first, last) = (self.marks.first()?, self.marks.last()?);
        let n = last.tokens.checked_sub(first.tokens).filter(|n| *n > 0)?;
        Some(Duration::from_micros(last.at_us - first.at_us) / n as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_recorded_outcome_reads_and_writes_as_its_report_name() {
        let all = [RecordedOutcome::Completed, RecordedOutcome::Cut, RecordedOutcome::Failed(ErrorKind::Connect)];
        let json = serde_json::to_string(&all).unwrap();
        assert_eq!(json, r#"["completed","cut","connect"]"#);
        assert_eq!(serde_json::from_str::<Vec<RecordedOutcome>>(&json).unwrap(), all);
        let counts: BTreeMap<RecordedOutcome, u64> = all.iter().map(|o| (*o, 1)).collect();
        let map = serde_json::to_string(&counts).unwrap();
        assert_eq!(serde_json::from_str::<BTreeMap<RecordedOutcome, u64>>(&map).unwrap(), counts);
        let err = serde_json::from_str::<RecordedOutcome>(r#""http_error""#).unwrap_err().to_string();
        assert!(err.contains("unknown variant `http_error`"), "{err}");
    }

    #[test]
    fn a_sample_outcome_is_recorded_by_its_kind() {
        let failed = Outcome::Failed { kind: ErrorKind::Stalled, detail: "idle".into() };
        assert_eq!(failed.recorded(), RecordedOutcome::Failed(ErrorKind::Stalled));
        assert_eq!(Outcome::Completed(None).recorded().as_str(), "completed");
        assert_eq!(Outcome::Cut.recorded().as_str(), "cut");
    }
}
