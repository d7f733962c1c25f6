//! One streaming request, measured by the task that sends it: the per-token hot path.
//!
//! Per body read: one `Instant::now()` (the read's time, or the kernel's receive time of its data
//! where the transport gives it: `BackendResponse::chunk_at`), the SSE decoder (no allocation for whole events), the
//! chunk parser (the stream's learned chunk shape, else only the fields used), one timeline push
//! (two varints) per chunk that carried tokens, and two relaxed atomic adds for the whole read
//! (with `--metrics-listen`, up to three more for the ITL histogram: `load::live_hist`).
//! No lock, no channel, no rendering.

use super::backend::{Backend, BackendResponse};
use super::chunk::{ChunkInfo, ChunkReader, FinishReason, parse_chunk};
use super::classify::{classify_status, failure, refusal};
use super::live::LiveCounters;
use super::sample::{ErrorKind, Mark, Outcome, RequestSample, TokenSource};
use super::scrub::Scrubber;
use super::sse::{SseDecoder, SseEvent};
use super::timeline::Timeline;
use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName};
use std::sync::atomic::AtomicU32;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use wait::{Waits, Woke};

#[path = "stream_wait.rs"]
mod wait;

#[path = "stream_deadline.rs"]
mod deadline;

#[path = "stream_head.rs"]
mod head;
use deadline::{FirstTokenClock, next_deadline};
use head::{await_head, event_stream_doubt, served_by};

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;

/// Everything needed to send one streaming request.
#[derive(Debug, Clone)]
pub struct StreamSpec<'a> {
    /// Full URL of the endpoint.
    pub url: &'a str,
    /// Request headers (authorization, routing strategy, ...).
    pub headers: &'a HeaderMap,
    /// Response headers that name the serving replica, in order of preference.
    pub served_by: &'a [HeaderName],
    /// Longest wait for the first token, from the send; None waits until cancelled.
    pub first_token_timeout: Option<Duration>,
    /// While other requests sharing the live counters receive tokens, a request still waiting
    /// for its first token is queued, not failed: its first-token clock restarts.
    pub queued_waits: bool,
    /// Longest silence between chunks once tokens flow.
    pub idle_timeout: Duration,
    /// Expected chunks, to size the token timeline once.
    pub expected_chunks: usize,
}

/// Per-request decoding state.
struct StreamState<'a> {
    sample: RequestSample,
    live: &'a LiveCounters,
    /// Server text (error events) is scrubbed of the request's bearer token as it is read.
    scrub: Scrubber<'a>,
    continuous: bool,
    last_usage: u64,
    final_usage: Option<u64>,
    finish: Option<FinishReason>,
    done: bool,
    error: Option<(ErrorKind, String)>,
    /// Server-sent events decoded so far.
    events: u64,
    /// Why the answer may not be an event stream (its headers say another type or encoding).
    doubt: Option<String>,
    /// The stream's chunk parser (it learns the stream's chunk shape).
    chunks: ChunkReader,
    /// Tokens and chunks with output of the current read, not yet added to the live counters.
    unsent: (u64, u64),
    /// The current read's first chunk with output: its gap after the stream's previous one, us
    /// (None at the stream's first), and its tokens; for the live ITL histogram.
    read_first: (Option<u64>, u64),
}

impl StreamState<'_> {
    fn on_chunk(&mut self, info: ChunkInfo, at_us: u64) {
        if let Some(err) = info.error {
            let code = err.code.map(|c| format!(" (code {c})")).unwrap_or_default();
            let msg = self.scrub.text(&err.message).into_owned();
            self.error = Some((ErrorKind::StreamError, format!("{msg}{code}")));
            return;
        }
        if info.prompt_tokens.is_some() {
            self.sample.prompt_tokens = info.prompt_tokens;
        }
        if info.cached_tokens.is_some() {
            self.sample.cached_tokens = info.cached_tokens;
        }
        if info.finish_reason.is_some() {
            self.finish = info.finish_reason;
        }
        // The token accounting rule of docs/reports.md §1.2.1, one arm per shape.
        let counted_chunks = !self.continuous && !self.sample.marks.is_empty();
        let delta = match (info.has_choices, info.completion_tokens) {
            // Usage after tokens were counted from chunks: the request's total riding on a
            // chunk that still has choices (llama.cpp's finish chunk), not a running count.
            (true, Some(c)) if counted_chunks => {
                self.final_usage = Some(self.final_usage.unwrap_or(0).max(c));
                u64::from(info.content_bytes > 0)
            }
            // Usage from the first chunk on: continuous usage, exact per chunk.
            (true, Some(c)) => {
                self.continuous = true;
                let d = c.saturating_sub(self.last_usage);
                self.last_usage = self.last_usage.max(c);
                d
            }
            // The usage-only final chunk (`choices: []`).
            (false, Some(c)) => {
                self.final_usage = Some(c);
                0
            }
            // No usage: one token per chunk with text.
            (_, None) => u64::from(info.content_bytes > 0 && !self.continuous),
        };
        if delta > 0 {
            self.add_tokens(delta, at_us);
        }
    }

    fn add_tokens(&mut self, delta: u64, at_us: u64) {
        let s = &mut self.sample;
        if s.marks.is_empty() {
            LiveCounters::shift(&self.live.streaming, 1);
            let start = s.scheduled_at.map_or(s.sent_at, |t| t.min(s.sent_at));
            let at = s.sent_at + std::time::Duration::from_micros(at_us);
            self.live.record_ttft(at.saturating_duration_since(start).as_secs_f64() * 1e3);
            self.live.first_arrived(s);
        }
        if self.unsent.1 == 0 {
            self.read_first = (s.marks.last().map(|m| at_us.saturating_sub(m.at_us)), delta);
        }
        s.output_tokens += delta;
        s.content_chunks += 1;
        s.marks.push(Mark { at_us, tokens: s.output_tokens });
        self.unsent.0 += delta;
        self.unsent.1 += 1;
    }

    /// Adds the read's tokens and chunks to the live counters and judges the stream on its
    /// tokens so far, once per read, not per chunk: the counters are shared by every stream of
    /// the attempt on both workers, and the chunks of one read share its timestamp.
    fn flush(&mut self) {
        let (tokens, chunks) = std::mem::take(&mut self.unsent);
        if chunks > 0 {
            LiveCounters::add(&self.live.tokens, tokens);
            LiveCounters::add(&self.live.chunks, chunks);
            self.live.judge_so_far(&mut self.sample);
            if let Some(series) = self.live.series.get() {
                series.read_gaps(self.read_first.0, self.read_first.1, tokens);
            }
        }
    }

    fn on_event(&mut self, ev: SseEvent<'_>, at_us: u64) {
        self.events += 1;
        match ev {
            SseEvent::Done => self.done = true,
            SseEvent::Data(d) => {
                if let Some(tap) = super::tap::get() {
                    tap(d, self.sample.sent_at, self.sample.sent_at + Duration::from_micros(at_us));
                }
                if let Some(text) = self.sample.text.as_mut() {
                    super::text::append(d, text);
                }
                match self.chunks.parse(d) {
                    Ok(info) => self.on_chunk(info, at_us),
                    Err(_) => self.sample.malformed_chunks += 1,
                }
            }
            SseEvent::Error(d) => {
                let msg = parse_chunk(d).ok().and_then(|c| c.error).map(|e| e.message);
                let msg = msg.unwrap_or_else(|| String::from_utf8_lossy(d).into_owned());
                let msg = self.scrub.text(&msg);
                let cut = msg.char_indices().nth(300).map_or(msg.len(), |(i, _)| i);
                self.error = Some((ErrorKind::StreamError, msg[..cut].to_string()));
            }
        }
    }

    /// Decides the outcome and the token source once the body has ended.
    fn finish(mut self, ended: Outcome) -> RequestSample {
        let s = &mut self.sample;
        s.token_source = if s.marks.is_empty() {
            TokenSource::None
        } else if self.continuous {
            TokenSource::OpenaiContinuousUsage
        } else if let Some(total) = self.final_usage.filter(|t| *t > 0) {
            rescale(&mut s.marks, total);
            s.output_tokens = total;
            TokenSource::FinalUsageScaled
        } else {
            TokenSource::ChunkCount
        };
        let unread = matches!(ended, Outcome::Completed(_) | Outcome::Failed { kind: ErrorKind::StreamError, .. });
        s.outcome = match (self.error, ended) {
            (None, _) if unread && self.events == 0 && self.doubt.is_some() => {
                failure(ErrorKind::NotEventStream, &format!("not an event stream ({})", self.doubt.unwrap_or_default()))
            }
            (Some((kind, detail)), _) => Outcome::Failed { kind, detail },
            (None, Outcome::Completed(_)) if self.done || self.finish.is_some() => Outcome::Completed(self.finish),
            (None, Outcome::Completed(_)) => failure(ErrorKind::Incomplete, "stream ended without [DONE]"),
            (None, other) => other,
        };
        if matches!(s.outcome, Outcome::Completed(_)) && s.malformed_chunks > 0 {
            // The request finished, but the server sent chunks it could not have meant.
            s.outcome = failure(ErrorKind::MalformedChunk, &format!("{} malformed chunk(s)", s.malformed_chunks));
        }
        self.sample
    }
}

/// Spreads a final usage count over chunk marks in proportion to the chunks seen.
fn rescale(marks: &mut Timeline, total: u64) {
    let n = marks.len() as u64;
    marks.map_tokens(|i, _| ((i as u64 + 1) * total).div_ceil(n));
}

/// Sends one request and measures it until it ends, fails, or `cancel` fires (a cut).
pub async fn run_stream(
    backend: &dyn Backend,
    spec: &StreamSpec<'_>,
    body: Bytes,
    mut sample: RequestSample,
    cancel: &CancellationToken,
    live: &LiveCounters,
) -> RequestSample {
    LiveCounters::add(&live.started, 1);
    LiveCounters::shift(&live.in_flight, 1);
    sample.sent_at = Instant::now();
    live.await_first(&sample);
    let mut clock = FirstTokenClock::new(sample.sent_at, live);
    let reconnects = AtomicU32::new(0);
    let head = await_head(backend, spec, body, cancel, live, &mut clock, &reconnects).await;
    sample.reconnects = reconnects.into_inner();
    let sample = match head {
        Ok(resp) => read_response(resp, spec, sample, cancel, live, clock).await,
        Err(outcome) => {
            sample.ended_at = Instant::now();
            sample.outcome = outcome;
            sample
        }
    };
    settle(live, &sample);
    sample
}

fn settle(live: &LiveCounters, sample: &RequestSample) {
    LiveCounters::shift(&live.in_flight, -1);
    live.settle_verdict(sample);
    if !sample.marks.is_empty() {
        LiveCounters::shift(&live.streaming, -1);
    }
    match sample.outcome {
        Outcome::Completed(_) => LiveCounters::add(&live.completed, 1),
        Outcome::Failed { .. } => LiveCounters::add(&live.failed, 1),
        Outcome::Cut => {}
    }
}

async fn read_response(
    mut resp: BackendResponse,
    spec: &StreamSpec<'_>,
    mut sample: RequestSample,
    cancel: &CancellationToken,
    live: &LiveCounters,
    clock: FirstTokenClock,
) -> RequestSample {
    let scrub = Scrubber::from_headers(spec.headers);
    sample.status = Some(resp.status().as_u16());
    sample.served_by = served_by(resp.headers(), spec.served_by).map(|s| scrub.text(&s).into_owned());
    if !resp.status().is_success() {
        // A cut while the error body comes in keeps what the status says.
        let status = resp.status().as_u16();
        sample.outcome = tokio::select! {
            biased;
            outcome = refusal(resp, &scrub) => outcome,
            _ = cancel.cancelled() => classify_status(status, b""),
        };
        sample.ended_at = Instant::now();
        return sample;
    }
    sample.marks.reserve(spec.expected_chunks);
    let mut st = StreamState {
        sample,
        live,
        scrub,
        continuous: false,
        last_usage: 0,
        final_usage: None,
        finish: None,
        done: false,
        error: None,
        events: 0,
        doubt: event_stream_doubt(resp.headers()),
        chunks: ChunkReader::new(),
        unsent: (0, 0),
        read_first: (None, 0),
    };
    let mut dec = SseDecoder::new();
    let ended = pump(&mut resp, spec, &mut st, &mut dec, cancel, clock).await;
    st.sample.ended_at = Instant::now();
    st.finish(ended)
}

/// Reads the body until it ends; returns `Completed(None)` at a clean end of body.
async fn pump(
    resp: &mut BackendResponse,
    spec: &StreamSpec<'_>,
    st: &mut StreamState<'_>,
    dec: &mut SseDecoder,
    cancel: &CancellationToken,
    mut clock: FirstTokenClock,
) -> Outcome {
    let sent = st.sample.sent_at;
    let mut last_data = sent;
    // One timer per request, re-armed only when it fires: no timer work per chunk.
    let mut armed = clock.first(spec);
    // Re-armed once at the first token: a first-token deadline still set then would hold a
    // stalled stream until it passes (minutes) instead of the idle timeout.
    let mut idle_armed = false;
    let cancelled = cancel.cancelled();
    tokio::pin!(cancelled);
    let timer = tokio::time::sleep_until(armed.unwrap_or(sent));
    tokio::pin!(timer);
    let mut waits = Waits::new(cancel, cancelled, timer);
    loop {
        let read = match waits.next(armed.is_some(), resp.chunk_at()).await {
            Woke::Cut => return Outcome::Cut,
            Woke::Timer => {
                armed = match next_deadline(st, spec, last_data, &mut clock, Instant::now()) {
                    Ok(next) => next,
                    Err(failed) => return failed,
                };
                if let Some(d) = armed {
                    waits.reset(d);
                }
                continue;
            }
            Woke::Read(read) => read,
        };
        let (bytes, arrived) = match read {
            Ok(Some(b)) => b,
            Ok(None) => return Outcome::Completed(None),
            Err(e) => return failure(ErrorKind::StreamReset, &e.describe()),
        };
        let now = Instant::now();
        // The kernel's receive time where the transport has it, else the wake-up's. Never
        // before the previous read's (the send's at first), never after the wake-up: the
        // per-read conversion of the kernel's wall-clock stamp may jitter by a microsecond.
        let at = arrived.map_or(now, |a| a.clamp(last_data, now));
        last_data = at;
        let at_us = at.saturating_duration_since(sent).as_micros() as u64;
        let fed = dec.feed(&bytes, |ev| st.on_event(ev, at_us));
        st.flush();
        if let Err(e) = fed {
            return failure(ErrorKind::Oversized, &e.to_string());
        }
        if st.error.is_some() || st.done {
            return Outcome::Completed(None);
        }
        if !idle_armed && !st.sample.marks.is_empty() {
            // Tokens flow: from now on the idle timeout applies.
            idle_armed = true;
            armed = Some(last_data + spec.idle_timeout);
            waits.reset(last_data + spec.idle_timeout);
        } else if armed.is_some_and(|d| d <= now) {
            // The deadline passed while reads kept coming (no tokens yet): judge it now.
            armed = match next_deadline(st, spec, last_data, &mut clock, now) {
                Ok(next) => next,
                Err(failed) => return failed,
            };
            if let Some(d) = armed {
                waits.reset(d);
            }
        }
    }
}
