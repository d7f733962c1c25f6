//! Parsing and validating OpenAI completion and chat requests the way vLLM does.

use super::error::ApiError;
use crate::sim::tokenizer::{ChatMessage, VOCAB_SIZE, tokenize, tokenize_chat};
use serde::Deserialize;
use serde_json::Value;
use xxhash_rust::xxh64::Xxh64;

/// Which OpenAI endpoint a request came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `/v1/completions` (legacy text completions).
    Completions,
    /// `/v1/chat/completions`.
    Chat,
}

#[derive(Deserialize)]
struct RawStreamOptions {
    include_usage: Option<bool>,
    #[serde(default)]
    continuous_usage_stats: bool,
}

#[derive(Deserialize)]
struct RawMessage {
    #[serde(default)]
    role: String,
    #[serde(default)]
    content: Value,
}

#[derive(Deserialize)]
struct RawRequest {
    model: Option<String>,
    prompt: Option<Value>,
    messages: Option<Vec<RawMessage>>,
    max_tokens: Option<i64>,
    max_completion_tokens: Option<i64>,
    #[serde(default)]
    stream: bool,
    stream_options: Option<RawStreamOptions>,
    #[serde(default)]
    ignore_eos: bool,
    #[serde(default)]
    min_tokens: i64,
    n: Option<i64>,
    #[serde(default)]
    add_generation_prompt: Option<bool>,
}

/// A validated request, ready for the engine (every mode's: vLLM's, SGLang's, llama.cpp's).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Prepared {
    /// The endpoint it came to.
    pub endpoint: Endpoint,
    /// Prompt token ids (llama.cpp: empty for an empty completion prompt, answered at once).
    pub prompt: Vec<u32>,
    /// Most tokens to generate.
    pub max_tokens: u32,
    /// Tokens generated before the modelled EOS (equals `max_tokens` with `ignore_eos`).
    pub stop_after: u32,
    /// Stream the answer as SSE.
    pub stream: bool,
    /// Send a final usage chunk.
    pub include_usage: bool,
    /// Send usage on every chunk (vLLM: only together with `include_usage`).
    pub continuous_usage: bool,
    /// Seed of the output text, derived from the prompt.
    pub seed: u64,
}

/// Limits the replica enforces.
#[derive(Debug, Clone)]
pub(crate) struct Limits<'a> {
    /// Served model name.
    pub model: &'a str,
    /// Longest prompt + output, tokens.
    pub max_model_len: usize,
}

/// Parses the body of a completion or chat request and applies vLLM's validation.
pub(crate) fn prepare(body: &[u8], endpoint: Endpoint, limits: &Limits<'_>) -> Result<Prepared, ApiError> {
    let raw: RawRequest =
        serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("invalid request body: {e}"), None))?;
    if let Some(m) = raw.model.as_deref().filter(|m| *m != limits.model) {
        return Err(ApiError::not_found(format!("The model `{m}` does not exist.")));
    }
    if raw.n.is_some_and(|n| n != 1) {
        return Err(ApiError::bad_request("the simulator serves n=1 only".into(), Some("n")));
    }
    let prompt = match endpoint {
        Endpoint::Completions => completion_prompt(raw.prompt.as_ref())?,
        Endpoint::Chat => {
            tokenize_chat(&chat_messages(raw.messages.as_deref())?, raw.add_generation_prompt.unwrap_or(true))
        }
    };
    let requested = raw.max_completion_tokens.or(raw.max_tokens);
    let max_tokens = output_budget(requested, endpoint, prompt.len(), limits)?;
    let min_tokens = u32::try_from(raw.min_tokens.max(0)).unwrap_or(u32::MAX).min(max_tokens);
    let seed = prompt_seed(&prompt);
    let natural = natural_length(seed);
    let stop_after = if raw.ignore_eos { max_tokens } else { natural.min(max_tokens).max(min_tokens).max(1) };
    let include_usage = raw.stream_options.as_ref().is_some_and(|o| o.include_usage.unwrap_or(true));
    let continuous_usage = include_usage && raw.stream_options.as_ref().is_some_and(|o| o.continuous_usage_stats);
    Ok(Prepared { endpoint, prompt, max_tokens, stop_after, stream: raw.stream, include_usage, continuous_usage, seed })
}

/// Tokens a request generates before its modelled EOS, from its seed: 16 to 511 in every
/// mode (`ignore_eos` runs to the limit instead).
pub(crate) fn natural_length(seed: u64) -> u32 {
    16 + (seed % 496) as u32
}

/// A boolean field of a request body at JSON `pointer` (`/ignore_eos`,
/// `/stream_options/include_usage`); false when absent or not a boolean.
pub(crate) fn flag(body: &Value, pointer: &str) -> bool {
    body.pointer(pointer).and_then(Value::as_bool).unwrap_or(false)
}

/// A stable hash of the prompt's first 4096 token ids (seeds the modelled output length).
pub(crate) fn prompt_seed(tokens: &[u32]) -> u64 {
    let mut h = Xxh64::new(7);
    for t in tokens.iter().take(4096) {
        h.update(&t.to_le_bytes());
    }
    h.digest()
}

fn output_budget(
    requested: Option<i64>,
    endpoint: Endpoint,
    prompt_len: usize,
    limits: &Limits<'_>,
) -> Result<u32, ApiError> {
    let len = limits.max_model_len;
    let wanted = match (requested, endpoint) {
        (Some(m), _) if m < 1 => {
            return Err(ApiError::bad_request(format!("max_tokens must be at least 1, got {m}."), Some("max_tokens")));
        }
        (Some(m), _) => m as u64,
        (None, Endpoint::Completions) => 16,
        (None, Endpoint::Chat) => len.saturating_sub(prompt_len) as u64,
    };
    let total = prompt_len as u64 + wanted;
    if prompt_len >= len || total > len as u64 {
        return Err(ApiError::context_overflow(format!(
            "This model's maximum context length is {len} tokens. However, you requested {wanted} output tokens and your prompt contains at least {prompt_len} input tokens, for a total of at least {total} tokens. Please reduce the length of the input prompt or the number of requested output tokens."
        )));
    }
    Ok(u32::try_from(wanted).unwrap_or(u32::MAX))
}

fn completion_prompt(prompt: Option<&Value>) -> Result<Vec<u32>, ApiError> {
    match prompt {
        Some(Value::String(s)) if s.is_empty() => Err(ApiError::bad_request(
            "Either prompt or prompt_embeds must be provided and non-empty.".into(),
            Some("prompt"),
        )),
        Some(Value::String(s)) => Ok(tokenize(s)),
        Some(Value::Array(items)) if !items.is_empty() && items.iter().all(Value::is_u64) => {
            token_ids(items.iter().filter_map(Value::as_u64))
        }
        Some(Value::Array(items)) if items.is_empty() => {
            Err(ApiError::bad_request("You must pass at least one prompt".into(), None))
        }
        Some(Value::Array(items)) if items.len() == 1 => completion_prompt(items.first()),
        Some(Value::Array(_)) => {
            Err(ApiError::bad_request("the simulator serves one prompt per request".into(), Some("prompt")))
        }
        _ => Err(ApiError::bad_request("`prompt` must be a string or a list of token ids".into(), Some("prompt"))),
    }
}

/// A token-id prompt, refused as vLLM refuses one whose largest id is outside the vocabulary
/// (HTTP 400, docs/protocol.md §3.8).
fn token_ids(ids: impl Iterator<Item = u64>) -> Result<Vec<u32>, ApiError> {
    let ids: Vec<u64> = ids.collect();
    match ids.iter().copied().max() {
        Some(max) if max >= u64::from(VOCAB_SIZE) => {
            Err(ApiError::bad_request(format!("Token id {max} is out of vocabulary"), None))
        }
        _ => Ok(ids.into_iter().map(|t| t as u32).collect()),
    }
}

fn chat_messages(messages: Option<&[RawMessage]>) -> Result<Vec<ChatMessage>, ApiError> {
    let messages = messages
        .filter(|m| !m.is_empty())
        .ok_or_else(|| ApiError::bad_request("`messages` must be a non-empty list".into(), Some("messages")))?;
    Ok(messages.iter().map(|m| ChatMessage { role: m.role.clone(), content: message_text(&m.content) }).collect())
}

/// The text of a chat message's content: a string, or the `text` parts of a list.
pub(crate) fn message_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => {
            parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("")
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits<'static> = Limits { model: "m", max_model_len: 100 };

    fn prep(body: &str, ep: Endpoint) -> Result<Prepared, ApiError> {
        prepare(body.as_bytes(), ep, &LIMITS)
    }

    #[test]
    fn completions_default_to_16_tokens() {
        let p = prep(r#"{"prompt":"hello world"}"#, Endpoint::Completions).unwrap();
        assert_eq!((p.prompt.len(), p.max_tokens), (2, 16));
        assert!(!p.include_usage);
    }

    #[test]
    fn new_field_wins_and_ignore_eos_runs_to_the_end() {
        let p = prep(r#"{"messages":[{"role":"user","content":"hi"}],"max_tokens":5,"max_completion_tokens":9,"ignore_eos":true,"stream_options":{"continuous_usage_stats":true}}"#, Endpoint::Chat).unwrap();
        assert_eq!((p.max_tokens, p.stop_after), (9, 9));
        assert!(p.include_usage && p.continuous_usage);
    }

    #[test]
    fn continuous_usage_needs_include_usage() {
        let p = prep(
            r#"{"prompt":"x","stream_options":{"include_usage":false,"continuous_usage_stats":true}}"#,
            Endpoint::Completions,
        )
        .unwrap();
        assert!(!p.continuous_usage);
    }

    #[test]
    fn overflow_is_a_400_naming_the_context_length() {
        let e = prep(r#"{"prompt":"x","max_tokens":100}"#, Endpoint::Completions).unwrap_err();
        assert_eq!(e.status.as_u16(), 400);
        assert!(e.message.contains("maximum context length is 100 tokens"));
    }

    #[test]
    fn min_tokens_bounds_the_natural_stop() {
        let p = prep(r#"{"prompt":"x","max_tokens":80,"min_tokens":70}"#, Endpoint::Completions).unwrap();
        assert!(p.stop_after >= 70 && p.stop_after <= 80);
    }

    #[test]
    fn token_id_prompts_and_bad_input() {
        assert_eq!(prep(r#"{"prompt":[1,2,3]}"#, Endpoint::Completions).unwrap().prompt, vec![1, 2, 3]);
        let oov = prep(r#"{"prompt":[1,150002,3]}"#, Endpoint::Completions).unwrap_err();
        assert_eq!((oov.status.as_u16(), oov.kind, oov.param), (400, "BadRequestError", None));
        assert_eq!(oov.message, "Token id 150002 is out of vocabulary");
        let huge = prep(r#"{"prompt":[4294967297]}"#, Endpoint::Completions).unwrap_err();
        assert_eq!(huge.message, "Token id 4294967297 is out of vocabulary", "no silent u32 wrap");
        assert!(prep(r#"{"prompt":[150001]}"#, Endpoint::Completions).is_ok(), "the last special id is in");
        assert_eq!(
            prep(r#"{"prompt":[]}"#, Endpoint::Completions).unwrap_err().message,
            "You must pass at least one prompt"
        );
        // An empty text is refused as a real vLLM refuses it, not queued for ever.
        let empty = prep(r#"{"prompt":""}"#, Endpoint::Completions).unwrap_err();
        assert_eq!((empty.status.as_u16(), empty.param), (400, Some("prompt")));
        assert_eq!(empty.message, "Either prompt or prompt_embeds must be provided and non-empty.");
        assert_eq!(prep(r#"{"prompt":"x","model":"other"}"#, Endpoint::Completions).unwrap_err().status.as_u16(), 404);
        assert_eq!(prep("{not json", Endpoint::Completions).unwrap_err().status.as_u16(), 400);
        assert_eq!(prep(r#"{"messages":[]}"#, Endpoint::Chat).unwrap_err().status.as_u16(), 400);
    }
}
