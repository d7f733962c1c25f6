//! Formatting of OpenAI streaming chunks and non-streaming bodies, as vLLM writes them.

use super::body::Endpoint;
use crate::sim::tokenizer::output_word;
use bytes::Bytes;
use std::fmt::Write;

/// The constant parts of every chunk of one response.
#[derive(Debug, Clone)]
pub(crate) struct ChunkFormat {
    /// `chatcmpl-…` or `cmpl-…`.
    pub id: String,
    /// Unix seconds.
    pub created: u64,
    /// Model name, already JSON-escaped with quotes.
    pub model_json: String,
    /// Chat or completions.
    pub endpoint: Endpoint,
    /// Prompt tokens, for usage.
    pub prompt_tokens: u64,
    /// Usage on every chunk.
    pub continuous_usage: bool,
    /// `"usage": null` on intermediate chunks (vLLM does this when usage is requested).
    pub include_usage: bool,
    /// Usage carries `prompt_tokens_details.cached_tokens` (vLLM only with
    /// `--enable-prompt-tokens-details`).
    pub prompt_tokens_details: bool,
    /// Seed of the output words.
    pub seed: u64,
}

impl ChunkFormat {
    fn object(&self) -> &'static str {
        match self.endpoint {
            Endpoint::Chat => "chat.completion.chunk",
            Endpoint::Completions => "text_completion",
        }
    }

    fn open(&self, out: &mut String) {
        let _ = write!(
            out,
            "data: {{\"id\":\"{}\",\"object\":\"{}\",\"created\":{},\"model\":{},\"choices\":[",
            self.id,
            self.object(),
            self.created,
            self.model_json
        );
    }

    fn usage(&self, out: &mut String, completion: u64) {
        let _ = write!(
            out,
            "\"usage\":{{\"prompt_tokens\":{},\"total_tokens\":{},\"completion_tokens\":{}}}",
            self.prompt_tokens,
            self.prompt_tokens + completion,
            completion
        );
    }

    fn close(&self, out: &mut String, completion: u64) {
        out.push(']');
        if self.continuous_usage {
            out.push(',');
            self.usage(out, completion);
        } else if self.include_usage {
            out.push_str(",\"usage\":null");
        }
        out.push_str("}\n\n");
    }

    /// vLLM's first chat chunk: the assistant role with empty content.
    pub(crate) fn role_chunk(&self) -> Bytes {
        let mut out = String::with_capacity(256);
        self.open(&mut out);
        out.push_str("{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}");
        self.close(&mut out, 0);
        Bytes::from(out)
    }

    /// A chunk carrying output tokens `from..to` (indices into the output), optionally the
    /// last one with its finish reason.
    pub(crate) fn token_chunk(&self, from: u64, to: u64, finish: Option<&str>) -> Bytes {
        let mut out = String::with_capacity(256 + 8 * (to - from) as usize);
        self.open(&mut out);
        let text: String = (from..to).map(|i| output_word(self.seed, i)).collect();
        let fin = finish.map_or_else(|| "null".to_string(), |f| format!("\"{f}\""));
        match self.endpoint {
            Endpoint::Chat => {
                let _ = write!(
                    out,
                    "{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"logprobs\":null,\"finish_reason\":{fin}"
                );
            }
            Endpoint::Completions => {
                let _ = write!(out, "{{\"index\":0,\"text\":\"{text}\",\"logprobs\":null,\"finish_reason\":{fin}");
            }
        }
        if finish.is_some() {
            out.push_str(",\"stop_reason\":null");
        }
        out.push('}');
        self.close(&mut out, to);
        Bytes::from(out)
    }

    /// The final usage-only chunk (`choices: []`), with the cached-token detail.
    pub(crate) fn usage_chunk(&self, completion: u64, cached: u64) -> Bytes {
        let mut out = String::with_capacity(256);
        self.open(&mut out);
        out.push_str("],");
        let details = match self.prompt_tokens_details {
            true => format!(",\"prompt_tokens_details\":{{\"cached_tokens\":{cached}}}"),
            false => String::new(),
        };
        let _ = write!(
            out,
            "\"usage\":{{\"prompt_tokens\":{},\"total_tokens\":{},\"completion_tokens\":{}{details}}}}}\n\n",
            self.prompt_tokens,
            self.prompt_tokens + completion,
            completion
        );
        Bytes::from(out)
    }

    /// An error event after streaming started, as vLLM sends it.
    pub(crate) fn error_event(message: &str, code: u16) -> Bytes {
        let body = serde_json::json!({"error": {"message": message, "type": "InternalServerError", "param": null, "code": code}});
        Bytes::from(format!("data: {body}\n\n"))
    }

    /// The malformed chunk fault: a cut-off JSON object.
    pub(crate) fn malformed(&self) -> Bytes {
        Bytes::from(format!(
            "data: {{\"id\":\"{}\",\"object\":\"{}\",\"choices\":[{{\"delta\":{{\"content\":\"bro\n\n",
            self.id,
            self.object()
        ))
    }

    /// The whole non-streaming response body.
    pub(crate) fn full_body(&self, generated: u64, finish: &str, cached: u64) -> serde_json::Value {
        let text: String = (0..generated).map(|i| output_word(self.seed, i)).collect();
        let model: serde_json::Value = serde_json::from_str(&self.model_json).unwrap_or_default();
        let choice = match self.endpoint {
            Endpoint::Chat => {
                serde_json::json!({"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": null, "finish_reason": finish, "stop_reason": null})
            }
            Endpoint::Completions => {
                serde_json::json!({"index": 0, "text": text, "logprobs": null, "finish_reason": finish, "stop_reason": null})
            }
        };
        let object = match self.endpoint {
            Endpoint::Chat => "chat.completion",
            Endpoint::Completions => "text_completion",
        };
        let mut usage = serde_json::json!({"prompt_tokens": self.prompt_tokens, "total_tokens": self.prompt_tokens + generated, "completion_tokens": generated});
        if self.prompt_tokens_details {
            usage["prompt_tokens_details"] = serde_json::json!({"cached_tokens": cached});
        }
        serde_json::json!({
            "id": self.id, "object": object, "created": self.created, "model": model, "choices": [choice],
            "usage": usage
        })
    }
}

/// The end-of-stream marker.
pub(crate) const DONE: &[u8] = b"data: [DONE]\n\n";

/// Helpers of the chunk and stream unit tests of every mode.
#[cfg(test)]
pub(crate) mod test_support {
    use super::{Bytes, ChunkFormat, Endpoint};

    /// A format with id `x`, created 1, model `m` and `include_usage` on.
    pub(crate) fn test_format(
        endpoint: Endpoint,
        prompt_tokens: u64,
        continuous_usage: bool,
        seed: u64,
    ) -> ChunkFormat {
        ChunkFormat {
            id: "x".into(),
            created: 1,
            model_json: "\"m\"".into(),
            endpoint,
            prompt_tokens,
            continuous_usage,
            include_usage: true,
            prompt_tokens_details: true,
            seed,
        }
    }

    /// The JSON payload of one `data: …` chunk.
    pub(crate) fn json_of(chunk: &Bytes) -> serde_json::Value {
        let s = std::str::from_utf8(chunk).unwrap();
        serde_json::from_str(s.strip_prefix("data: ").unwrap().trim_end()).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::json_of;
    use super::*;

    fn fmt(endpoint: Endpoint, continuous: bool) -> ChunkFormat {
        test_support::test_format(endpoint, 10, continuous, 3)
    }

    #[test]
    fn chunks_are_valid_json_with_usage() {
        let f = fmt(Endpoint::Chat, true);
        let v = json_of(&f.token_chunk(0, 2, None));
        assert_eq!(v["usage"]["completion_tokens"], 2);
        assert_eq!(v["choices"][0]["finish_reason"], serde_json::Value::Null);
        let v = json_of(&f.token_chunk(2, 3, Some("length")));
        assert_eq!(v["choices"][0]["finish_reason"], "length");
        assert_eq!(json_of(&f.role_chunk())["choices"][0]["delta"]["role"], "assistant");
        let u = json_of(&f.usage_chunk(3, 4));
        assert_eq!(u["choices"].as_array().unwrap().len(), 0);
        assert_eq!(u["usage"]["total_tokens"], 13);
    }

    #[test]
    fn completions_chunks_carry_text_and_null_usage() {
        let f = fmt(Endpoint::Completions, false);
        let v = json_of(&f.token_chunk(0, 1, None));
        assert!(v["choices"][0]["text"].as_str().unwrap().starts_with(' '));
        assert!(v["usage"].is_null());
        assert!(serde_json::from_slice::<serde_json::Value>(&f.malformed()[6..]).is_err());
    }
}
