//! `/v1/completions` and `/v1/chat/completions` of a llama.cpp replica: parse, apply faults,
//! submit to the engine, answer as llama-server does (headers of a stream go out at once).

use super::LlamaState;
use super::body::{LlamaRequest, parse};
use super::chunks::LlamaFormat;
use super::error::LlamaError;
use super::server::{CloseGuard, JSON, SSE, StreamCloser};
use super::stream::{Clock, sse_body};
use crate::sim::api::ReplicaState;
use crate::sim::api::body::Endpoint;
use crate::sim::api::stream::StreamFault;
use crate::sim::engine::{EngineMsg, EngineRequest, FinishReason, TokenEvent};
use crate::sim::faults::RequestFault;
use axum::Extension;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

/// `POST /v1/completions`.
pub(super) async fn completions(
    State(st): State<Arc<LlamaState>>,
    closer: Option<Extension<StreamCloser>>,
    body: Bytes,
) -> Response {
    handle(st, closer.map(|c| c.0), body, Endpoint::Completions).await
}

/// `POST /v1/chat/completions`.
pub(super) async fn chat(
    State(st): State<Arc<LlamaState>>,
    closer: Option<Extension<StreamCloser>>,
    body: Bytes,
) -> Response {
    handle(st, closer.map(|c| c.0), body, Endpoint::Chat).await
}

async fn handle(st: Arc<LlamaState>, closer: Option<StreamCloser>, body: Bytes, endpoint: Endpoint) -> Response {
    let replica = &st.replica;
    let arrival = replica.engine.clock.now();
    let req = match parse(&body, endpoint, st.slot_ctx) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let fault = StreamFault::draw(replica, req.stop_after);
    if let Some(e) = fault.and_then(|f| early_fault(f.kind)) {
        return e.into_response();
    }
    let delay = replica.params.wall(replica.params.frontend_delay);
    if !delay.is_zero() {
        // On the engine's clock: tokio time follows a paused test clock (sim/engine/mod.rs).
        tokio::time::sleep(delay).await;
    }
    let Some(rx) = submit(replica, &req, arrival) else {
        return LlamaError::server("engine is not running").into_response();
    };
    let fmt = chunk_format(replica, &req);
    if req.stream {
        let body = sse_body(rx, fmt, Clock::new(arrival), fault, CloseGuard::new(closer));
        let headers = [
            (header::CONTENT_TYPE, HeaderValue::from_static(SSE)),
            (HeaderName::from_static("x-accel-buffering"), HeaderValue::from_static("no")),
        ];
        return (headers, Body::from_stream(body)).into_response();
    }
    whole(rx, fmt, Clock::new(arrival), fault).await
}

/// Queues the request; an empty prompt is answered at once with nothing generated, as
/// llama-server answers it. None if the engine is gone.
fn submit(replica: &ReplicaState, req: &LlamaRequest, arrival: Instant) -> Option<UnboundedReceiver<TokenEvent>> {
    let (tx, rx) = unbounded_channel();
    if req.prompt.is_empty() {
        let _ = tx.send(TokenEvent::Finished { reason: FinishReason::Length, cached_tokens: 0 });
        return Some(rx);
    }
    let er = EngineRequest {
        prompt: req.prompt.clone(),
        max_tokens: req.max_tokens,
        stop_after: req.stop_after.max(1),
        arrival,
        stream: req.stream,
        events: tx,
    };
    replica.engine.send(EngineMsg::Submit(Box::new(er))).then_some(rx)
}

/// The injected faults answered before any event, in llama.cpp's error shape.
fn early_fault(kind: RequestFault) -> Option<LlamaError> {
    match kind {
        RequestFault::Http500 => Some(LlamaError::server("injected fault: internal server error")),
        RequestFault::Http503 => Some(LlamaError::unavailable("injected fault: server overloaded")),
        RequestFault::Http429 => Some(LlamaError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "unavailable_error",
            "injected fault: too many requests".into(),
        )),
        _ => None,
    }
}

/// `chatcmpl-` and 32 letters or digits, distinct per replica and request.
fn completion_id(replica: &str, n: u64) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let pick = |i: u64| ALPHABET[(xxhash_rust::xxh64::xxh64(replica.as_bytes(), n * 32 + i) % 62) as usize] as char;
    let mut id = String::from("chatcmpl-");
    id.extend((0..32).map(pick));
    id
}

fn chunk_format(replica: &ReplicaState, req: &LlamaRequest) -> LlamaFormat {
    let n = replica.next_id.fetch_add(1, Ordering::Relaxed);
    LlamaFormat {
        id: completion_id(&replica.name, n),
        created: super::unix_seconds(),
        model_json: serde_json::to_string(&replica.model).unwrap_or_else(|_| "\"\"".into()),
        endpoint: req.endpoint,
        prompt_tokens: req.prompt.len() as u64,
        include_usage: req.include_usage,
        seed: req.seed,
    }
}

/// The answer of a request that is not streamed, once the engine is done with it.
async fn whole(
    mut rx: UnboundedReceiver<TokenEvent>,
    fmt: LlamaFormat,
    mut clock: Clock,
    fault: Option<StreamFault>,
) -> Response {
    let mut generated = 0u64;
    loop {
        match rx.recv().await {
            Some(TokenEvent::Token { at }) => {
                clock.token(at);
                generated += 1;
            }
            Some(TokenEvent::Finished { reason, cached_tokens }) => {
                let t = clock.timings(fmt.prompt_tokens, cached_tokens, generated);
                let body = fmt.full_body(generated, reason.as_str(), &t);
                return faulty_whole(fault.map(|f| f.kind), rx, body).await;
            }
            Some(TokenEvent::Failed { message }) => return LlamaError::server(message).into_response(),
            None => return LlamaError::server("engine stopped").into_response(),
        }
    }
}

/// A whole answer, unless a fault breaks it: a reset body, a silent connection, cut JSON.
async fn faulty_whole(fault: Option<RequestFault>, rx: UnboundedReceiver<TokenEvent>, body: String) -> Response {
    match fault {
        Some(RequestFault::Reset) => {
            let broken = futures_util::stream::once(async {
                Err::<Bytes, _>(std::io::Error::other("injected connection reset"))
            });
            ([(header::CONTENT_TYPE, JSON)], Body::from_stream(broken)).into_response()
        }
        Some(RequestFault::Stall) => {
            drop(rx);
            std::future::pending::<Response>().await
        }
        Some(RequestFault::Malformed) => ([(header::CONTENT_TYPE, JSON)], "{\"choices\":[{\"te").into_response(),
        _ => ([(header::CONTENT_TYPE, JSON)], body).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_look_like_llama_cpp_ones() {
        let (a, b) = (completion_id("sim-a", 0), completion_id("sim-a", 1));
        assert_eq!(a.len(), "chatcmpl-".len() + 32);
        assert!(a.starts_with("chatcmpl-") && a[9..].bytes().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(a, b);
        assert_ne!(a, completion_id("sim-b", 0));
    }
}
