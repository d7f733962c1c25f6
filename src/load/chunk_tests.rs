//! Tests for the streaming chunk parser, on payloads shaped like vLLM, SGLang and llama.cpp output.

use super::*;
use proptest::prelude::*;

fn parse(s: &str) -> ChunkInfo {
    parse_chunk(s.as_bytes()).unwrap()
}

#[test]
fn vllm_role_chunk() {
    let info = parse(
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1730000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#,
    );
    assert_eq!(info, ChunkInfo { has_choices: true, ..ChunkInfo::default() });
}

#[test]
fn content_chunk_with_continuous_usage() {
    let info = parse(
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" world"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":10,"total_tokens":15,"completion_tokens":5}}"#,
    );
    assert_eq!(info.content_bytes, 6);
    assert_eq!(info.prompt_tokens, Some(10));
    assert_eq!(info.completion_tokens, Some(5));
    assert_eq!(info.cached_tokens, None);
    assert!(info.has_choices);
    assert_eq!(info.finish_reason, None);
    assert_eq!(info.error, None);
}

#[test]
fn usage_null_intermediate_chunk() {
    let info = parse(
        r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}],"usage":null}"#,
    );
    assert_eq!((info.content_bytes, info.completion_tokens), (2, None));
}

#[test]
fn usage_only_final_chunk() {
    let info = parse(
        r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":10,"total_tokens":30,"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":8}}}"#,
    );
    assert!(!info.has_choices);
    assert_eq!(info.content_bytes, 0);
    assert_eq!(info.prompt_tokens, Some(10));
    assert_eq!(info.completion_tokens, Some(20));
    assert_eq!(info.cached_tokens, Some(8));
    let info = parse(r#"{"choices":[],"usage":{"prompt_tokens":3,"prompt_tokens_details":null}}"#);
    assert_eq!((info.prompt_tokens, info.cached_tokens), (Some(3), None));
}

#[test]
fn finish_chunks_with_vllm_stop_reason() {
    let length = r#"{"choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"length","stop_reason":null}]}"#;
    assert_eq!(parse(length).finish_reason, Some(FinishReason::Length));
    let stop_token = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop","stop_reason":128009}]}"#;
    assert_eq!(parse(stop_token).finish_reason, Some(FinishReason::Stop));
    let stop_string =
        r#"{"choices":[{"index":0,"delta":{"content":"."},"finish_reason":"stop","stop_reason":"</s>"}]}"#;
    let info = parse(stop_string);
    assert_eq!((info.finish_reason, info.content_bytes), (Some(FinishReason::Stop), 1));
    let abort = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"abort"}]}"#;
    assert_eq!(parse(abort).finish_reason, Some(FinishReason::Abort));
    let tools = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#;
    assert_eq!(parse(tools).finish_reason, Some(FinishReason::Other));
    let odd = r#"{"choices":[{"index":0,"delta":{},"finish_reason":{"type":"length"}}]}"#;
    assert_eq!(parse(odd).finish_reason, None, "non-string finish reasons are ignored");
}

#[test]
fn completions_text_chunk() {
    let info = parse(
        r#"{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" Hello","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}"#,
    );
    assert_eq!((info.content_bytes, info.has_choices), (6, true));
    let last = r#"{"object":"text_completion","choices":[{"index":0,"text":"","finish_reason":"length"}],"usage":{"prompt_tokens":4,"completion_tokens":16,"total_tokens":20}}"#;
    let info = parse(last);
    assert_eq!(info.finish_reason, Some(FinishReason::Length));
    assert_eq!(info.completion_tokens, Some(16));
}

#[test]
fn nested_error_with_numeric_or_string_code() {
    let info = parse(r#"{"error": {"message": "max_tokens is too large", "type": "BadRequestError", "code": 400}}"#);
    let want = StreamError {
        message: "max_tokens is too large".into(),
        code: Some(400),
        kind: Some("BadRequestError".into()),
    };
    assert_eq!(info.error, Some(want));
    assert!(!info.has_choices);
    let info = parse(r#"{"error":{"message":"busy","type":"ServiceUnavailableError","code":"503"}}"#);
    assert_eq!(info.error.unwrap().code, Some(503));
    let info = parse(
        r#"{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key","param":null}}"#,
    );
    let error = info.error.unwrap();
    assert_eq!((error.code, error.kind.as_deref()), (None, Some("invalid_request_error")));
    // llama.cpp's shape: code first, escaped message.
    let info = parse(r#"{"error":{"code":500,"message":"slot \"0\" failed","type":"server_error"}}"#);
    assert_eq!(info.error.unwrap().message, "slot \"0\" failed");
    let info = parse(r#"{"error":"upstream died"}"#);
    assert_eq!(info.error.unwrap().message, "upstream died");
    assert_eq!(parse(r#"{"error":null,"choices":[]}"#).error, None);
}

#[test]
fn flat_vllm_error() {
    let info = parse(
        r#"{"object":"error","message":"The model `x` does not exist.","type":"NotFoundError","param":null,"code":404}"#,
    );
    let want = StreamError {
        message: "The model `x` does not exist.".into(),
        code: Some(404),
        kind: Some("NotFoundError".into()),
    };
    assert_eq!(info.error, Some(want));
    // The same fields without `"object": "error"` are not an error.
    let info = parse(r#"{"message":"hello","type":"note","code":200,"choices":[]}"#);
    assert_eq!(info.error, None);
}

#[test]
fn sglang_chunk_with_extra_fields() {
    let info = parse(
        r#"{"id":"b1","object":"chat.completion.chunk","created":1,"model":"default","choices":[{"index":0,"delta":{"role":null,"content":"Hi","reasoning_content":null,"tool_calls":null},"logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null,"system_fingerprint":null}"#,
    );
    assert_eq!(info.content_bytes, 2);
    let thinking =
        r#"{"choices":[{"index":0,"delta":{"content":null,"reasoning_content":"hmm…"},"finish_reason":null}]}"#;
    assert_eq!(parse(thinking).content_bytes, 6);
    let done = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop","matched_stop":151645}],"usage":{"prompt_tokens":7,"completion_tokens":9,"total_tokens":16,"prompt_tokens_details":{"cached_tokens":0},"reasoning_tokens":0}}"#;
    let info = parse(done);
    assert_eq!(info.finish_reason, Some(FinishReason::Stop));
    assert_eq!(info.cached_tokens, Some(0));
}

#[test]
fn text_size_counts_unescaped_utf8_bytes() {
    // "a\nbé" is 5 bytes; the surrogate pair is one 4-byte crab.
    let info = parse(r#"{"choices":[{"delta":{"content":"a\nb\u00e9"}},{"delta":{"content":"\ud83e\udd80"}}]}"#);
    assert_eq!(info.content_bytes, 9);
    // Newer vLLM sends `reasoning`; a server sending both names is not double counted.
    let both = r#"{"choices":[{"delta":{"reasoning":"abc","reasoning_content":"abc","content":"d"}}]}"#;
    assert_eq!(parse(both).content_bytes, 4);
    let new_name = r#"{"choices":[{"delta":{"reasoning":"abc"}}]}"#;
    assert_eq!(parse(new_name).content_bytes, 3);
}

#[test]
fn several_choices_are_summed() {
    let info = parse(
        r#"{"choices":[{"index":0,"delta":{"content":"ab"},"finish_reason":null},{"index":1,"delta":{"content":"cde"},"finish_reason":"length"},{"index":2,"delta":{},"finish_reason":"stop"}]}"#,
    );
    assert_eq!(info.content_bytes, 5);
    assert_eq!(info.finish_reason, Some(FinishReason::Length));
}

#[test]
fn malformed_input_is_an_error() {
    for bad in [
        "",
        "not json",
        "{\"choices\": [",
        "{\"choices\": {}}",
        "{\"usage\": {\"prompt_tokens\": -1}}",
        "{\"error\": 5}",
        "[DONE]",
        "\u{feff}{}",
    ] {
        let err = parse_chunk(bad.as_bytes()).unwrap_err();
        assert!(err.to_string().starts_with("malformed stream chunk"), "{bad}: {err}");
    }
    assert!(parse_chunk(b"{\"choices\":[{\"delta\":{\"content\":\"\xff\"}}]}").is_err());
    assert_eq!(parse("{}"), ChunkInfo::default());
}

#[test]
fn finish_reason_names() {
    for r in [FinishReason::Stop, FinishReason::Length, FinishReason::Abort] {
        assert_eq!(FinishReason::from_name(r.as_str()), r);
    }
    assert_eq!(FinishReason::from_name("content_filter"), FinishReason::Other);
    assert_eq!(FinishReason::Other.as_str(), "other");
}

proptest! {
    #[test]
    fn never_panics_on_arbitrary_bytes(data in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = parse_chunk(&data);
    }

    #[test]
    fn never_panics_on_json_like_text(data in "[{}\\[\\]\":,0-9a-z_ .\\-\\\\]{0,120}") {
        let _ = parse_chunk(data.as_bytes());
    }

    #[test]
    fn content_bytes_equal_the_text_lengths(
        texts in prop::collection::vec(any::<String>(), 0..5),
        completions in any::<bool>(),
        tokens in prop::option::of(any::<u64>()),
    ) {
        let choices: Vec<serde_json::Value> = texts
            .iter()
            .map(|t| if completions {
                serde_json::json!({"index": 0, "text": t, "finish_reason": null})
            } else {
                serde_json::json!({"index": 0, "delta": {"content": t}, "finish_reason": null})
            })
            .collect();
        let chunk = serde_json::json!({"choices": choices, "usage": tokens.map(|n| serde_json::json!({"completion_tokens": n}))});
        let info = parse_chunk(chunk.to_string().as_bytes()).unwrap();
        prop_assert_eq!(info.content_bytes, texts.iter().map(String::len).sum::<usize>());
        prop_assert_eq!(info.has_choices, !texts.is_empty());
        prop_assert_eq!(info.completion_tokens, tokens);
    }
}
