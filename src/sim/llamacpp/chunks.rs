//! llama-server's streamed chunks and whole answers, field for field in its order
//! (`tests/fixtures/llamacpp_7e4c0a9/*.sse`).
//!
//! * `/v1/completions`: one chunk per token (`choices[0].text`), then a finish chunk with
//!   `text: ""`, the finish reason, `usage` and `timings` (usage always: llama-server puts it
//!   there with or without `include_usage`), then `data: [DONE]`.
//! * chat: a role chunk (`delta.role`, `content: null`), one chunk per token, a finish chunk
//!   with `delta: {}`; with `include_usage` a separate `choices: []` chunk carries `usage` and
//!   `timings`, without it the finish chunk carries `timings`; then `data: [DONE]`.
//!
//! No chunk ever carries usage per token: `continuous_usage_stats` is not supported.

use super::BUILD_INFO;
use crate::sim::api::body::Endpoint;
use crate::sim::tokenizer::output_word;
use bytes::Bytes;
use std::fmt::Write;

/// What llama-server reports in `timings` about one request.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Timings {
    /// Prompt tokens reused from the cache.
    pub cache_n: u64,
    /// Prompt tokens evaluated.
    pub prompt_n: u64,
    /// Time to evaluate them (arrival to first token here), milliseconds.
    pub prompt_ms: f64,
    /// Tokens generated.
    pub predicted_n: u64,
    /// First to last token, milliseconds.
    pub predicted_ms: f64,
}

/// A JSON number as nlohmann writes a double (`0.0`, `1089.32…`); non-finite as 0.
fn num(v: f64) -> String {
    serde_json::Number::from_f64(v).map_or_else(|| "0.0".to_string(), |n| n.to_string())
}

/// `ms` per token and tokens per second, 0 for no tokens or no time.
fn per(n: u64, ms: f64) -> (f64, f64) {
    if n == 0 || ms <= 0.0 { (0.0, 0.0) } else { (ms / n as f64, 1e3 * n as f64 / ms) }
}

impl Timings {
    fn write(&self, out: &mut String) {
        let (p_tok, p_sec) = per(self.prompt_n, self.prompt_ms);
        let (g_tok, g_sec) = per(self.predicted_n, self.predicted_ms);
        let _ = write!(
            out,
            "\"timings\":{{\"cache_n\":{},\"prompt_n\":{},\"prompt_ms\":{},\"prompt_per_token_ms\":{},\"prompt_per_second\":{},\"predicted_n\":{},\"predicted_ms\":{},\"predicted_per_token_ms\":{},\"predicted_per_second\":{}}}",
            self.cache_n,
            self.prompt_n,
            num(self.prompt_ms),
            num(p_tok),
            num(p_sec),
            self.predicted_n,
            num(self.predicted_ms),
            num(g_tok),
            num(g_sec)
        );
    }
}

/// The constant parts of every chunk of one response.
#[derive(Debug, Clone)]
pub(super) struct LlamaFormat {
    /// `chatcmpl-` and 32 letters or digits (both endpoints, as llama-server names them).
    pub id: String,
    /// Unix seconds.
    pub created: u64,
    /// Model name, already JSON-escaped with quotes.
    pub model_json: String,
    /// Chat or completions.
    pub endpoint: Endpoint,
    /// Prompt tokens, for usage.
    pub prompt_tokens: u64,
    /// `stream_options.include_usage` was set.
    pub include_usage: bool,
    /// Seed of the output words.
    pub seed: u64,
}

impl LlamaFormat {
    /// `"created":…,"model":…,"system_fingerprint":…,"object":…` (completions' order).
    fn meta(&self, out: &mut String, object: &str) {
        let _ = write!(
            out,
            "\"created\":{},\"model\":{},\"system_fingerprint\":\"{BUILD_INFO}\",\"object\":\"{object}\"",
            self.created, self.model_json
        );
    }

    /// `"created":…,"id":…,"model":…,"system_fingerprint":…,"object":…` (chat chunks' order).
    fn chat_meta(&self, out: &mut String) {
        let _ = write!(
            out,
            "\"created\":{},\"id\":\"{}\",\"model\":{},\"system_fingerprint\":\"{BUILD_INFO}\",\"object\":\"chat.completion.chunk\"",
            self.created, self.id, self.model_json
        );
    }

    fn usage(&self, out: &mut String, completion: u64, cached: u64) {
        let _ = write!(
            out,
            "\"usage\":{{\"completion_tokens\":{completion},\"prompt_tokens\":{},\"total_tokens\":{},\"prompt_tokens_details\":{{\"cached_tokens\":{cached}}}}}",
            self.prompt_tokens,
            self.prompt_tokens + completion
        );
    }

    fn event(mut json: String) -> Bytes {
        json.insert_str(0, "data: ");
        json.push_str("\n\n");
        Bytes::from(json)
    }

    /// The chat stream's first chunk: the assistant role, `content: null`.
    pub(super) fn role_chunk(&self) -> Bytes {
        let mut out = String::from(
            "{\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null}}],",
        );
        self.chat_meta(&mut out);
        out.push('}');
        Self::event(out)
    }

    /// The chunk of output token number `index`.
    pub(super) fn token_chunk(&self, index: u64) -> Bytes {
        let word = output_word(self.seed, index);
        let mut out = String::with_capacity(320);
        match self.endpoint {
            Endpoint::Completions => {
                let _ = write!(
                    out,
                    "{{\"choices\":[{{\"text\":\"{word}\",\"index\":0,\"logprobs\":null,\"finish_reason\":null}}],"
                );
                self.meta(&mut out, "text_completion");
                let _ = write!(out, ",\"id\":\"{}\"}}", self.id);
            }
            Endpoint::Chat => {
                let _ = write!(
                    out,
                    "{{\"choices\":[{{\"finish_reason\":null,\"index\":0,\"delta\":{{\"content\":\"{word}\"}}}}],"
                );
                self.chat_meta(&mut out);
                out.push('}');
            }
        }
        Self::event(out)
    }

    /// The chunks that end a stream of `generated` tokens (before `[DONE]`).
    pub(super) fn finish_chunks(&self, generated: u64, reason: &str, t: &Timings) -> Vec<Bytes> {
        let mut out = String::with_capacity(640);
        match self.endpoint {
            Endpoint::Completions => {
                let _ = write!(
                    out,
                    "{{\"choices\":[{{\"text\":\"\",\"index\":0,\"logprobs\":null,\"finish_reason\":\"{reason}\"}}],"
                );
                self.meta(&mut out, "text_completion");
                out.push(',');
                self.usage(&mut out, generated, t.cache_n);
                let _ = write!(out, ",\"id\":\"{}\",", self.id);
                t.write(&mut out);
                out.push('}');
                vec![Self::event(out)]
            }
            Endpoint::Chat => {
                let _ = write!(out, "{{\"choices\":[{{\"finish_reason\":\"{reason}\",\"index\":0,\"delta\":{{}}}}],");
                self.chat_meta(&mut out);
                if !self.include_usage {
                    out.push(',');
                    t.write(&mut out);
                    out.push('}');
                    return vec![Self::event(out)];
                }
                out.push('}');
                vec![Self::event(out), self.usage_chunk(generated, t)]
            }
        }
    }

    /// The chat stream's `choices: []` chunk with `usage` and `timings`.
    fn usage_chunk(&self, generated: u64, t: &Timings) -> Bytes {
        let mut out = String::from("{\"choices\":[],");
        self.chat_meta(&mut out);
        out.push(',');
        self.usage(&mut out, generated, t.cache_n);
        out.push(',');
        t.write(&mut out);
        out.push('}');
        Self::event(out)
    }

    /// The whole answer of a request that is not streamed.
    pub(super) fn full_body(&self, generated: u64, reason: &str, t: &Timings) -> String {
        let text: String = (0..generated).map(|i| output_word(self.seed, i)).collect();
        let mut out = String::with_capacity(640 + text.len());
        let object = match self.endpoint {
            Endpoint::Completions => {
                let _ = write!(
                    out,
                    "{{\"choices\":[{{\"text\":\"{text}\",\"index\":0,\"logprobs\":null,\"finish_reason\":\"{reason}\"}}],"
                );
                "text_completion"
            }
            Endpoint::Chat => {
                let _ = write!(
                    out,
                    "{{\"choices\":[{{\"finish_reason\":\"{reason}\",\"index\":0,\"message\":{{\"role\":\"assistant\",\"content\":\"{text}\"}}}}],"
                );
                "chat.completion"
            }
        };
        self.meta(&mut out, object);
        out.push(',');
        self.usage(&mut out, generated, t.cache_n);
        let _ = write!(out, ",\"id\":\"{}\",", self.id);
        t.write(&mut out);
        out.push('}');
        out
    }
}

/// The end-of-stream marker.
pub(super) const DONE: &[u8] = b"data: [DONE]\n\n";

/// llama-server's report of a failure after streaming started: an `error:` line, no `[DONE]`.
pub(super) fn error_event(message: &str) -> Bytes {
    let body = super::error::LlamaError::server(message).body();
    let inner = body.strip_prefix("{\"error\":").and_then(|b| b.strip_suffix('}')).unwrap_or(&body);
    Bytes::from(format!("error: {inner}\n\n"))
}

#[cfg(test)]
#[path = "chunks_tests.rs"]
mod tests;
