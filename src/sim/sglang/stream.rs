//! An SGLang SSE body: the chunk sequence of [`super::chunks`], and a client that goes away
//! aborts its request only [`ABORT_DELAY`] later, as SGLang's `create_abort_task` sleeps 2 s
//! before `abort_request` (`tokenizer_manager.py`, docs/protocol.md §2.4), so the engine keeps generating meanwhile.

use super::chunks;
use crate::sim::api::body::Endpoint;
use crate::sim::api::chunks::ChunkFormat;
use crate::sim::api::stream::{Pacing, SseChunks, StreamFault, sse_stream};
use crate::sim::engine::TokenEvent;
use bytes::Bytes;
use futures_util::Stream;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;

/// How long after a client disconnects SGLang aborts its request (modelled time).
pub(crate) const ABORT_DELAY: Duration = Duration::from_secs(2);

/// SGLang's chunks ([`super::chunks`]) over the shared format.
struct Sglang(ChunkFormat);

impl SseChunks for Sglang {
    fn endpoint(&self) -> Endpoint {
        self.0.endpoint
    }

    fn role(&self) -> Bytes {
        chunks::role(&self.0)
    }

    fn tokens(&self, from: u64, to: u64) -> Bytes {
        chunks::tokens(&self.0, from, to, None)
    }

    /// Chat: the role if nothing went out yet, the last tokens, then the finish in a chunk of
    /// its own; completions: the finish on the last text chunk. Then the usage chunk.
    fn finish(&self, out: &mut VecDeque<Bytes>, sent: u64, generated: u64, reason: &str, _cached: u64) {
        let f = &self.0;
        if sent == 0 && f.endpoint == Endpoint::Chat {
            out.push_back(chunks::role(f));
        }
        match f.endpoint {
            Endpoint::Chat => {
                if generated > sent {
                    out.push_back(chunks::tokens(f, sent, generated, None));
                }
                out.push_back(chunks::chat_finish(f, reason));
            }
            Endpoint::Completions => out.push_back(chunks::tokens(f, sent, generated, Some(reason))),
        }
        if f.include_usage {
            out.push_back(chunks::usage_chunk(f, generated));
        }
    }

    fn error(&self, message: &str) -> Bytes {
        chunks::error_event(message, 500)
    }

    fn cut_off(&self) -> Bytes {
        Bytes::from(format!("data: {{\"id\":\"{}\",\"choices\":[{{\"delta\":{{\"content\":\"bro\n\n", self.0.id))
    }
}

/// The SSE body of a streamed SGLang response: chunks every `interval` tokens of an output
/// batch, the request aborted `abort_delay` ([`ABORT_DELAY`] in wall time) after the client
/// goes away.
pub(crate) fn sse_body(
    rx: UnboundedReceiver<TokenEvent>,
    fmt: ChunkFormat,
    interval: u32,
    fault: Option<StreamFault>,
    abort_delay: Duration,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    sse_stream(rx, Sglang(fmt), Pacing { interval, batched: true, abort_delay }, fault)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::engine::FinishReason;
    use futures_util::StreamExt;
    use std::time::Instant;

    fn fmt(endpoint: Endpoint) -> ChunkFormat {
        crate::sim::api::chunks::test_support::test_format(endpoint, 4, false, 1)
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
