//! An SGLang SSE body: the chunk sequence of [`super::chunks`], and a client that goes away
//! aborts its request only [`ABORT_DELAY`] later, as SGLang's `create_abort_task` sleeps 2 s
//! before `abort_request` (`tokenizer_manager.py`, docs/protocol.md §2.4), so the engine keeps generating meanwhile.

use super::chunks;
use crate::sim::api::body::Endpoint;
use crate::sim::api::chunks::{ChunkFormat, DONE};
use crate::sim::api::stream::StreamFault;
use crate::sim::engine::TokenEvent;
use crate::sim::faults::RequestFault;
use bytes::Bytes;
use futures_util::Stream;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;

/// How long after a client disconnects SGLang aborts its request (modelled time).
pub const ABORT_DELAY: Duration = Duration::from_secs(2);

struct State {
    rx: Option<UnboundedReceiver<TokenEvent>>,
    fmt: ChunkFormat,
    interval: u64,
    generated: u64,
    sent: u64,
    pending: VecDeque<Bytes>,
    done: bool,
    reset: bool,
    stall: bool,
    fault: Option<StreamFault>,
    /// Wall time between the client going away and the abort.
    abort_delay: Duration,
}

impl Drop for State {
    fn drop(&mut self) {
        // The client went away mid-stream: keep the request alive until the abort task runs.
        let (Some(rx), Ok(rt)) = (self.rx.take(), tokio::runtime::Handle::try_current()) else { return };
        let delay = self.abort_delay;
        drop(rt.spawn(async move {
            tokio::time::sleep(delay).await;
            drop(rx);
        }));
    }
}

impl State {
    /// Handles the events of one engine output batch: SGLang's tokenizer sees the last tokens
    /// and the finish reason of a request in one output, so they go out together.
    fn on_batch(&mut self, events: Vec<Option<TokenEvent>>) -> Option<RequestFault> {
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
            if self.sent == 0 && self.generated > 0 && self.fmt.endpoint == Endpoint::Chat {
                self.pending.push_back(chunks::role(&self.fmt));
            }
            if (self.sent == 0 && self.generated > 0) || self.generated - self.sent >= self.interval {
                self.pending.push_back(chunks::tokens(&self.fmt, self.sent, self.generated, None));
                self.sent = self.generated;
            }
            return self.check_fault();
        };
        match end {
            Some(TokenEvent::Finished { reason, .. }) => self.finish(reason.as_str()),
            Some(TokenEvent::Failed { message }) => self.pending.push_back(chunks::error_event(&message, 500)),
            _ => self.pending.push_back(chunks::error_event("engine stopped", 500)),
        }
        self.pending.push_back(Bytes::from_static(DONE));
        self.done = true;
        self.rx = None;
        None
    }

    fn finish(&mut self, reason: &str) {
        if self.sent == 0 && self.fmt.endpoint == Endpoint::Chat {
            self.pending.push_back(chunks::role(&self.fmt));
        }
        match self.fmt.endpoint {
            Endpoint::Chat => {
                if self.generated > self.sent {
                    self.pending.push_back(chunks::tokens(&self.fmt, self.sent, self.generated, None));
                }
                self.pending.push_back(chunks::chat_finish(&self.fmt, reason));
            }
            Endpoint::Completions => {
                self.pending.push_back(chunks::tokens(&self.fmt, self.sent, self.generated, Some(reason)));
            }
        }
        self.sent = self.generated;
        if self.fmt.include_usage {
            self.pending.push_back(chunks::usage_chunk(&self.fmt, self.generated));
        }
    }

    fn check_fault(&mut self) -> Option<RequestFault> {
        let f = self.fault.filter(|f| self.sent >= f.after_tokens && self.sent > 0)?;
        self.fault = None;
        if f.kind == RequestFault::Malformed {
            self.pending.push_back(self.fmt_malformed());
            return None;
        }
        Some(f.kind)
    }

    fn fmt_malformed(&self) -> Bytes {
        Bytes::from(format!("data: {{\"id\":\"{}\",\"choices\":[{{\"delta\":{{\"content\":\"bro\n\n", self.fmt.id))
    }
}

/// The SSE body of a streamed SGLang response; `abort_delay` is [`ABORT_DELAY`] in wall time.
pub fn sse_body(
    rx: UnboundedReceiver<TokenEvent>,
    fmt: ChunkFormat,
    interval: u32,
    fault: Option<StreamFault>,
    abort_delay: Duration,
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
        abort_delay,
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
            let mut batch = Vec::new();
            if let Some(rx) = st.rx.as_mut() {
                batch.push(rx.recv().await);
                while let Ok(ev) = rx.try_recv() {
                    batch.push(Some(ev));
                }
            } else {
                batch.push(None);
            }
            match st.on_batch(batch) {
                // A broken or silent connection is the simulator's fault, not a client leaving:
                // the request is aborted at once.
                Some(RequestFault::Reset) => (st.rx, st.reset) = (None, true),
                Some(RequestFault::Stall) => (st.rx, st.stall) = (None, true),
                _ => {}
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::engine::FinishReason;
    use futures_util::StreamExt;
    use std::time::Instant;

    fn fmt(endpoint: Endpoint) -> ChunkFormat {
        ChunkFormat {
            id: "x".into(),
            created: 1,
            model_json: "\"m\"".into(),
            endpoint,
            prompt_tokens: 4,
            continuous_usage: false,
            include_usage: true,
            seed: 1,
        }
    }

    async fn collect(endpoint: Endpoint) -> Vec<String> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        for _ in 0..3 {
            tx.send(TokenEvent::Token { at: Instant::now() }).unwrap();
        }
        tx.send(TokenEvent::Finished { reason: FinishReason::Length, cached_tokens: 0 }).unwrap();
        let body = sse_body(rx, fmt(endpoint), 2, None, ABORT_DELAY);
        body.map(|b| String::from_utf8(b.unwrap().to_vec()).unwrap()).collect().await
    }

    #[tokio::test]
    async fn chat_sends_role_tokens_finish_usage_done() {
        // The engine's three tokens and its finish are all queued: one output batch.
        let c = collect(Endpoint::Chat).await;
        assert_eq!(c.len(), 5, "{c:?}");
        assert!(c[0].contains("\"role\":\"assistant\""));
        assert!(c[1].contains("\"content\":\"") && c[1].contains("\"finish_reason\":null"));
        assert!(c[2].contains("\"delta\":{},") && c[2].contains("\"finish_reason\":\"length\""));
        assert!(c[3].contains("\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"total_tokens\":7"));
        assert_eq!(c[4], "data: [DONE]\n\n");
    }

    #[tokio::test]
    async fn completions_finish_on_the_last_text_chunk() {
        let c = collect(Endpoint::Completions).await;
        assert_eq!(c.len(), 3, "{c:?}");
        assert!(c[0].contains("\"finish_reason\":\"length\"") && c[0].contains("\"usage\":null"));
        assert!(c[0].matches(' ').count() >= 3, "the three tokens ride with the finish: {}", c[0]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_leaves_aborts_two_seconds_later() {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tx.send(TokenEvent::Token { at: Instant::now() }).unwrap();
        let mut body = Box::pin(sse_body(rx, fmt(Endpoint::Completions), 1, None, ABORT_DELAY));
        assert!(body.next().await.is_some());
        drop(body);
        tokio::time::sleep(ABORT_DELAY - Duration::from_millis(10)).await;
        assert!(!tx.is_closed(), "still running before the abort task");
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(tx.is_closed(), "aborted after {ABORT_DELAY:?}");
    }
}
