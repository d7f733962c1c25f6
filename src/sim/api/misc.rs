//! The replica's other endpoints: models, tokenize, health, version, cache reset, metrics.

use super::ReplicaState;
use super::body::message_text;
use super::error::ApiError;
use crate::sim::engine::EngineMsg;
use crate::sim::expo;
use crate::sim::faults::MetricsFault;
use crate::sim::tokenizer::{self, ChatMessage, tokenize_chat};
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::Arc;

/// The version string `/version` reports.
pub(super) fn version_string() -> String {
    format!("{}+sim", env!("CARGO_PKG_VERSION"))
}

/// `GET /v1/models`, with `max_model_len` as vLLM reports it.
pub(super) async fn models(State(st): State<Arc<ReplicaState>>) -> Json<Value> {
    Json(json!({
        "object": "list",
        "data": [{
            "id": st.model, "object": "model", "created": 0, "owned_by": "vllm",
            "root": st.model, "parent": null, "max_model_len": st.params.max_model_len, "permission": []
        }]
    }))
}

/// `POST /tokenize`: `{prompt}` or `{messages, add_generation_prompt}`.
pub(super) async fn tokenize(State(st): State<Arc<ReplicaState>>, body: Bytes) -> Response {
    let Ok(v) = serde_json::from_slice::<Value>(&body) else {
        return ApiError::bad_request("invalid request body".into(), None).into_response();
    };
    let tokens = if let Some(p) = v.get("prompt").and_then(Value::as_str) {
        tokenizer::tokenize(p)
    } else if let Some(msgs) = v.get("messages").and_then(Value::as_array) {
        let msgs: Vec<ChatMessage> = msgs
            .iter()
            .map(|m| ChatMessage {
                role: m.get("role").and_then(Value::as_str).unwrap_or_default().to_string(),
                content: m.get("content").map(message_text).unwrap_or_default(),
            })
            .collect();
        tokenize_chat(&msgs, v.get("add_generation_prompt").and_then(Value::as_bool).unwrap_or(true))
    } else {
        return ApiError::bad_request("`prompt` or `messages` is required".into(), Some("prompt")).into_response();
    };
    Json(json!({"count": tokens.len(), "max_model_len": st.params.max_model_len, "tokens": tokens})).into_response()
}

/// `GET /health`.
pub(super) async fn health() -> StatusCode {
    StatusCode::OK
}

/// `GET /version`.
pub(super) async fn version() -> Json<Value> {
    Json(json!({ "version": version_string() }))
}

/// `POST /reset_prefix_cache`.
pub(super) async fn reset_prefix_cache(State(st): State<Arc<ReplicaState>>) -> Response {
    let (tx, rx) = tokio::sync::oneshot::channel();
    if !st.engine.send(EngineMsg::ResetPrefixCache(tx)) || rx.await.is_err() {
        return ApiError::status(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            "engine is not running".into(),
        )
        .into_response();
    }
    StatusCode::OK.into_response()
}

/// `GET /metrics` in the replica's dialect, subject to the metrics faults.
pub(super) async fn metrics(State(st): State<Arc<ReplicaState>>) -> Response {
    let fault = {
        let mut rng = st.rng.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        st.faults.draw_metrics(&mut *rng)
    };
    match fault {
        Some(MetricsFault::Fail) => {
            return (StatusCode::INTERNAL_SERVER_ERROR, "injected fault: metrics unavailable\n").into_response();
        }
        Some(MetricsFault::Slow) => tokio::time::sleep(st.metrics_slow_delay).await,
        None => {}
    }
    let stats = st.engine.stats.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    let mut text = expo::render(st.dialect, &st.model, &st.params, &stats, st.engine.clock.now());
    if !st.faults.request.is_empty() {
        text.push_str(&st.tally.exposition());
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text).into_response()
}

/// Every endpoint while the replica is down ([`crate::sim::faults::Power`]): HTTP 503.
pub(super) async fn unless_down(
    State(st): State<Arc<ReplicaState>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if st.power.is_down() {
        return (StatusCode::SERVICE_UNAVAILABLE, "replica is down\n").into_response();
    }
    next.run(req).await
}

/// Anything else: 404 in the OpenAI error shape.
pub(super) async fn not_found() -> Response {
    ApiError::status(StatusCode::NOT_FOUND, "NotFoundError", "Not Found".into()).into_response()
}
