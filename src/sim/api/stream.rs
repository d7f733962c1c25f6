//! Turning the engine's token events into an SSE body, with stream-interval batching and the
//! mid-stream faults (reset, stall, malformed chunk).

use super::ReplicaState;
use super::chunks::{ChunkFormat, DONE};
use crate::sim::engine::TokenEvent;
use crate::sim::faults::RequestFault;
use bytes::Bytes;
use futures_util::Stream;
use rand::Rng;
use std::collections::VecDeque;
use tokio::sync::mpsc::UnboundedReceiver;

/// A mid-stream fault and the number of tokens after which it strikes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamFault {
    /// Which fault.
    pub kind: RequestFault,
    /// Output tokens streamed before it strikes.
    pub after_tokens: u64,
}

impl StreamFault {
    /// Draws the fault of one completion request on `replica` (tallied there), striking after
    /// 1 to half of the `stop_after` tokens it will generate. The same draw for every mode.
    pub fn draw(replica: &ReplicaState, stop_after: u32) -> Option<Self> {
        let mut rng = replica.rng.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let drawn = replica.faults.draw_request(&mut *rng);
        replica.tally.record(drawn);
        let kind = drawn?;
        let half = u64::from(stop_after / 2).max(1);
        Some(Self { kind, after_tokens: rng.random_range(1..=half) })
    }
}

struct State {
    rx: Option<UnboundedReceiver<TokenEvent>>,
    fmt: ChunkFormat,
    /// Tokens per chunk (vLLM `stream_interval`).
    interval: u64,
    /// Tokens generated so far.
    generated: u64,
    /// Tokens already sent in chunks.
    sent: u64,
    pending: VecDeque<Bytes>,
    done: bool,
    /// Break the connection once `pending` is flushed.
    reset: bool,
    /// Go silent (connection open) once `pending` is flushed.
    stall: bool,
    fault: Option<StreamFault>,
}

/// What to do after handling an event.
enum Next {
    Continue,
    Reset,
    Stall,
}

impl State {
    fn on_event(&mut self, ev: Option<TokenEvent>) -> Next {
        match ev {
            Some(TokenEvent::Token { .. }) => {
                self.generated += 1;
                if self.sent == 0 && self.generated == 1 && self.fmt.endpoint == super::body::Endpoint::Chat {
                    self.pending.push_back(self.fmt.role_chunk());
                }
                // vLLM sends the first token at once, then every `interval` tokens.
                if self.sent == 0 || self.generated - self.sent >= self.interval {
                    self.pending.push_back(self.fmt.token_chunk(self.sent, self.generated, None));
                    self.sent = self.generated;
                }
                self.check_fault()
            }
            Some(TokenEvent::Finished { reason, cached_tokens }) => {
                self.pending.push_back(self.fmt.token_chunk(self.sent, self.generated, Some(reason.as_str())));
                self.sent = self.generated;
                if self.fmt.include_usage {
                    self.pending.push_back(self.fmt.usage_chunk(self.generated, cached_tokens));
                }
                self.end();
                Next::Continue
            }
            Some(TokenEvent::Failed { message }) => {
                self.pending.push_back(ChunkFormat::error_event(&message, 500));
                self.end();
                Next::Continue
            }
            None => {
                self.pending.push_back(ChunkFormat::error_event("engine stopped", 500));
                self.end();
                Next::Continue
            }
        }
    }

    fn end(&mut self) {
        self.pending.push_back(Bytes::from_static(DONE));
        self.done = true;
        self.rx = None;
    }

    fn check_fault(&mut self) -> Next {
        let Some(f) = self.fault.filter(|f| self.sent >= f.after_tokens && self.sent > 0) else {
            return Next::Continue;
        };
        self.fault = None;
        match f.kind {
            RequestFault::Reset => Next::Reset,
            RequestFault::Stall => Next::Stall,
            RequestFault::Malformed => {
                self.pending.push_back(self.fmt.malformed());
                Next::Continue
            }
            _ => Next::Continue,
        }
    }
}

/// The SSE body of a streaming response.
pub fn sse_body(
    rx: UnboundedReceiver<TokenEvent>,
    fmt: ChunkFormat,
    interval: u32,
    fault: Option<StreamFault>,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    let state = State {
        rx: Some(rx),
        fmt,
        interval: u64::from(interval.max(1)),
        generated: 0,
        sent: 0,
        pending: VecDeque::new(),
        done: false,
        reset: false,
        stall: false,
        fault,
    };
    futures_util::stream::unfold(Some(state), |state| async move {
        let mut st = state?;
        loop {
            if let Some(b) = st.pending.pop_front() {
                return Some((Ok(b), Some(st)));
            }
            if st.reset {
                return Some((Err(std::io::Error::other("injected connection reset")), None));
            }
            if st.stall {
                std::future::pending::<()>().await;
            }
            if st.done {
                return None;
            }
            let ev = match st.rx.as_mut() {
                Some(rx) => rx.recv().await,
                None => None,
            };
            match st.on_event(ev) {
                Next::Continue => {}
                Next::Reset => {
                    // Flush what was produced, then break the connection.
                    st.rx = None;
                    st.reset = true;
                }
                Next::Stall => {
                    // Abort the request in the engine, keep the connection open and silent.
                    st.rx = None;
                    st.stall = true;
                }
            }
        }
    })
}
