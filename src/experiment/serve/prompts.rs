//! The serve experiment's prompts: `input_len` random token ids per request (or a dataset's
//! text, [`text_completion_body`]), sent as the
//! completions endpoint's token-id prompt (`"prompt": [ids]`), so the server counts exactly
//! `input_len` prompt tokens whatever its tokenizer. The ids stay in a range the server was
//! found to accept (`vocab.rs`), above the low ids where tokenizers keep their special tokens.

use crate::load::request::json_escape;
use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::fmt::Write;
use std::ops::Range;

/// The prompt of request `index`: `input_len` ids from `range`, seeded by `seed`. Its first
/// two ids spell out `index`, so no two requests of a cell share a cached prefix block.
pub(crate) fn prompt_ids(input_len: u64, seed: u64, index: u32, range: Range<u32>) -> Vec<u32> {
    let span = (range.end - range.start).max(1);
    let mut rng = StdRng::seed_from_u64(seed ^ u64::from(index).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut ids: Vec<u32> = (0..input_len).map(|_| rng.random_range(range.clone())).collect();
    for (slot, digit) in ids.iter_mut().zip([index % span, index / span % span]) {
        *slot = range.start + digit;
    }
    ids
}

/// The streaming `/v1/completions` body of one request: the token-id prompt, `max_tokens`
/// generated exactly (`ignore_eos`), usage on every chunk and at the end.
pub(crate) fn completion_body(model: &str, ids: &[u32], max_tokens: u64) -> Bytes {
    let mut out = String::with_capacity(ids.len() * 6 + 256);
    let _ = write!(out, "{{\"model\":\"{}\",\"prompt\":[", json_escape(model));
    for (i, id) in ids.iter().enumerate() {
        let sep = if i == 0 { "" } else { "," };
        let _ = write!(out, "{sep}{id}");
    }
    let _ = write!(
        out,
        "],\"max_tokens\":{max_tokens},\"ignore_eos\":true,\"stream\":true,\"stream_options\":{{\"include_usage\":true,\"continuous_usage_stats\":true}}}}"
    );
    Bytes::from(out)
}

/// The streaming `/v1/completions` body of a dataset request: its text prompt, as vLLM's
/// `openai` backend sends one, with the same `max_tokens`, `ignore_eos` and usage options.
pub(crate) fn text_completion_body(model: &str, text: &str, max_tokens: u64) -> Bytes {
    let body = serde_json::json!({
        "model": model,
        "prompt": text,
        "max_tokens": max_tokens,
        "ignore_eos": true,
        "stream": true,
        "stream_options": {"include_usage": true, "continuous_usage_stats": true},
    });
    Bytes::from(body.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_have_the_length_range_and_seed_asked_for_and_differ_per_request() {
        let r = 256..4096;
        let a = prompt_ids(300, 42, 0, r.clone());
        assert_eq!(a.len(), 300);
        assert!(a.iter().all(|id| r.contains(id)));
        assert_eq!(a, prompt_ids(300, 42, 0, r.clone()), "seeded");
        assert_ne!(a, prompt_ids(300, 43, 0, r.clone()));
        let firsts: std::collections::BTreeSet<Vec<u32>> =
            (0..5000).map(|i| prompt_ids(16, 42, i, r.clone())[..2].to_vec()).collect();
        assert_eq!(firsts.len(), 5000, "no two requests share their first ids");
        assert_eq!(prompt_ids(1, 42, 3, r).len(), 1);
    }

    #[test]
    fn the_body_is_a_streaming_token_id_completion() {
        let v: serde_json::Value = serde_json::from_slice(&completion_body("m\"1", &[5, 6, 7], 9)).unwrap();
        assert_eq!(v["model"], "m\"1");
        assert_eq!(v["prompt"], serde_json::json!([5, 6, 7]));
        assert_eq!((v["max_tokens"].as_u64(), v["ignore_eos"].as_bool()), (Some(9), Some(true)));
        assert_eq!(v["stream_options"]["include_usage"], true);
        let v: serde_json::Value = serde_json::from_slice(&text_completion_body("m", "say \"hi\"\n", 5)).unwrap();
        assert_eq!((v["prompt"].as_str(), v["max_tokens"].as_u64()), (Some("say \"hi\"\n"), Some(5)));
        assert_eq!((v["ignore_eos"].as_bool(), v["stream"].as_bool()), (Some(true), Some(true)));
    }
}
