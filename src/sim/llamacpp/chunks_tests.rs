//! The chunks against the captures of a real llama-server: the same keys in the same order.

use super::*;

const COMPLETIONS: &str = include_str!("../../../tests/fixtures/llamacpp_7e4c0a9/completions_stream.sse");
const CHAT: &str = include_str!("../../../tests/fixtures/llamacpp_7e4c0a9/chat_stream.sse");

fn fmt(endpoint: Endpoint, include_usage: bool) -> LlamaFormat {
    LlamaFormat {
        id: "chatcmpl-0123456789abcdefghijABCDEFGHIJKL".into(),
        created: 1_796_172_053,
        model_json: "\"tiny-llama\"".into(),
        endpoint,
        prompt_tokens: 13,
        include_usage,
        seed: 7,
    }
}

/// Every object key of a JSON text, in order of appearance (values here never hold `":`).
fn keys(json: &str) -> Vec<&str> {
    json.split("\":").filter_map(|left| left.rsplit('"').next()).take(json.matches("\":").count()).collect()
}

/// The data of each event of an SSE text.
fn events(sse: &str) -> Vec<&str> {
    sse.split("\n\n").filter_map(|e| e.trim().strip_prefix("data: ")).collect()
}

fn ours(chunks: &[Bytes]) -> String {
    chunks.iter().map(|c| std::str::from_utf8(c).unwrap()).collect::<String>() + std::str::from_utf8(DONE).unwrap()
}

fn same_shape(captured: &str, ours: &str) {
    let (a, b) = (events(captured), events(ours));
    assert_eq!(a.len(), b.len(), "{ours}");
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(keys(x), keys(y), "\ncaptured {x}\nours     {y}");
        if *x != "[DONE]" {
            let _: serde_json::Value = serde_json::from_str(y).unwrap_or_else(|_| panic!("{y} is not JSON"));
        }
    }
}

fn timings() -> Timings {
    Timings { cache_n: 12, prompt_n: 1, prompt_ms: 0.918, predicted_n: 2, predicted_ms: 0.617 }
}

#[test]
fn a_completions_stream_has_the_captured_shape() {
    let f = fmt(Endpoint::Completions, true);
    let mut chunks: Vec<Bytes> = (0..3).map(|i| f.token_chunk(i)).collect();
    chunks.extend(f.finish_chunks(3, "length", &timings()));
    same_shape(COMPLETIONS, &ours(&chunks));
}

#[test]
fn a_chat_stream_has_the_captured_shape() {
    let f = fmt(Endpoint::Chat, true);
    let mut chunks = vec![f.role_chunk(), f.token_chunk(0), f.token_chunk(1)];
    chunks.extend(f.finish_chunks(2, "length", &timings()));
    same_shape(CHAT, &ours(&chunks));
    let usage: serde_json::Value = serde_json::from_str(events(&ours(&chunks))[4]).unwrap();
    assert_eq!(usage["usage"]["total_tokens"], 15);
    assert_eq!(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 12);
    assert_eq!(usage["timings"]["prompt_per_second"].as_f64().unwrap().round(), 1089.0);
}

#[test]
fn without_include_usage_chat_puts_timings_on_the_finish_chunk_and_completions_keep_usage() {
    let chat = fmt(Endpoint::Chat, false).finish_chunks(2, "stop", &timings());
    let v: serde_json::Value = serde_json::from_slice(&chat[0][6..]).unwrap();
    assert_eq!((chat.len(), v["timings"]["predicted_n"].as_u64(), v.get("usage")), (1, Some(2), None));
    let done = fmt(Endpoint::Completions, false).finish_chunks(2, "stop", &timings());
    let v: serde_json::Value = serde_json::from_slice(&done[0][6..]).unwrap();
    assert_eq!(v["usage"]["completion_tokens"], 2);
    assert_eq!(v["choices"][0]["text"], "");
}

#[test]
fn whole_answers_carry_text_usage_and_timings() {
    let v: serde_json::Value =
        serde_json::from_str(&fmt(Endpoint::Chat, false).full_body(3, "length", &timings())).unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(v["usage"]["completion_tokens"], 3);
    let v: serde_json::Value =
        serde_json::from_str(&fmt(Endpoint::Completions, false).full_body(0, "length", &Timings::default())).unwrap();
    assert_eq!(
        (v["choices"][0]["text"].as_str(), v["timings"]["predicted_per_second"].as_f64()),
        (Some(""), Some(0.0))
    );
}

#[test]
fn a_late_failure_is_an_error_line() {
    let e = error_event("engine stopped");
    assert_eq!(&e[..], b"error: {\"code\":500,\"message\":\"engine stopped\",\"type\":\"server_error\"}\n\n");
}
