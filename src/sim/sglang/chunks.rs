//! SGLang's streamed chunks (`serving_chat.py`, `serving_completions.py`, docs/protocol.md §2.5):
//! chat sends the finish reason in a chunk of its own with an empty delta and no usage;
//! completions put it on the last text chunk; `include_usage` adds a `choices: []` chunk.

use crate::sim::api::body::Endpoint;
use crate::sim::api::chunks::ChunkFormat;
use crate::sim::tokenizer::{VOCAB_SIZE, output_word};
use bytes::Bytes;
use std::fmt::Write;

/// The token id SGLang names as `matched_stop` when the modelled EOS ends a request.
pub(crate) const EOS_ID: u32 = VOCAB_SIZE - 1;

fn open(f: &ChunkFormat, out: &mut String) {
    let object = match f.endpoint {
        Endpoint::Chat => "chat.completion.chunk",
        Endpoint::Completions => "text_completion",
    };
    let _ = write!(
        out,
        "data: {{\"id\":\"{}\",\"object\":\"{object}\",\"created\":{},\"model\":{},\"choices\":[",
        f.id, f.created, f.model_json
    );
}

/// `UsageInfo` with `completion` tokens so far; `prompt_tokens_details` only when `full`
/// (pydantic's plain dump; `exclude_none` drops it).
fn usage(f: &ChunkFormat, out: &mut String, completion: u64, full: bool) {
    let _ = write!(
        out,
        "{{\"prompt_tokens\":{},\"total_tokens\":{},\"completion_tokens\":{completion}",
        f.prompt_tokens,
        f.prompt_tokens + completion
    );
    out.push_str(if full { ",\"prompt_tokens_details\":null}" } else { "}" });
}

fn matched(finish: Option<&str>) -> String {
    match finish {
        Some("stop") => EOS_ID.to_string(),
        _ => "null".to_string(),
    }
}

fn text(f: &ChunkFormat, from: u64, to: u64) -> String {
    (from..to).map(|i| output_word(f.seed, i)).collect()
}

/// The first chat chunk: the assistant role with empty content.
pub(crate) fn role(f: &ChunkFormat) -> Bytes {
    let mut out = String::with_capacity(256);
    open(f, &mut out);
    out.push_str("{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null,\"matched_stop\":null}]}\n\n");
    Bytes::from(out)
}

/// Output tokens `from..to`. Chat: a content chunk (`finish` must be `None`); completions: a
/// text chunk that carries `finish` on the last one. Usage (cumulative) rides along with
/// `continuous_usage_stats`; a completions chunk otherwise says `"usage":null`.
pub(crate) fn tokens(f: &ChunkFormat, from: u64, to: u64, finish: Option<&str>) -> Bytes {
    let mut out = String::with_capacity(256 + 8 * (to - from) as usize);
    open(f, &mut out);
    let text = text(f, from, to);
    let fin = finish.map_or_else(|| "null".to_string(), |r| format!("\"{r}\""));
    match f.endpoint {
        Endpoint::Chat => {
            let _ = write!(
                out,
                "{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"logprobs\":null,\"finish_reason\":{fin},\"matched_stop\":{}}}]",
                matched(finish)
            );
        }
        Endpoint::Completions => {
            let _ = write!(
                out,
                "{{\"index\":0,\"text\":\"{text}\",\"logprobs\":null,\"finish_reason\":{fin},\"matched_stop\":{}}}]",
                matched(finish)
            );
        }
    }
    if f.continuous_usage {
        out.push_str(",\"usage\":");
        usage(f, &mut out, to, true);
    } else if f.endpoint == Endpoint::Completions {
        out.push_str(",\"usage\":null");
    }
    out.push_str("}\n\n");
    Bytes::from(out)
}

/// Chat's finish chunk: empty delta, the reason, no usage even with continuous usage.
pub(crate) fn chat_finish(f: &ChunkFormat, reason: &str) -> Bytes {
    let mut out = String::with_capacity(256);
    open(f, &mut out);
    let _ = write!(
        out,
        "{{\"index\":0,\"delta\":{{}},\"logprobs\":null,\"finish_reason\":\"{reason}\",\"matched_stop\":{}}}]}}\n\n",
        matched(Some(reason))
    );
    Bytes::from(out)
}

/// The `include_usage` chunk: `choices: []` and the request's totals.
pub(crate) fn usage_chunk(f: &ChunkFormat, completion: u64) -> Bytes {
    let mut out = String::with_capacity(256);
    open(f, &mut out);
    out.push_str("],\"usage\":");
    usage(f, &mut out, completion, f.endpoint == Endpoint::Chat);
    out.push_str("}\n\n");
    Bytes::from(out)
}

/// An error after the stream started: `data: {"error": {…}}` (`create_streaming_error_response`).
pub(crate) fn error_event(message: &str, code: u16) -> Bytes {
    let body = serde_json::json!({"error": {"object": "error", "message": message, "type": "InternalServerError", "param": null, "code": code}});
    Bytes::from(format!("data: {body}\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::api::chunks::test_support::{json_of as json, test_format};

    fn fmt(endpoint: Endpoint, continuous: bool) -> ChunkFormat {
        test_format(endpoint, 10, continuous, 3)
    }

    #[test]
    fn chat_finish_rides_alone_without_usage() {
        let f = fmt(Endpoint::Chat, true);
        let c = json(&tokens(&f, 0, 3, None));
        assert_eq!(c["usage"]["completion_tokens"], 3, "cumulative usage on a content chunk");
        let fin = json(&chat_finish(&f, "stop"));
        assert_eq!(fin["choices"][0]["finish_reason"], "stop");
        assert_eq!(fin["choices"][0]["delta"], serde_json::json!({}));
        assert_eq!(fin["choices"][0]["matched_stop"], EOS_ID);
        assert!(fin.get("usage").is_none());
        let u = json(&usage_chunk(&f, 3));
        assert_eq!((u["choices"].as_array().unwrap().len(), u["usage"]["total_tokens"].as_u64()), (0, Some(13)));
        assert_eq!(json(&role(&f))["choices"][0]["delta"]["role"], "assistant");
    }

    #[test]
    fn completions_finish_rides_on_the_last_text_chunk() {
        let f = fmt(Endpoint::Completions, false);
        let c = json(&tokens(&f, 0, 2, Some("length")));
        assert_eq!(c["choices"][0]["finish_reason"], "length");
        assert!(c["usage"].is_null() && c.get("usage").is_some());
        let u = json(&usage_chunk(&f, 2));
        assert!(u["usage"].get("prompt_tokens_details").is_none(), "exclude_none");
    }
}
