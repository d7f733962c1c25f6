//! llama.cpp's error answers: `{"error":{"code","message","type"}}` in that order (plus
//! `n_prompt_tokens` and `n_ctx` for a prompt over the slot), sent with `Connection: close`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// An error answered before any event is streamed.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct LlamaError {
    /// HTTP status.
    pub status: StatusCode,
    /// Human-readable message.
    pub message: String,
    /// llama.cpp error type (`invalid_request_error`, `server_error`, ...).
    pub kind: &'static str,
    /// For `exceed_context_size_error`: the prompt's tokens and the slot's context, tokens.
    pub context: Option<(usize, usize)>,
}

#[derive(Serialize)]
struct Wire<'a> {
    error: Inner<'a>,
}

#[derive(Serialize)]
struct Inner<'a> {
    code: u16,
    message: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    n_prompt_tokens: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    n_ctx: Option<usize>,
}

impl LlamaError {
    /// Any status with an error type.
    pub(super) fn new(status: StatusCode, kind: &'static str, message: String) -> Self {
        Self { status, message, kind, context: None }
    }

    /// HTTP 400 `invalid_request_error`.
    pub(super) fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request_error", message.into())
    }

    /// HTTP 500 `server_error` (llama.cpp's answer to a body that is not JSON, too).
    pub(super) fn server(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "server_error", message.into())
    }

    /// HTTP 503 `unavailable_error`.
    pub(super) fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable_error", message.into())
    }

    /// HTTP 400 for a prompt of `n_prompt` tokens that does not fit a slot of `n_ctx` tokens.
    pub(super) fn exceed_context(n_prompt: usize, n_ctx: usize) -> Self {
        let message = format!(
            "request ({n_prompt} tokens) exceeds the available context size ({n_ctx} tokens), try increasing it"
        );
        let e = Self::new(StatusCode::BAD_REQUEST, "exceed_context_size_error", message);
        Self { context: Some((n_prompt, n_ctx)), ..e }
    }

    /// The JSON body, fields in llama.cpp's order.
    pub(super) fn body(&self) -> String {
        let inner = Inner {
            code: self.status.as_u16(),
            message: &self.message,
            kind: self.kind,
            n_prompt_tokens: self.context.map(|c| c.0),
            n_ctx: self.context.map(|c| c.1),
        };
        serde_json::to_string(&Wire { error: inner }).unwrap_or_default()
    }
}

/// A JSON error answer as llama-server sends it: `Connection: close`, no keep-alive.
pub(super) fn closing_json(status: StatusCode, body: String) -> Response {
    let mut resp = (status, [(header::CONTENT_TYPE, super::server::JSON)], body).into_response();
    resp.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

impl IntoResponse for LlamaError {
    fn into_response(self) -> Response {
        closing_json(self.status, self.body())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_over_context_body_is_the_captured_one() {
        let captured = include_str!("../../../tests/fixtures/llamacpp_7e4c0a9/over_context_400.json");
        assert_eq!(LlamaError::exceed_context(27001, 8192).body(), captured.trim_end());
    }

    #[test]
    fn other_errors_have_code_message_type() {
        let e = LlamaError::invalid_request("'messages' is required");
        assert_eq!(
            e.body(),
            r#"{"error":{"code":400,"message":"'messages' is required","type":"invalid_request_error"}}"#
        );
        let resp = e.into_response();
        assert_eq!(resp.headers()[header::CONNECTION], "close");
    }
}
