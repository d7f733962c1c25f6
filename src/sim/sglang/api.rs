//! The routes an SGLang replica has beyond the OpenAI pair (`http_server.py`), its request
//! validation (`TokenizerManager._validate_one_request`) and its flat error body
//! (docs/protocol.md §2.6, §2.7).

use crate::sim::api::ReplicaState;
use crate::sim::api::body::{Endpoint, Limits, Prepared, flag, prepare as prepare_openai};
use crate::sim::engine::EngineMsg;
use crate::sim::sglang::stats::DECODE_LOG_INTERVAL;
use crate::sim::tokenizer::tokenize;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use std::sync::Arc;

/// `/flush_cache` body when the cache was flushed.
pub(crate) const FLUSHED: &str = "Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n";
/// `/flush_cache` body when requests were queued or running.
pub(crate) const NOT_FLUSHED: &str = "Flush cache failed.\n";

/// Adds SGLang's native routes, and its `/v1/models` and `/tokenize`, to `r`.
pub(crate) fn mount(r: Router<Arc<ReplicaState>>) -> Router<Arc<ReplicaState>> {
    r.route("/v1/models", get(models))
        .route("/get_model_info", get(model_info))
        .route("/model_info", get(model_info))
        .route("/get_server_info", get(server_info))
        .route("/server_info", get(server_info))
        .route("/flush_cache", get(flush_cache).post(flush_cache))
        .route("/tokenize", post(tokenize_route))
        .route("/v1/tokenize", post(tokenize_route))
}

/// SGLang's `ErrorResponse`: flat, `{"object": "error", "message", "type", "param", "code"}`.
#[derive(Debug, Clone)]
pub(crate) struct SglangError {
    /// HTTP status.
    pub status: StatusCode,
    /// `type`.
    pub kind: &'static str,
    /// `message`.
    pub message: String,
}

impl IntoResponse for SglangError {
    fn into_response(self) -> Response {
        let code = self.status.as_u16();
        let body = json!({"object": "error", "message": self.message, "type": self.kind, "param": null, "code": code});
        (self.status, axum::Json(body)).into_response()
    }
}

fn error(status: StatusCode, kind: &'static str, message: &str) -> SglangError {
    SglangError { status, kind, message: message.to_string() }
}

/// Parses and validates a completion or chat request as SGLang does: the OpenAI parsing of
/// `body.rs`, then SGLang's own length check and usage options (errors as [`error`]).
pub(crate) fn prepare(
    body: &[u8],
    endpoint: Endpoint,
    model: &str,
    context_len: usize,
) -> Result<Prepared, SglangError> {
    let open = Limits { model, max_model_len: usize::MAX / 4 };
    let mut prep = prepare_openai(body, endpoint, &open).map_err(|e| error(e.status, e.kind, &e.message))?;
    let raw: Value = serde_json::from_slice(body).unwrap_or_default();
    let asked = ["max_completion_tokens", "max_tokens"].iter().find_map(|k| raw.get(*k).and_then(Value::as_u64));
    // `CompletionRequest.max_tokens` defaults to 16; a chat request without one has no cap.
    let max_new = asked.or((endpoint == Endpoint::Completions).then_some(16));
    let input = prep.prompt.len();
    if input >= context_len {
        let msg =
            format!("The input ({input} tokens) is longer than the model's context length ({context_len} tokens).");
        return Err(error(StatusCode::BAD_REQUEST, "BadRequestError", &msg));
    }
    if let Some(m) = max_new.filter(|m| m + input as u64 > context_len as u64) {
        let msg = format!(
            "Requested token count exceeds the model's maximum context length of {context_len} tokens. You requested a total of {} tokens: {input} tokens from the input messages and {m} tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.",
            m + input as u64
        );
        return Err(error(StatusCode::BAD_REQUEST, "BadRequestError", &msg));
    }
    // The scheduler caps an uncapped request at the room left in the context.
    let cap = u32::try_from(max_new.unwrap_or((context_len - input - 1) as u64)).unwrap_or(u32::MAX);
    prep.stop_after = if flag(&raw, "/ignore_eos") { cap } else { prep.stop_after.min(cap) };
    prep.max_tokens = cap;
    // `should_include_usage`: the two options are independent, both off by default.
    prep.include_usage = flag(&raw, "/stream_options/include_usage");
    prep.continuous_usage = flag(&raw, "/stream_options/continuous_usage_stats");
    Ok(prep)
}

async fn models(State(st): State<Arc<ReplicaState>>) -> Response {
    axum::Json(json!({
        "object": "list",
        "data": [{"id": st.model, "object": "model", "created": 0, "owned_by": "sglang", "root": st.model,
                  "max_model_len": st.params.max_model_len}]
    }))
    .into_response()
}

async fn model_info(State(st): State<Arc<ReplicaState>>) -> Response {
    axum::Json(json!({
        "model_path": st.model, "tokenizer_path": st.model, "is_generation": true,
        "preferred_sampling_params": null, "weight_version": "default"
    }))
    .into_response()
}

/// The server arguments as the simulated replica was "launched": `--max-running-requests`,
/// `--chunked-prefill-size` and `--page-size` given, `--context-length` not.
fn server_args(st: &ReplicaState) -> serde_json::Map<String, Value> {
    let p = &st.params;
    let args = json!({
        "model_path": st.model, "served_model_name": st.model, "context_length": null,
        "max_running_requests": p.max_num_seqs, "max_total_tokens": null,
        "chunked_prefill_size": p.max_num_batched_tokens, "page_size": p.block_size,
        "stream_interval": st.stream_interval, "enable_metrics": true,
        "decode_log_interval": DECODE_LOG_INTERVAL, "stream_response_default_include_usage": false,
        "enable_cache_report": false, "tp_size": 1, "dp_size": 1, "pp_size": 1
    });
    match args {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

/// `GET /get_server_info` (and `/server_info`): the server arguments, then `scheduler_info`
/// (`max_total_num_tokens`, `max_req_input_len`), `internal_states` (one per DP rank) and
/// `version`.
async fn server_info(State(st): State<Arc<ReplicaState>>) -> Response {
    let p = &st.params;
    let capacity = p.kv_capacity_tokens();
    let throughput =
        st.engine.stats.lock().unwrap_or_else(std::sync::PoisonError::into_inner).sglang.logged.gen_throughput;
    let mut internal = server_args(&st);
    internal.insert("last_gen_throughput".into(), json!(throughput));
    internal.insert(
        "memory_usage".into(),
        json!({"weight": 0.0, "kvcache": 0.0, "token_capacity": capacity, "graph": 0.0}),
    );
    internal.insert("effective_max_running_requests_per_dp".into(), json!(p.max_num_seqs));
    let mut out = server_args(&st);
    out.insert("status".into(), json!("ready"));
    out.insert("max_total_num_tokens".into(), json!(capacity));
    out.insert("max_req_input_len".into(), json!(p.max_model_len.min(capacity).saturating_sub(1)));
    out.insert("internal_states".into(), json!([internal]));
    out.insert("version".into(), json!(format!("{}+sim", env!("CARGO_PKG_VERSION"))));
    axum::Json(Value::Object(out)).into_response()
}

/// `GET|POST /flush_cache`: 200 once the cache is flushed, 400 while requests are queued or
/// running (nothing is flushed then).
async fn flush_cache(State(st): State<Arc<ReplicaState>>) -> Response {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let flushed = st.engine.send(EngineMsg::FlushCacheIfIdle(tx)) && rx.await.unwrap_or(false);
    match flushed {
        true => (StatusCode::OK, FLUSHED).into_response(),
        false => (StatusCode::BAD_REQUEST, NOT_FLUSHED).into_response(),
    }
}

/// `POST /tokenize`: `{prompt: str | [str]}` to `{tokens, count, max_model_len}` (lists for a
/// list); no chat form.
async fn tokenize_route(State(st): State<Arc<ReplicaState>>, body: Bytes) -> Response {
    let len = st.params.max_model_len;
    let v: Value = serde_json::from_slice(&body).unwrap_or_default();
    match v.get("prompt") {
        Some(Value::String(s)) => {
            let t = tokenize(s);
            axum::Json(json!({"tokens": t, "count": t.len(), "max_model_len": len})).into_response()
        }
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => {
            let t: Vec<Vec<u32>> = items.iter().map(|s| tokenize(s.as_str().unwrap_or_default())).collect();
            let count: Vec<usize> = t.iter().map(Vec::len).collect();
            axum::Json(json!({"tokens": t, "count": count, "max_model_len": len})).into_response()
        }
        _ => error(StatusCode::BAD_REQUEST, "Bad Request", "Field required: prompt").into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prep(body: &str, ep: Endpoint) -> Result<Prepared, StatusCode> {
        prepare(body.as_bytes(), ep, "m", 100).map_err(|e| e.status)
    }

    #[test]
    fn usage_options_are_independent_and_off_by_default() {
        let p =
            prep(r#"{"prompt":"x","stream_options":{"continuous_usage_stats":true}}"#, Endpoint::Completions).unwrap();
        assert!(p.continuous_usage && !p.include_usage);
        let p = prep(r#"{"prompt":"x","stream_options":{}}"#, Endpoint::Completions).unwrap();
        assert!(!p.continuous_usage && !p.include_usage);
    }

    #[test]
    fn lengths_are_checked_as_sglang_checks_them() {
        assert_eq!(prep(r#"{"prompt":"x","max_tokens":100}"#, Endpoint::Completions).unwrap_err(), 400);
        assert_eq!(prep(r#"{"prompt":"x","max_tokens":99}"#, Endpoint::Completions).unwrap().max_tokens, 99);
        let chat = prep(r#"{"messages":[{"role":"user","content":"hi"}],"ignore_eos":true}"#, Endpoint::Chat).unwrap();
        assert_eq!(chat.max_tokens as usize, 100 - chat.prompt.len() - 1, "uncapped chat runs to the context");
        assert_eq!(chat.stop_after, chat.max_tokens);
        let words = vec!["w"; 100].join(" ");
        let long = format!(r#"{{"prompt":"{words}","max_tokens":1}}"#);
        assert_eq!(prep(&long, Endpoint::Completions).unwrap_err(), 400);
    }
}
