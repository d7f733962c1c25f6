//! vLLM-style error responses: `{"error": {"message", "type", "param", "code"}}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error answered before any token is streamed.
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// OpenAI error type (`BadRequestError`, ...).
    pub kind: &'static str,
    /// Human-readable message.
    pub message: String,
    /// The request field at fault, if any.
    pub param: Option<&'static str>,
}

impl ApiError {
    /// HTTP 400 `BadRequestError`.
    pub(crate) fn bad_request(message: String, param: Option<&'static str>) -> Self {
        Self { status: StatusCode::BAD_REQUEST, kind: "BadRequestError", message, param }
    }

    /// HTTP 400 for prompt + output over `max_model_len` (param `input_tokens`).
    pub(crate) fn context_overflow(message: String) -> Self {
        Self::bad_request(message, Some("input_tokens"))
    }

    /// HTTP 404 `NotFoundError`.
    pub(crate) fn not_found(message: String) -> Self {
        Self { status: StatusCode::NOT_FOUND, kind: "NotFoundError", message, param: Some("model") }
    }

    /// Any other status with an error type.
    pub(crate) fn status(status: StatusCode, kind: &'static str, message: String) -> Self {
        Self { status, kind, message, param: None }
    }

    /// The JSON body.
    pub(crate) fn body(&self) -> serde_json::Value {
        json!({"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.status.as_u16()}})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (self.status, axum::Json(self.body())).into_response();
        if self.status == StatusCode::TOO_MANY_REQUESTS || self.status == StatusCode::SERVICE_UNAVAILABLE {
            resp.headers_mut().insert("retry-after", axum::http::HeaderValue::from_static("1"));
        }
        resp
    }
}
