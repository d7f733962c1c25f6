//! A llama.cpp replica's discovery endpoints: `/v1/models` (per-slot `meta.n_ctx`, no
//! `max_model_len`), `/props` (`total_slots`, `default_generation_settings.n_ctx`), `/slots`,
//! `/health`, `/tokenize` (`{"content"}` in, `{"tokens"}` out), and llama-server's 404 and
//! 503 answers. There is no `/version`.

use super::error::{LlamaError, closing_json};
use super::server::JSON;
use super::{BUILD_INFO, LlamaState};
use crate::sim::tokenizer::{VOCAB_SIZE, tokenize};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::{Arc, PoisonError};

/// Model-file facts `/v1/models` reports (a 27B model in F16, BPE vocabulary).
const N_EMBD: u64 = 5120;
const N_PARAMS: u64 = 27_000_000_000;
const FTYPE: &str = "F16";

/// The chat template the simulator's tokenizer applies (ChatML), as `/props` shows it.
const CHAT_TEMPLATE: &str = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

fn json_response(v: &Value) -> Response {
    ([(header::CONTENT_TYPE, JSON)], v.to_string()).into_response()
}

/// `GET /v1/models`: llama-server's Ollama-style `models` list and the OpenAI `data` list.
pub(super) async fn models(State(st): State<Arc<LlamaState>>) -> Response {
    let m = &st.replica.model;
    json_response(&json!({
        "models": [{
            "name": m, "model": m, "modified_at": "", "size": "", "digest": "", "type": "model",
            "description": "", "tags": [""], "capabilities": ["completion"], "parameters": "",
            "details": {"parent_model": "", "format": "gguf", "family": "", "families": [""],
                        "parameter_size": "", "quantization_level": ""}
        }],
        "object": "list",
        "data": [{
            "id": m, "aliases": [m], "tags": [], "object": "model", "created": super::unix_seconds(), "owned_by": "llamacpp",
            "meta": {"vocab_type": 2, "n_vocab": VOCAB_SIZE, "n_ctx": st.slot_ctx, "n_ctx_train": st.n_ctx_train,
                     "n_embd": N_EMBD, "n_params": N_PARAMS, "size": 2 * N_PARAMS, "ftype": FTYPE}
        }]
    }))
}

/// The sampling defaults `/props` and `/slots` show.
fn generation_params() -> Value {
    json!({
        "seed": 4_294_967_295u64, "temperature": 0.8, "top_k": 40, "top_p": 0.95, "min_p": 0.05,
        "repeat_last_n": 64, "repeat_penalty": 1.0, "max_tokens": -1, "n_predict": -1, "n_keep": 0,
        "ignore_eos": false, "stream": false, "n_probs": 0, "chat_format": "Content-only",
        "samplers": ["penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p", "min_p", "xtc", "temperature"],
        "speculative.types": "none", "timings_per_token": false, "lora": []
    })
}

/// `GET /props`.
pub(super) async fn props(State(st): State<Arc<LlamaState>>) -> Response {
    let m = &st.replica.model;
    json_response(&json!({
        "default_generation_settings": {"params": generation_params(), "n_ctx": st.slot_ctx},
        "total_slots": st.slots(),
        "model_alias": m,
        "model_ftype": FTYPE,
        "model_path": format!("/models/{m}.gguf"),
        "modalities": {"vision": false, "video": false, "audio": false},
        "media_marker": "<__media__>",
        "endpoint_slots": true, "endpoint_props": false, "endpoint_metrics": true,
        "ui": false, "ui_settings": {},
        "chat_template": CHAT_TEMPLATE,
        "chat_template_caps": {"supports_string_content": true, "supports_system_role": true, "supports_tools": false},
        "bos_token": "<|endoftext|>", "eos_token": "<|im_end|>",
        "build_info": BUILD_INFO,
        "is_sleeping": false, "cors_proxy_enabled": false
    }))
}

/// `GET /slots`: one entry per slot; the first `running` ones are processing.
pub(super) async fn slots(State(st): State<Arc<LlamaState>>) -> Response {
    let running = st.replica.engine.stats.lock().unwrap_or_else(PoisonError::into_inner).running;
    let slots: Vec<Value> = (0..st.slots())
        .map(|id| {
            let busy = id < running;
            json!({
                "id": id, "n_ctx": st.slot_ctx, "speculative": false, "is_processing": busy,
                "params": generation_params(),
                "next_token": [{"has_next_token": busy, "has_new_line": false, "n_remain": -1, "n_decoded": 0}]
            })
        })
        .collect();
    json_response(&Value::Array(slots))
}

/// `GET /health`.
pub(super) async fn health() -> Response {
    json_response(&json!({"status": "ok"}))
}

/// `POST /tokenize`: `{"content": text}` → `{"tokens": [...]}`; any other body (a vLLM-style
/// `{"prompt"}`, say) gets an empty list and no error, as from llama-server.
pub(super) async fn tokenize_endpoint(body: Bytes) -> Response {
    let v: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return LlamaError::server(format!("[json.exception.parse_error.101] parse error: {e}")).into_response();
        }
    };
    let tokens = v.get("content").and_then(Value::as_str).map(tokenize).unwrap_or_default();
    json_response(&json!({ "tokens": tokens }))
}

/// Any other path: llama-server's 404 (`message`, `type`, `code`, in that order).
pub(super) async fn not_found() -> Response {
    let body = r#"{"error":{"message":"File Not Found","type":"not_found_error","code":404}}"#;
    closing_json(StatusCode::NOT_FOUND, body.to_string())
}

/// Every endpoint while the replica is down: llama-server's 503 while it loads a model.
pub(super) async fn unless_down(
    State(st): State<Arc<LlamaState>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if st.replica.power.is_down() {
        return LlamaError::unavailable("Loading model").into_response();
    }
    next.run(req).await
}
