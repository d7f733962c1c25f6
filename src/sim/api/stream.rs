//! Turning the engine's token events into an SSE body, with stream-interval batching and the
//! mid-stream faults (reset, stall, malformed chunk). One state machine serves the vLLM and the
//! SGLang modes: each says which chunks it writes ([`SseChunks`]) and how it paces them
//! ([`Pacing`]).

use super::ReplicaState;
use super::body::Endpoint;
use super::chunks::{ChunkFormat, DONE};
use crate::sim::engine::TokenEvent;
use crate::sim::faults::RequestFault;
use bytes::Bytes;
use futures_util::Stream;
use rand::Rng;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;

/// A mid-stream fault and the number of tokens after which it strikes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StreamFault {
    /// Which fault.
    pub kind: RequestFault,
    /// Output tokens streamed before it strikes.
    pub after_tokens: u64,
}

impl StreamFault {
    /// Draws the fault of one completion request on `replica` (tallied there), striking after
    /// 1 to half of the `stop_after` tokens it will generate. The same draw for every mode.
    pub(crate) fn draw(replica: &ReplicaState, stop_after: u32) -> Option<Self> {
        let mut rng = replica.rng.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let drawn = replica.faults.draw_request(&mut *rng);
        replica.tally.record(drawn);
        let kind = drawn?;
        let half = u64::from(stop_after / 2).max(1);
        Some(Self { kind, after_tokens: rng.random_range(1..=half) })
    }
}

/// The chunks of one mode's stream; [`sse_stream`] decides when each goes out.
pub(crate) trait SseChunks: Send + 'static {
    /// Chat or completions (a chat stream opens with [`SseChunks::role`]).
    fn endpoint(&self) -> Endpoint;
    /// The first chat chunk: the assistant role.
    fn role(&self) -> Bytes;
    /// An intermediate chunk with output tokens `from..to`.
    fn tokens(&self, from: u64, to: u64) -> Bytes;
    /// Queues the chunks that end a finished request (not `[DONE]`), `sent` of its
    /// `generated` tokens already out, `cached` prompt tokens reused.
    fn finish(&self, out: &mut VecDeque<Bytes>, sent: u64, generated: u64, reason: &str, cached: u64);
    /// An error event after the stream started.
    fn error(&self, message: &str) -> Bytes;
    /// The malformed chunk fault: a cut-off JSON object.
    fn cut_off(&self) -> Bytes;
}

/// vLLM's chunks: the finish reason rides on the last token chunk, then the usage chunk.
impl SseChunks for ChunkFormat {
    fn endpoint(&self) -> Endpoint {
        self.endpoint
    }

    fn role(&self) -> Bytes {
        self.role_chunk()
    }

    fn tokens(&self, from: u64, to: u64) -> Bytes {
        self.token_chunk(from, to, None)
    }

    fn finish(&self, out: &mut VecDeque<Bytes>, sent: u64, generated: u64, reason: &str, cached: u64) {
        out.push_back(self.token_chunk(sent, generated, Some(reason)));
        if self.include_usage {
            out.push_back(self.usage_chunk(generated, cached));
        }
    }

    fn error(&self, message: &str) -> Bytes {
        ChunkFormat::error_event(message, 500)
    }

    fn cut_off(&self) -> Bytes {
        self.malformed()
    }
}

/// Where modes differ in when chunks go out.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pacing {
    /// Tokens per chunk (`stream_interval`); the first token goes out at once.
    pub interval: u32,
    /// Read every queued engine event before writing (SGLang's tokenizer sees one output
    /// batch at once: the last tokens ride with the finish); vLLM writes event by event.
    pub batched: bool,
    /// Wall time between a client going away and the abort of its request (zero: at once).
    pub abort_delay: Duration,
}

struct State<C> {
    rx: Option<UnboundedReceiver<TokenEvent>>,
    chunks: C,
    /// Tokens per chunk.
    interval: u64,
    batched: bool,
    abort_delay: Duration,
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

impl<C> Drop for State<C> {
    fn drop(&mut self) {
        if self.abort_delay.is_zero() {
            return;
        }
        // The client went away mid-stream: keep the request alive until the abort task runs.
        let (Some(rx), Ok(rt)) = (self.rx.take(), tokio::runtime::Handle::try_current()) else { return };
        let delay = self.abort_delay;
        drop(rt.spawn(async move {
            tokio::time::sleep(delay).await;
            drop(rx);
        }));
    }
}

impl<C: SseChunks> State<C> {
    /// Handles the events of one read; returns the fault that breaks or silences the
    /// connection, if one strikes.
    fn on_read(&mut self, events: Vec<Option<TokenEvent>>) -> Option<RequestFault> {
        let mut end = None;
        for ev in events {
            match ev {
                Some(TokenEvent::Token { .. }) => self.generated += 1,
                other => {
                    end = Some(other);
                    break;
                }
            }
        }
        let Some(end) = end else {
            if self.sent == 0 && self.generated > 0 && self.chunks.endpoint() == Endpoint::Chat {
                self.pending.push_back(self.chunks.role());
            }
            if (self.sent == 0 && self.generated > 0) || self.generated - self.sent >= self.interval {
                self.pending.push_back(self.chunks.tokens(self.sent, self.generated));
                self.sent = self.generated;
            }
            return self.check_fault();
        };
        let last = match end {
            Some(TokenEvent::Finished { reason, cached_tokens }) => {
                self.chunks.finish(&mut self.pending, self.sent, self.generated, reason.as_str(), cached_tokens);
                self.sent = self.generated;
                None
            }
            Some(TokenEvent::Failed { message }) => Some(self.chunks.error(&message)),
            _ => Some(self.chunks.error("engine stopped")),
        };
        self.pending.extend(last);
        self.pending.push_back(Bytes::from_static(DONE));
        self.done = true;
        self.rx = None;
        None
    }

    fn check_fault(&mut self) -> Option<RequestFault> {
        let f = self.fault.filter(|f| self.sent >= f.after_tokens && self.sent > 0)?;
        self.fault = None;
        if f.kind == RequestFault::Malformed {
            self.pending.push_back(self.chunks.cut_off());
            return None;
        }
        Some(f.kind)
    }
}

/// The SSE body of a vLLM streaming response: chunks every `interval` tokens, event by
/// event, the request aborted as soon as the client goes away.
pub(crate) fn sse_body(
    rx: UnboundedReceiver<TokenEvent>,
    fmt: ChunkFormat,
    interval: u32,
    fault: Option<StreamFault>,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    sse_stream(rx, fmt, Pacing { interval, batched: false, abort_delay: Duration::ZERO }, fault)
}

/// The SSE body of a streaming response made of `chunks`, paced by `pacing`.
pub(crate) fn sse_stream<C: SseChunks>(
    rx: UnboundedReceiver<TokenEvent>,
    chunks: C,
    pacing: Pacing,
    fault: Option<StreamFault>,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    let state = State {
        rx: Some(rx),
        chunks,
        interval: u64::from(pacing.interval.max(1)),
        batched: pacing.batched,
        abort_delay: pacing.abort_delay,
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
            let mut read = Vec::new();
            match st.rx.as_mut() {
                Some(rx) => {
                    read.push(rx.recv().await);
                    if st.batched {
                        while let Ok(ev) = rx.try_recv() {
                            read.push(Some(ev));
                        }
                    }
                }
                None => read.push(None),
            }
            match st.on_read(read) {
                // Flush what was produced, then break the connection. A broken or silent
                // connection is the simulator's fault, not a client leaving: the request is
                // aborted in the engine at once.
                Some(RequestFault::Reset) => (st.rx, st.reset) = (None, true),
                // Keep the connection open and silent.
                Some(RequestFault::Stall) => (st.rx, st.stall) = (None, true),
                _ => {}
            }
        }
    })
}
