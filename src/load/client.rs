//! The non-streaming side of the API: discovery, tokenization, probes and cache control.

use super::backend::{BackendResponse, Exchange, SharedBackend};
use super::limits::{ERROR_BODY_KEEP, ERROR_BODY_WAIT, JSON_ANSWER_MAX};
use super::request::{ApiKey, Endpoint};
use super::scrub::Scrubber;
use bytes::Bytes;
use reqwest::Method;
use reqwest::header::{ACCEPT_ENCODING, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, LOCATION};
use serde_json::{Value, json};
use std::time::Duration;

/// A client error in one line (never includes the API key).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No HTTP answer at all.
    #[error("{url} is unreachable: {detail}")]
    Unreachable {
        /// The URL tried, credentials removed.
        url: String,
        /// What went wrong.
        detail: String,
    },
    /// An HTTP answer that is not success.
    #[error("{url} answered HTTP {status}: {body}")]
    Status {
        /// The URL tried, credentials removed.
        url: String,
        /// HTTP status.
        status: u16,
        /// Start of the body.
        body: String,
    },
    /// A success answer that did not have the expected shape.
    #[error("{url} answered something unexpected: {detail}")]
    Shape {
        /// The URL tried, credentials removed.
        url: String,
        /// What was missing.
        detail: String,
    },
}

/// Longest wait for one answer of the API (discovery, tokenization, probes).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// A served model as `/v1/models` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    /// Model id.
    pub id: String,
    /// Context length, tokens, when the server reports it: vLLM's `max_model_len`, else
    /// llama.cpp's `meta.n_ctx` (the context of one slot, which a request must fit).
    pub max_model_len: Option<u64>,
    /// The field `max_model_len` came from (`max_model_len` or `meta.n_ctx`).
    pub len_field: Option<&'static str>,
}

/// llama.cpp's server limits, from `GET /props`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotLimits {
    /// Requests decoded at once (`total_slots`); more wait (`requests_deferred`).
    pub total_slots: u64,
    /// Context of one slot, tokens (`default_generation_settings.n_ctx`).
    pub slot_ctx: Option<u64>,
}

/// An OpenAI-compatible server (or gateway) base URL plus credentials.
#[derive(Debug, Clone)]
pub struct ApiClient {
    backend: SharedBackend,
    base: String,
    key: Option<ApiKey>,
    /// Longest wait for one answer ([`REQUEST_TIMEOUT`] unless [`ApiClient::with_timeout`]).
    timeout: Duration,
}

pub use crate::net::redact_url;

/// What to do about refused credentials: give a key, or check the one given.
pub fn key_hint(key_sent: bool) -> &'static str {
    match key_sent {
        true => {
            "the key given (--api-key, --api-key-env or OPENAI_API_KEY) was sent as a Bearer token and refused: check it"
        }
        false => "no key was sent: set one with --api-key-env or --api-key",
    }
}

/// What a non-success answer says, one line without the key: where a redirect points (it is
/// not followed), else the start of the body (read for at most [`ERROR_BODY_WAIT`]).
async fn refusal_text(resp: BackendResponse, scrub: &Scrubber<'_>) -> String {
    if resp.status().is_redirection() {
        let location = resp.headers().get(LOCATION).and_then(|v| v.to_str().ok());
        let to = location.map_or("no Location".into(), |l| format!("to {}", redact_url(l)));
        return scrub.text(&format!("a redirect {to}, not followed")).into_owned();
    }
    let (head, _) = resp.head_of_body(ERROR_BODY_KEEP, ERROR_BODY_WAIT).await;
    let head = scrub.bytes(head);
    let text = String::from_utf8_lossy(&head);
    if text.trim().is_empty() {
        return "an empty body".into();
    }
    html_summary(&text).unwrap_or_else(|| text.chars().take(300).collect::<String>().replace('\n', " "))
}

/// `an HTML page titled "404 Not Found"` for an HTML body (a web server or a login page, not
/// an OpenAI API), so one line names the page instead of quoting its markup; None otherwise.
pub(crate) fn html_summary(body: &str) -> Option<String> {
    let start = body.trim_start();
    let lower = start.get(..start.len().min(512))?.to_ascii_lowercase();
    if !(lower.starts_with('<') && (lower.starts_with("<!doctype html") || lower.contains("<html"))) {
        return None;
    }
    let full = start.to_ascii_lowercase();
    let title = full.find("<title>").and_then(|i| {
        let from = i + "<title>".len();
        let end = full[from..].find("</title>")? + from;
        Some(start.get(from..end)?.split_whitespace().collect::<Vec<_>>().join(" "))
    });
    Some(match title.filter(|t| !t.is_empty()) {
        Some(t) => {
            format!("an HTML page titled \"{}\" (not an OpenAI API answer)", t.chars().take(80).collect::<String>())
        }
        None => "an HTML page (not an OpenAI API answer)".to_string(),
    })
}

impl ApiClient {
    /// A client for `base` (trailing slashes and a trailing `/v1` are removed).
    pub fn new(backend: SharedBackend, base: &str, key: Option<ApiKey>) -> Self {
        let mut base = base.trim().trim_end_matches('/').to_string();
        if let Some(b) = base.strip_suffix("/v1") {
            base = b.to_string();
        }
        Self { backend, base, key, timeout: REQUEST_TIMEOUT }
    }

    /// True when requests carry a key.
    pub fn has_key(&self) -> bool {
        self.key.is_some()
    }

    /// The same client, waiting at most `timeout` for each answer (e.g. a calibration probe,
    /// bounded by the first-token timeout instead of [`REQUEST_TIMEOUT`]).
    pub fn with_timeout(&self, timeout: Duration) -> Self {
        Self { timeout, ..self.clone() }
    }

    /// The transport it sends with.
    pub fn backend(&self) -> &SharedBackend {
        &self.backend
    }

    /// The base URL as given (credentials included, if any).
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `base + path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Headers every request carries: JSON content type, the bearer token, and
    /// `accept-encoding: identity` (a compressed stream may be held back for whole blocks,
    /// which would move token times; one sent compressed anyway is decoded).
    pub fn headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        h.insert(ACCEPT_ENCODING, HeaderValue::from_static("identity"));
        if let Some(v) = self.key.as_ref().and_then(|k| HeaderValue::from_str(&k.bearer()).ok()) {
            h.insert(AUTHORIZATION, v);
        }
        h
    }

    /// Status, body and content type of one exchange.
    async fn send(&self, method: Method, path: &str, body: Option<Bytes>) -> Result<(u16, Bytes, String), ClientError> {
        let (full, headers) = (self.url(path), self.headers());
        let url = redact_url(&full);
        let ex = Exchange { method, url: &full, headers: &headers, body, timeout: Some(self.timeout) };
        let resp = self.backend.send(ex).await;
        let resp =
            resp.map_err(|e| ClientError::Unreachable { url: url.clone(), detail: via_proxy(&full, e.describe()) })?;
        let status = resp.status().as_u16();
        let ct = resp.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        let scrub = Scrubber::new(self.key.as_ref());
        if !(200..300).contains(&status) {
            return Err(ClientError::Status { url, status, body: refusal_text(resp, &scrub).await });
        }
        let body = resp.bytes(JSON_ANSWER_MAX).await.map_err(|e| match e.too_large() {
            Some(big) => ClientError::Shape { url: url.clone(), detail: big.to_string() },
            None => ClientError::Unreachable { url: url.clone(), detail: e.describe() },
        })?;
        // Server text is scrubbed of the key here, before any of it is parsed, stored or shown.
        let body = scrub.bytes(body);
        Ok((status, body, ct))
    }

    /// The body as JSON, or a one-line reason naming what came instead.
    fn json_of(&self, path: &str, body: &[u8], ct: &str) -> Result<Value, ClientError> {
        serde_json::from_slice(body).map_err(|e| {
            let start: String =
                String::from_utf8_lossy(&body[..body.len().min(40)]).split_whitespace().collect::<Vec<_>>().join(" ");
            let detail = match ct {
                _ if body.is_empty() => "an empty body, not JSON".to_string(),
                "" => format!("not JSON ({e}); the body starts `{start}`"),
                ct => format!("not JSON (content-type {ct}); the body starts `{start}`"),
            };
            ClientError::Shape { url: redact_url(&self.url(path)), detail }
        })
    }

    async fn get_json(&self, path: &str) -> Result<Value, ClientError> {
        let (_, body, ct) = self.send(Method::GET, path, None).await?;
        self.json_of(path, &body, &ct)
    }

    async fn post_json(&self, path: &str, body: &Value) -> Result<Value, ClientError> {
        let (_, resp, ct) = self.send(Method::POST, path, Some(body.to_string().into())).await?;
        self.json_of(path, &resp, &ct)
    }

    /// `GET /v1/models`.
    pub async fn models(&self) -> Result<Vec<ModelInfo>, ClientError> {
        let v = self.get_json("/v1/models").await?;
        let data = v.get("data").and_then(Value::as_array).ok_or_else(|| ClientError::Shape {
            url: redact_url(&self.url("/v1/models")),
            detail: "no `data` list".into(),
        })?;
        Ok(data
            .iter()
            .filter_map(|m| {
                let id = m.get("id")?.as_str()?.to_string();
                let vllm = m.get("max_model_len").and_then(Value::as_u64).map(|l| (l, "max_model_len"));
                let slot = || m.pointer("/meta/n_ctx").and_then(Value::as_u64).map(|l| (l, "meta.n_ctx"));
                let len = vllm.or_else(slot).filter(|(l, _)| *l > 0);
                Some(ModelInfo { id, max_model_len: len.map(|l| l.0), len_field: len.map(|l| l.1) })
            })
            .collect())
    }

    /// `GET /props` (llama.cpp): the slot count and a slot's context; None when the server
    /// has no such page or it names no slots.
    pub async fn slot_limits(&self) -> Option<SlotLimits> {
        let v = self.get_json("/props").await.ok()?;
        let total_slots = v.get("total_slots").and_then(Value::as_u64).filter(|n| *n > 0)?;
        let slot_ctx = v.pointer("/default_generation_settings/n_ctx").and_then(Value::as_u64);
        Some(SlotLimits { total_slots, slot_ctx })
    }

    /// `GET /version` (vLLM), when the server has it.
    pub async fn version(&self) -> Option<String> {
        let v = self.get_json("/version").await.ok()?;
        v.get("version").and_then(Value::as_str).map(str::to_string)
    }

    /// [`version`](Self::version) within [`INFO_TIMEOUT`](super::wait::INFO_TIMEOUT), named on
    /// stderr while it lasts; None when it does not answer in time.
    pub async fn version_within(&self) -> Option<String> {
        let wait = super::wait::Wait::new(redact_url(&self.url("/version")), super::wait::INFO_TIMEOUT);
        wait.run(self.version()).await.ok().flatten()
    }

    /// Prompt tokens the server counts for `text` as a request to `endpoint` (`POST /tokenize`).
    pub async fn tokenize(&self, model: &str, endpoint: Endpoint, text: &str) -> Result<u64, ClientError> {
        let body = match endpoint {
            Endpoint::Chat => {
                json!({"model": model, "messages": [{"role": "user", "content": text}], "add_generation_prompt": true})
            }
            Endpoint::Completions => json!({"model": model, "prompt": text}),
        };
        let v = self.post_json("/tokenize", &body).await?;
        if let Some(count) = v.get("count").and_then(Value::as_u64) {
            return Ok(count);
        }
        // llama.cpp answers `{"tokens": [...]}` without a count, and only for `content`: to a
        // vLLM-style body it says `{"tokens": []}`, which means "unknown", never 0 tokens. A
        // bare tokenizer has no chat template, so only a completions prompt is asked again.
        let shape =
            |detail: &str| ClientError::Shape { url: redact_url(&self.url("/tokenize")), detail: detail.into() };
        if endpoint == Endpoint::Chat || !v.get("tokens").is_some_and(Value::is_array) {
            return Err(shape("no `count`"));
        }
        let again = self.post_json("/tokenize", &json!({"content": text, "add_special": true})).await?;
        let n = again.get("tokens").and_then(Value::as_array).map_or(0, Vec::len);
        match n {
            0 => Err(shape("an empty token list (unknown, not 0 tokens)")),
            n => Ok(n as u64),
        }
    }

    /// Prompt tokens from a one-token probe request's `usage.prompt_tokens`.
    pub async fn probe_prompt_tokens(&self, model: &str, endpoint: Endpoint, text: &str) -> Result<u64, ClientError> {
        let body: Value = match endpoint {
            Endpoint::Chat => json!({"model": model, "messages": [{"role": "user", "content": text}], "max_tokens": 1}),
            Endpoint::Completions => json!({"model": model, "prompt": text, "max_tokens": 1}),
        };
        let v = self.post_json(endpoint.path(), &body).await?;
        v.pointer("/usage/prompt_tokens").and_then(Value::as_u64).ok_or_else(|| ClientError::Shape {
            url: redact_url(&self.url(endpoint.path())),
            detail: "no usage.prompt_tokens".into(),
        })
    }

    /// `POST` to a cache-control path such as `/reset_prefix_cache`; the HTTP status.
    pub async fn post_empty(&self, path: &str) -> Result<u16, ClientError> {
        self.send(Method::POST, path, None).await.map(|(s, _, _)| s)
    }
}

/// `detail` of a failed exchange with `url`, naming the proxy the environment sent it through:
/// a refused connection is then the proxy's, not the server's.
fn via_proxy(url: &str, detail: String) -> String {
    match super::proxy_env::ProxyEnv::from_env().for_url(url) {
        Some(var) => format!("{detail} (sent through the proxy in ${var})"),
        None => detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_credentials() {
        assert_eq!(redact_url("http://u:p@host:8000/v1/models"), "http://host:8000/v1/models");
        assert_eq!(redact_url("https://host"), "https://host");
        assert_eq!(redact_url("http://user@h:1"), "http://h:1");
    }

    #[test]
    fn base_is_normalised() {
        let backend = super::super::backend::HttpBackend::shared(crate::net::client_builder().build().unwrap());
        let c = ApiClient::new(backend, "http://h:1/v1/", None);
        assert_eq!(c.url("/v1/models"), "http://h:1/v1/models");
        assert!(!c.headers().contains_key(AUTHORIZATION));
    }

    #[test]
    fn an_html_page_is_named_by_its_title_not_quoted() {
        let page = "\n<!DOCTYPE html>\n<html><head><title>404\n Not Found</title></head><body><h1>Not Found</h1></body></html>";
        assert_eq!(
            html_summary(page).as_deref(),
            Some("an HTML page titled \"404 Not Found\" (not an OpenAI API answer)")
        );
        assert_eq!(
            html_summary("<html><body>x</body></html>").as_deref(),
            Some("an HTML page (not an OpenAI API answer)")
        );
        assert_eq!(html_summary("{\"error\":\"<html>\"}"), None, "JSON that quotes markup is not a page");
        assert_eq!(html_summary("Not Found"), None);
    }
}
