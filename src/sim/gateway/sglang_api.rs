//! Endpoints the router modes answer themselves: sglang-router's `/v1/models` (which says
//! `unknown` in front of vLLM workers), `/workers` and `/get_loads`, and the JSON 404.

use super::GatewayState;
use super::router_mode::worker_views;
use crate::sim::api::error::ApiError;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::Arc;

/// `GET /v1/models`: sglang-router 0.3.2 in front of vLLM workers does not know the model name.
pub(super) async fn models() -> Json<Value> {
    Json(json!({
        "object": "list",
        "data": [{"id": "unknown", "object": "model", "created": 0, "owned_by": "sglang"}]
    }))
}

/// `GET /workers`: every worker with its URL, health and requests in flight.
pub(super) async fn workers(State(st): State<Arc<GatewayState>>) -> Json<Value> {
    let counters = st.router.counters.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    let list: Vec<Value> = worker_views(&st)
        .iter()
        .enumerate()
        .map(|(i, w)| {
            json!({
                "id": format!("worker-{i}"),
                "url": w.url,
                "model": "unknown",
                "worker_type": "regular",
                "connection_mode": "http",
                "healthy": true,
                "requests_active": w.running,
                "requests_total": counters.processed.get(&i).copied().unwrap_or(0),
            })
        })
        .collect();
    Json(json!({"workers": list, "total": st.upstreams.len()}))
}

/// `GET /get_loads`: per-worker load; the simulator reports the requests the router has in flight.
pub(super) async fn get_loads(State(st): State<Arc<GatewayState>>) -> Json<Value> {
    let list: Vec<Value> = worker_views(&st)
        .iter()
        .map(|w| {
            json!({
                "worker": w.url,
                "load": w.running,
                "details": {"dp_rank_count": 1, "loads": [{"dp_rank": 0, "num_running_reqs": w.running}]}
            })
        })
        .collect();
    Json(json!({ "workers": list }))
}

/// Anything the router does not serve (e.g. `POST /tokenize`): 404 with an OpenAI error body.
pub(super) async fn not_found() -> Response {
    ApiError::status(StatusCode::NOT_FOUND, "not_found", "Not Found".into()).into_response()
}
