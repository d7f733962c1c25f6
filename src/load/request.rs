//! The target API and pre-rendered request bodies (built once per cell, not per request).

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// Which OpenAI endpoint the load uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum, Default)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    /// `/v1/chat/completions` (vLLM's `--endpoint` path is accepted too).
    #[default]
    #[value(alias = "/v1/chat/completions")]
    Chat,
    /// `/v1/completions`.
    #[value(alias = "/v1/completions")]
    Completions,
}

impl Endpoint {
    /// The request path.
    pub fn path(self) -> &'static str {
        match self {
            Self::Chat => "/v1/chat/completions",
            Self::Completions => "/v1/completions",
        }
    }

    /// The report name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Completions => "completions",
        }
    }
}

/// An API key. Its `Debug` and `Display` never show the value.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key read from the environment or a flag.
    pub fn new(key: String) -> Self {
        Self(key.trim().to_string())
    }

    /// The `Authorization` header value.
    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.0)
    }

    /// The key itself: only for the `Authorization` header and for scrubbing it out of
    /// server text (`load::scrub`).
    pub fn secret(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for ApiKey {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Ok(Self(s.trim().to_string()))
    }
}

impl ApiKey {
    /// True when the key is empty (treated as no key).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Options of a generated request body.
#[derive(Debug, Clone, PartialEq)]
pub struct BodyOptions {
    /// Endpoint the body is for.
    pub endpoint: Endpoint,
    /// Model name.
    pub model: String,
    /// `max_tokens`, tokens.
    pub max_tokens: u64,
    /// Ask the server to ignore EOS so exactly `max_tokens` are generated.
    pub ignore_eos: bool,
}

/// A request body rendered once, with a slot for a per-request nonce placed before the
/// prompt text so that no two requests share a prefix-cache block unless wanted.
#[derive(Debug, Clone)]
pub struct BodyTemplate {
    head: Arc<str>,
    text: Arc<str>,
    tail: Arc<str>,
}

/// The JSON string escape of `s`, without the surrounding quotes.
pub fn json_escape(s: &str) -> String {
    let quoted = serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
    quoted[1..quoted.len() - 1].to_string()
}

impl BodyTemplate {
    /// Renders the fixed parts of a streaming request around `text`.
    pub fn new(opts: &BodyOptions, text: &str) -> Self {
        let model = json_escape(&opts.model);
        let head = match opts.endpoint {
            Endpoint::Chat => format!("{{\"model\":\"{model}\",\"messages\":[{{\"role\":\"user\",\"content\":\""),
            Endpoint::Completions => format!("{{\"model\":\"{model}\",\"prompt\":\""),
        };
        let close = match opts.endpoint {
            Endpoint::Chat => "\"}]",
            Endpoint::Completions => "\"",
        };
        let tail = format!(
            "{close},\"max_tokens\":{},\"ignore_eos\":{},\"stream\":true,\"stream_options\":{{\"include_usage\":true,\"continuous_usage_stats\":true}}}}",
            opts.max_tokens, opts.ignore_eos
        );
        Self { head: head.into(), text: json_escape(text).into(), tail: tail.into() }
    }

    /// The body for one request; `prefix` (plain text, escaped here) goes before the prompt.
    pub fn render(&self, prefix: &str) -> Bytes {
        let prefix = json_escape(prefix);
        let mut out = String::with_capacity(self.head.len() + prefix.len() + self.text.len() + self.tail.len());
        out.push_str(&self.head);
        out.push_str(&prefix);
        out.push_str(&self.text);
        out.push_str(&self.tail);
        Bytes::from(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_valid_json_with_the_nonce_first() {
        for endpoint in [Endpoint::Chat, Endpoint::Completions] {
            let opts = BodyOptions { endpoint, model: "m\"x".into(), max_tokens: 7, ignore_eos: true };
            let t = BodyTemplate::new(&opts, "line\n\"quoted\"");
            let v: serde_json::Value = serde_json::from_slice(&t.render("[n1] ")).unwrap();
            assert_eq!(v["model"], "m\"x");
            assert_eq!(v["max_tokens"], 7);
            assert_eq!(v["stream_options"]["continuous_usage_stats"], true);
            let text = match endpoint {
                Endpoint::Chat => v["messages"][0]["content"].as_str().unwrap().to_string(),
                Endpoint::Completions => v["prompt"].as_str().unwrap().to_string(),
            };
            assert_eq!(text, "[n1] line\n\"quoted\"");
        }
    }

    #[test]
    fn api_key_is_never_shown() {
        let k = ApiKey::new("sk-secret".into());
        assert!(!format!("{k:?} {k}").contains("secret"));
        assert_eq!(k.bearer(), "Bearer sk-secret");
    }
}
