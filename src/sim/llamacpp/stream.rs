//! Turning the engine's token events into llama-server's SSE body (one chunk per token), with
//! the mid-stream faults (reset, stall, malformed chunk). The body holds the connection's
//! [`CloseGuard`], so the connection closes once the body is done.

use super::chunks::{DONE, LlamaFormat, Timings, error_event};
use super::server::CloseGuard;
use crate::sim::api::body::Endpoint;
use crate::sim::api::stream::StreamFault;
use crate::sim::engine::TokenEvent;
use crate::sim::faults::RequestFault;
use bytes::Bytes;
use futures_util::Stream;
use std::collections::VecDeque;
use std::time::Instant;
use tokio::sync::mpsc::UnboundedReceiver;

/// Token times of one request, for its `timings`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Clock {
    /// When the HTTP request arrived.
    pub arrival: Instant,
    /// First token.
    pub first: Option<Instant>,
    /// Latest token.
    pub last: Option<Instant>,
}

impl Clock {
    /// A request that arrived at `arrival` and has no token yet.
    pub(super) fn new(arrival: Instant) -> Self {
        Self { arrival, first: None, last: None }
    }

    /// Notes a token produced at `at`.
    pub(super) fn token(&mut self, at: Instant) {
        self.first.get_or_insert(at);
        self.last = Some(at);
    }

    /// The request's `timings` after `generated` tokens, `cached` of its `prompt` tokens reused.
    pub(super) fn timings(&self, prompt: u64, cached: u64, generated: u64) -> Timings {
        let ms = |a: Instant, b: Instant| b.saturating_duration_since(a).as_secs_f64() * 1e3;
        Timings {
            cache_n: cached,
            prompt_n: prompt.saturating_sub(cached),
            prompt_ms: self.first.map_or(0.0, |f| ms(self.arrival, f)),
            predicted_n: generated,
            predicted_ms: self.first.zip(self.last).map_or(0.0, |(f, l)| ms(f, l)),
        }
    }
}

/// What the body does once its queued chunks are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Then {
    Read,
    End,
    Reset,
    Stall,
}

struct State {
    rx: Option<UnboundedReceiver<TokenEvent>>,
    fmt: LlamaFormat,
    clock: Clock,
    generated: u64,
    pending: VecDeque<Bytes>,
    then: Then,
    fault: Option<StreamFault>,
    /// Dropped with the body: closes the connection.
    _guard: CloseGuard,
}

impl State {
    fn on_event(&mut self, ev: Option<TokenEvent>) {
        match ev {
            Some(TokenEvent::Token { at }) => {
                self.clock.token(at);
                if self.generated == 0 && self.fmt.endpoint == Endpoint::Chat {
                    self.pending.push_back(self.fmt.role_chunk());
                }
                self.pending.push_back(self.fmt.token_chunk(self.generated));
                self.generated += 1;
                self.check_fault();
            }
            Some(TokenEvent::Finished { reason, cached_tokens }) => {
                let t = self.clock.timings(self.fmt.prompt_tokens, cached_tokens, self.generated);
                self.pending.extend(self.fmt.finish_chunks(self.generated, reason.as_str(), &t));
                self.pending.push_back(Bytes::from_static(DONE));
                self.then = Then::End;
            }
            Some(TokenEvent::Failed { message }) => self.fail(&message),
            None => self.fail("engine stopped"),
        }
    }

    fn fail(&mut self, message: &str) {
        self.pending.push_back(error_event(message));
        self.then = Then::End;
    }

    fn check_fault(&mut self) {
        let Some(f) = self.fault.filter(|f| self.generated >= f.after_tokens) else { return };
        self.fault = None;
        match f.kind {
            RequestFault::Reset => self.then = Then::Reset,
            RequestFault::Stall => self.then = Then::Stall,
            RequestFault::Malformed => self.pending.push_back(malformed(&self.fmt.id)),
            _ => {}
        }
    }
}

/// A chunk cut off in the middle of its JSON.
fn malformed(id: &str) -> Bytes {
    Bytes::from(format!(
        "data: {{\"choices\":[{{\"finish_reason\":null,\"index\":0,\"delta\":{{\"content\":\"bro\n\n{id}"
    ))
}

/// The SSE body of a streamed answer; `guard` is dropped when the body is.
pub(super) fn sse_body(
    rx: UnboundedReceiver<TokenEvent>,
    fmt: LlamaFormat,
    clock: Clock,
    fault: Option<StreamFault>,
    guard: CloseGuard,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    let state = State {
        rx: Some(rx),
        fmt,
        clock,
        generated: 0,
        pending: VecDeque::new(),
        then: Then::Read,
        fault,
        _guard: guard,
    };
    futures_util::stream::unfold(Some(state), |state| async move {
        let mut st = state?;
        loop {
            if let Some(b) = st.pending.pop_front() {
                return Some((Ok(b), Some(st)));
            }
            match st.then {
                Then::Read => {}
                Then::End => return None,
                Then::Reset => return Some((Err(std::io::Error::other("injected connection reset")), None)),
                Then::Stall => {
                    // The engine aborts the request; the connection stays open and silent.
                    st.rx = None;
                    std::future::pending::<()>().await;
                }
            }
            let ev = match st.rx.as_mut() {
                Some(rx) => rx.recv().await,
                None => None,
            };
            st.on_event(ev);
        }
    })
}
