//! `/v1/completions` and `/v1/chat/completions`: validate, apply faults, submit, answer.

use super::ReplicaState;
use super::body::{Endpoint, Limits, Prepared, prepare};
use super::chunks::ChunkFormat;
use super::error::ApiError;
use super::stream::{StreamFault, sse_body};
use crate::sim::engine::{EngineMsg, EngineRequest, TokenEvent};
use crate::sim::expo::MetricsDialect;
use crate::sim::faults::RequestFault;
use crate::sim::sglang;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

/// `POST /v1/completions`.
pub(super) async fn completions(State(st): State<Arc<ReplicaState>>, body: Bytes) -> Response {
    handle(st, body, Endpoint::Completions).await
}

/// `POST /v1/chat/completions`.
pub(super) async fn chat(State(st): State<Arc<ReplicaState>>, body: Bytes) -> Response {
    handle(st, body, Endpoint::Chat).await
}

async fn handle(st: Arc<ReplicaState>, body: Bytes, endpoint: Endpoint) -> Response {
    let arrival = st.engine.clock.now();
    let limits = Limits { model: &st.model, max_model_len: st.params.max_model_len };
    let sglang = st.dialect == MetricsDialect::Sglang;
    let prep = match sglang {
        true => sglang::api::prepare(&body, endpoint, &st.model, st.params.max_model_len)
            .map_err(IntoResponse::into_response),
        false => prepare(&body, endpoint, &limits).map_err(IntoResponse::into_response),
    };
    let prep = match prep {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let fault = StreamFault::draw(&st, prep.stop_after);
    if let Some(resp) = fault.and_then(|f| early_fault(f.kind)) {
        return resp;
    }
    let delay = st.params.wall(st.params.frontend_delay);
    if !delay.is_zero() {
        // On the engine's clock: tokio time follows a paused test clock (sim/engine/mod.rs).
        tokio::time::sleep(delay).await;
    }
    let (tx, rx) = unbounded_channel();
    let req = EngineRequest {
        prompt: prep.prompt.clone(),
        max_tokens: prep.max_tokens,
        stop_after: prep.stop_after,
        arrival,
        stream: prep.stream,
        events: tx,
    };
    if !st.engine.send(EngineMsg::Submit(Box::new(req))) {
        return ApiError::status(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            "engine is not running".into(),
        )
        .into_response();
    }
    let fmt = chunk_format(&st, &prep, endpoint);
    if prep.stream && sglang {
        let delay = st.params.wall(sglang::stream::ABORT_DELAY);
        let stream = sglang::stream::sse_body(rx, fmt, st.stream_interval, fault, delay);
        return ([(header::CONTENT_TYPE, "text/event-stream; charset=utf-8")], Body::from_stream(stream))
            .into_response();
    }
    if prep.stream {
        let stream = sse_body(rx, fmt, st.stream_interval, fault);
        return (
            [(header::CONTENT_TYPE, "text/event-stream; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")],
            Body::from_stream(stream),
        )
            .into_response();
    }
    non_streaming(rx, fmt, fault).await
}

fn early_fault(kind: RequestFault) -> Option<Response> {
    let (status, kind_name, msg) = match kind {
        RequestFault::Http500 => {
            (StatusCode::INTERNAL_SERVER_ERROR, "InternalServerError", "injected fault: internal server error")
        }
        RequestFault::Http503 => {
            (StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailableError", "injected fault: server overloaded")
        }
        RequestFault::Http429 => (StatusCode::TOO_MANY_REQUESTS, "RateLimitError", "injected fault: too many requests"),
        _ => return None,
    };
    Some(ApiError::status(status, kind_name, msg.into()).into_response())
}

fn chunk_format(st: &ReplicaState, prep: &Prepared, endpoint: Endpoint) -> ChunkFormat {
    let n = st.next_id.fetch_add(1, Ordering::Relaxed);
    let prefix = match endpoint {
        Endpoint::Chat => "chatcmpl",
        Endpoint::Completions => "cmpl",
    };
    ChunkFormat {
        // Random-looking like vLLM's ids: the body must not reveal the replica behind a router.
        id: format!("{prefix}-{:016x}", xxhash_rust::xxh64::xxh64(st.name.as_bytes(), n)),
        created: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        model_json: serde_json::to_string(&st.model).unwrap_or_else(|_| "\"\"".into()),
        endpoint,
        prompt_tokens: prep.prompt.len() as u64,
        continuous_usage: prep.continuous_usage,
        include_usage: prep.include_usage,
        prompt_tokens_details: st.prompt_tokens_details,
        seed: prep.seed,
    }
}

async fn non_streaming(
    mut rx: UnboundedReceiver<TokenEvent>,
    fmt: ChunkFormat,
    fault: Option<StreamFault>,
) -> Response {
    let mut generated = 0u64;
    loop {
        match rx.recv().await {
            Some(TokenEvent::Token { .. }) => generated += 1,
            Some(TokenEvent::Finished { reason, cached_tokens }) => {
                return match fault.map(|f| f.kind) {
                    Some(RequestFault::Reset) => broken_body(),
                    Some(RequestFault::Stall) => {
                        drop(rx);
                        std::future::pending::<Response>().await
                    }
                    Some(RequestFault::Malformed) => {
                        ([(header::CONTENT_TYPE, "application/json")], "{\"id\":\"broken").into_response()
                    }
                    _ => axum::Json(fmt.full_body(generated, reason.as_str(), cached_tokens)).into_response(),
                };
            }
            Some(TokenEvent::Failed { message }) => {
                return ApiError::status(StatusCode::INTERNAL_SERVER_ERROR, "InternalServerError", message)
                    .into_response();
            }
            None => {
                return ApiError::status(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "InternalServerError",
                    "engine stopped".into(),
                )
                .into_response();
            }
        }
    }
}

fn broken_body() -> Response {
    let stream =
        futures_util::stream::once(async { Err::<Bytes, _>(std::io::Error::other("injected connection reset")) });
    ([(header::CONTENT_TYPE, "application/json")], Body::from_stream(stream)).into_response()
}
