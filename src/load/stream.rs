//! One streaming request, measured by the task that sends it: the per-token hot path.
//!
//! Per body read: one `Instant::now()`, the SSE decoder (no allocation for whole events), the
//! chunk parser (only the fields used), one `Vec` push per chunk that carried tokens and two
//! relaxed atomic adds. No lock, no channel, no rendering.

use super::backend::{Backend, BackendResponse, Exchange};
use super::chunk::{ChunkInfo, FinishReason, parse_chunk};
use super::classify::{classify_status, failure};
use super::live::LiveCounters;
use super::sample::{ErrorKind, Mark, Outcome, RequestSample, TokenSource};
use super::scrub::Scrubber;
use super::sse::{SseDecoder, SseEvent};
use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Everything needed to send one streaming request.
#[derive(Debug, Clone)]
pub struct StreamSpec<'a> {
    /// Full URL of the endpoint.
    pub url: &'a str,
    /// Request headers (authorization, routing strategy, ...).
    pub headers: &'a HeaderMap,
    /// Response headers that name the serving replica, in order of preference.
    pub served_by: &'a [HeaderName],
    /// Longest wait for the first token; None waits until cancelled (a queued request).
    pub first_token_timeout: Option<Duration>,
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
        let delta = match (info.has_choices, info.completion_tokens) {
            (true, Some(c)) => {
                self.continuous = true;
                let d = c.saturating_sub(self.last_usage);
                self.last_usage = self.last_usage.max(c);
                d
            }
            (false, Some(c)) => {
                self.final_usage = Some(c);
                0
            }
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
        }
        s.output_tokens += delta;
        s.content_chunks += 1;
        s.marks.push(Mark { at_us, tokens: s.output_tokens });
        LiveCounters::add(&self.live.tokens, delta);
        LiveCounters::add(&self.live.chunks, 1);
    }

    fn on_event(&mut self, ev: SseEvent<'_>, at_us: u64) {
        match ev {
            SseEvent::Done => self.done = true,
            SseEvent::Data(d) => match parse_chunk(d) {
                Ok(info) => self.on_chunk(info, at_us),
                Err(_) => self.sample.malformed_chunks += 1,
            },
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
        s.outcome = match (self.error, ended) {
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
fn rescale(marks: &mut [Mark], total: u64) {
    let n = marks.len() as u64;
    for (i, m) in marks.iter_mut().enumerate() {
        m.tokens = ((i as u64 + 1) * total).div_ceil(n);
    }
}

fn served_by(headers: &HeaderMap, names: &[HeaderName]) -> Option<String> {
    names.iter().find_map(|n| headers.get(n)).and_then(|v| v.to_str().ok()).map(str::to_string)
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
    let send = backend.send(Exchange::post(spec.url, spec.headers, Some(body)));
    let resp = tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(None),
        r = send => r.map_err(Some),
    };
    let sample = match resp {
        Ok(resp) => read_response(resp, spec, sample, cancel, live).await,
        Err(e) => {
            sample.ended_at = Instant::now();
            sample.outcome = match e {
                None => Outcome::Cut,
                Some(e) => failure(ErrorKind::Connect, &e.describe()),
            };
            sample
        }
    };
    settle(live, &sample);
    sample
}

fn settle(live: &LiveCounters, sample: &RequestSample) {
    LiveCounters::shift(&live.in_flight, -1);
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
) -> RequestSample {
    let scrub = Scrubber::from_headers(spec.headers);
    sample.status = Some(resp.status().as_u16());
    sample.served_by = served_by(resp.headers(), spec.served_by).map(|s| scrub.text(&s).into_owned());
    if !resp.status().is_success() {
        let status = resp.status().as_u16();
        let body = scrub.bytes(resp.bytes().await.unwrap_or_default());
        sample.ended_at = Instant::now();
        sample.outcome = classify_status(status, &body);
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
    };
    let mut dec = SseDecoder::new();
    let ended = pump(&mut resp, spec, &mut st, &mut dec, cancel).await;
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
) -> Outcome {
    let sent = st.sample.sent_at;
    let mut last_data = sent;
    // One timer per request, re-armed only when it fires: no timer work per chunk.
    let mut armed = spec.first_token_timeout.map(|l| sent + l);
    let timer = tokio::time::sleep_until(armed.unwrap_or(sent));
    tokio::pin!(timer);
    loop {
        let read = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Outcome::Cut,
            _ = &mut timer, if armed.is_some() => {
                let limit = if st.sample.marks.is_empty() { spec.first_token_timeout } else { Some(spec.idle_timeout) };
                let now = Instant::now();
                match limit.map(|l| last_data + l) {
                    Some(due) if due <= now => {
                        let quiet = now.saturating_duration_since(last_data).as_secs_f64();
                        return failure(ErrorKind::Stalled, &format!("no data for {quiet:.1} s"));
                    }
                    next => {
                        armed = next;
                        if let Some(d) = next {
                            timer.as_mut().reset(d);
                        }
                        continue;
                    }
                }
            }
            r = resp.chunk() => r,
        };
        let bytes = match read {
            Ok(Some(b)) => b,
            Ok(None) => return Outcome::Completed(None),
            Err(e) => return failure(ErrorKind::StreamReset, &e.describe()),
        };
        let now = Instant::now();
        last_data = now;
        let at_us = now.saturating_duration_since(sent).as_micros() as u64;
        if let Err(e) = dec.feed(&bytes, |ev| st.on_event(ev, at_us)) {
            return failure(ErrorKind::StreamError, &e.to_string());
        }
        if st.error.is_some() || st.done {
            return Outcome::Completed(None);
        }
        if armed.is_none() && !st.sample.marks.is_empty() {
            // Tokens flow: from now on the idle timeout applies.
            armed = Some(last_data + spec.idle_timeout);
            timer.as_mut().reset(last_data + spec.idle_timeout);
        }
    }
}
