//! vLLM's exact chat-completion stream as the bench server can write it (`--chunk-shape vllm`):
//! the events, fields, field order and value lengths vLLM's OpenAI server sends for a streamed
//! chat request with `stream_options: {include_usage, continuous_usage_stats}`
//! (/work/shared/docs/PROTOCOL.md §3, "SSE framing" and "`stream_options`"):
//!
//! - a role chunk first: `"delta":{"role":"assistant","content":""}`, usage with 0 completion
//!   tokens;
//! - one chunk per token, `"delta":{"content":" tok"},"logprobs":null,"finish_reason":null` and
//!   `usage` (`prompt_tokens`, `total_tokens`, `completion_tokens`, in vLLM's order);
//! - the last token's chunk has `"finish_reason":"length","stop_reason":null`;
//! - then `"choices":[]` with the final usage, and `data: [DONE]`.
//!
//! Every chunk has the same `id` (`chatcmpl-` and 32 hex digits, as vLLM's uuid) and `created`
//! (unix seconds). Unlike the bench's own shape (src/bench/template.rs) no event carries a send
//! time, so a paced run against this shape measures no lag.

use super::template::Template;
use bytes::Bytes;

/// Which chunk shape the bench server writes on `/v1/chat/completions`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChunkShape {
    /// The bench's own: one chunk per token, no role chunk, every event stamped with the
    /// server's send time (`bench_sent_unix_ns`), ids `chatcmpl-bench`, `created` 0.
    #[default]
    Bench,
    /// vLLM's exact chunks: a role chunk, uuid-length ids, `created` in unix seconds,
    /// `stop_reason` on the finish chunk, no send time.
    Vllm,
}

impl ChunkShape {
    /// The flag's spelling: `bench` or `vllm`.
    pub fn name(self) -> &'static str {
        match self {
            ChunkShape::Bench => "bench",
            ChunkShape::Vllm => "vllm",
        }
    }
}

fn usage(prompt: u64, done: u64) -> String {
    format!("\"usage\":{{\"prompt_tokens\":{prompt},\"total_tokens\":{},\"completion_tokens\":{done}}}", prompt + done)
}

/// A vLLM-style chat request id from `seed`: `chatcmpl-` and 32 hex digits.
pub(crate) fn request_id(seed: u64) -> String {
    let a = xxhash_rust::xxh64::xxh64(&seed.to_le_bytes(), 1);
    let b = xxhash_rust::xxh64::xxh64(&seed.to_le_bytes(), 2);
    format!("chatcmpl-{a:016x}{b:016x}")
}

/// The events of a `tokens`-token vLLM chat answer to a `prompt`-token request for `model`,
/// with request id `id` and `created` (unix seconds).
pub(crate) fn vllm_chat(model: &str, prompt: u64, tokens: u64, id: &str, created: u64) -> Template {
    let head = format!(
        "data: {{\"id\":\"{id}\",\"object\":\"chat.completion.chunk\",\"created\":{created},\"model\":\"{model}\","
    );
    let mut out = String::with_capacity((tokens as usize + 3) * (head.len() + 180));
    let mut ends = Vec::with_capacity(tokens as usize + 3);
    let mut push = |out: &mut String, body: &str| {
        out.push_str(&head);
        out.push_str(body);
        out.push_str("}\n\n");
        ends.push(out.len());
    };
    let role =
        "{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}";
    push(&mut out, &format!("\"choices\":[{role}],{}", usage(prompt, 0)));
    for k in 1..=tokens {
        let finish = if k == tokens { "\"length\",\"stop_reason\":null" } else { "null" };
        let choice =
            format!("{{\"index\":0,\"delta\":{{\"content\":\" tok\"}},\"logprobs\":null,\"finish_reason\":{finish}}}");
        push(&mut out, &format!("\"choices\":[{choice}],{}", usage(prompt, k)));
    }
    push(&mut out, &format!("\"choices\":[],{}", usage(prompt, tokens)));
    out.push_str("data: [DONE]\n\n");
    ends.push(out.len());
    Template { bytes: Bytes::from(out), ends, stamps: Vec::new(), lead: 1 }
}

#[cfg(test)]
#[path = "shape_tests.rs"]
mod tests;
