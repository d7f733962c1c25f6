//! Parsing OpenAI completion and chat requests the way llama-server does: the `model` field
//! is not checked, `n` is ignored, `max_tokens` defaults to "until the slot is full", a
//! prompt that does not fit its slot is refused, and a body that is not JSON is a 500.

use super::error::LlamaError;
use crate::sim::api::body::{Endpoint, Prepared, flag, message_text, natural_length, prompt_seed};
use crate::sim::tokenizer::{ChatMessage, VOCAB_SIZE, tokenize, tokenize_chat};
use serde_json::Value;

/// A llama.cpp request is the shared [`Prepared`]: `max_tokens` cut to what is left of the
/// slot, `include_usage` from `stream_options` (chat streams then end with a usage chunk),
/// never continuous usage (llama-server has none).
pub(super) type LlamaRequest = Prepared;

/// Parses a completion or chat body for a slot of `slot_ctx` tokens.
pub(super) fn parse(body: &[u8], endpoint: Endpoint, slot_ctx: usize) -> Result<LlamaRequest, LlamaError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| LlamaError::server(format!("[json.exception.parse_error.101] parse error: {e}")))?;
    let prompt = match endpoint {
        Endpoint::Completions => completion_prompt(v.get("prompt"))?,
        Endpoint::Chat => chat_prompt(&v)?,
    };
    if prompt.len() >= slot_ctx {
        // llama-server refuses a prompt that leaves its slot no room for one token.
        return Err(LlamaError::exceed_context(prompt.len(), slot_ctx));
    }
    let room = u32::try_from(slot_ctx - prompt.len()).unwrap_or(u32::MAX);
    let max_tokens = requested_tokens(&v).map_or(room, |m| m.min(room));
    let seed = prompt_seed(&prompt);
    let stop_after = if flag(&v, "/ignore_eos") { max_tokens } else { natural_length(seed).min(max_tokens) };
    let include_usage = flag(&v, "/stream_options/include_usage");
    let stream = flag(&v, "/stream");
    Ok(Prepared { endpoint, prompt, max_tokens, stop_after, stream, include_usage, continuous_usage: false, seed })
}

/// The output cap a request asks for (`max_completion_tokens`, `max_tokens` or `n_predict`);
/// None for none or a negative one (llama.cpp's "infinity"). 0 still generates one token, as
/// llama-server does.
fn requested_tokens(v: &Value) -> Option<u32> {
    let m = ["max_completion_tokens", "max_tokens", "n_predict"].iter().find_map(|k| v.get(*k)?.as_i64())?;
    (m >= 0).then(|| u32::try_from(m).unwrap_or(u32::MAX).max(1))
}

fn completion_prompt(prompt: Option<&Value>) -> Result<Vec<u32>, LlamaError> {
    match prompt {
        None => Err(LlamaError::invalid_request("[json.exception.out_of_range.403] key 'prompt' not found")),
        Some(Value::String(s)) => Ok(tokenize(s)),
        Some(Value::Array(items)) if items.iter().all(Value::is_number) => token_ids(items),
        Some(Value::Array(items)) if items.len() == 1 => completion_prompt(items.first()),
        Some(Value::Array(_)) => Err(LlamaError::invalid_request("the simulator serves one prompt per request")),
        Some(_) => {
            Err(LlamaError::invalid_request("\"prompt\" must be a string, a list of tokens or a list of prompts"))
        }
    }
}

/// A token-id prompt; an id outside the vocabulary is refused as llama-server refuses it.
fn token_ids(items: &[Value]) -> Result<Vec<u32>, LlamaError> {
    items
        .iter()
        .map(|t| t.as_u64().filter(|id| *id < u64::from(VOCAB_SIZE)).map(|id| id as u32))
        .collect::<Option<Vec<u32>>>()
        .ok_or_else(|| LlamaError::invalid_request("Prompt contains invalid tokens"))
}

fn chat_prompt(v: &Value) -> Result<Vec<u32>, LlamaError> {
    let messages = match v.get("messages") {
        None => return Err(LlamaError::invalid_request("'messages' is required")),
        Some(Value::Array(m)) => m,
        Some(_) => return Err(LlamaError::invalid_request("Expected 'messages' to be an array")),
    };
    let messages: Vec<ChatMessage> = messages
        .iter()
        .map(|m| ChatMessage {
            role: m.get("role").and_then(Value::as_str).unwrap_or_default().to_string(),
            content: m.get("content").map(message_text).unwrap_or_default(),
        })
        .collect();
    Ok(tokenize_chat(&messages, v.get("add_generation_prompt").and_then(Value::as_bool).unwrap_or(true)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(body: &str, ep: Endpoint, ctx: usize) -> Result<LlamaRequest, LlamaError> {
        parse(body.as_bytes(), ep, ctx)
    }

    #[test]
    fn max_tokens_is_cut_to_the_slot_and_defaults_to_it() {
        let r = parse_str(r#"{"prompt":"a b c d","max_tokens":500,"ignore_eos":true}"#, Endpoint::Completions, 10);
        let r = r.unwrap();
        assert_eq!((r.prompt.len(), r.max_tokens, r.stop_after), (4, 6, 6));
        let r = parse_str(r#"{"prompt":"a","max_tokens":-1,"ignore_eos":true}"#, Endpoint::Completions, 100).unwrap();
        assert_eq!(r.max_tokens, 99, "-1 is infinity: the rest of the slot");
        let r = parse_str(r#"{"prompt":"a","max_tokens":0}"#, Endpoint::Completions, 100).unwrap();
        assert_eq!(r.max_tokens, 1);
        let r = parse_str(r#"{"prompt":"a","model":"any","n":3}"#, Endpoint::Completions, 4096).unwrap();
        assert!(r.stop_after >= 16 && r.stop_after < 512 && !r.stream && !r.include_usage);
    }

    #[test]
    fn a_prompt_that_fills_its_slot_is_refused() {
        let e = parse_str(r#"{"prompt":[1,2,3,4]}"#, Endpoint::Completions, 4).unwrap_err();
        assert_eq!((e.status.as_u16(), e.kind, e.context), (400, "exceed_context_size_error", Some((4, 4))));
        assert!(parse_str(r#"{"prompt":[1,2,3]}"#, Endpoint::Completions, 4).is_ok());
    }

    #[test]
    fn bad_bodies_get_llama_cpp_answers() {
        let e = parse_str("{not json", Endpoint::Completions, 100).unwrap_err();
        assert_eq!((e.status.as_u16(), e.kind), (500, "server_error"));
        let e = parse_str(r#"{"max_tokens":2}"#, Endpoint::Completions, 100).unwrap_err();
        assert_eq!(e.message, "[json.exception.out_of_range.403] key 'prompt' not found");
        let e = parse_str(r#"{"max_tokens":2}"#, Endpoint::Chat, 100).unwrap_err();
        assert_eq!(e.message, "'messages' is required");
        let e = parse_str(r#"{"messages":"x"}"#, Endpoint::Chat, 100).unwrap_err();
        assert_eq!(e.message, "Expected 'messages' to be an array");
        let e = parse_str(r#"{"prompt":[1,999999999]}"#, Endpoint::Completions, 100).unwrap_err();
        assert_eq!(e.message, "Prompt contains invalid tokens");
        assert!(parse_str(r#"{"prompt":""}"#, Endpoint::Completions, 100).unwrap().prompt.is_empty());
    }

    #[test]
    fn streams_want_usage_only_when_asked() {
        let body = r#"{"messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}"#;
        let r = parse_str(body, Endpoint::Chat, 100).unwrap();
        assert!(r.stream && r.include_usage);
    }
}
