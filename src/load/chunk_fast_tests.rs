//! The chunk parser's fast path against the full parser: it takes the common shapes, and
//! whenever it answers, it answers exactly what the full parser does.

use super::fast;
use super::*;
use proptest::prelude::*;

const VLLM: &str = r#"{"id":"chatcmpl-9f2c","object":"chat.completion.chunk","created":1795974014,"model":"Qwen3.8-27B-FP8","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":16384,"total_tokens":16390,"completion_tokens":6}}"#;

fn both(s: &str) -> (Option<ChunkInfo>, ChunkInfo) {
    (fast::parse(s.as_bytes()), parse_chunk_full(s.as_bytes()).unwrap())
}

#[test]
fn the_common_shapes_take_the_fast_path() {
    let shapes = [
        VLLM,
        r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#,
        r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":10,"total_tokens":30,"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":8}}}"#,
        r#"{"choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"length","stop_reason":null}],"usage":null}"#,
        r#"{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"a\nb \"q\"","logprobs":null,"finish_reason":null}]}"#,
        r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"reasoning_content":"hmm","content":null}}],"created":1,"id":"x","model":"m","system_fingerprint":"b1","object":"chat.completion.chunk"}"#,
        "{ \"choices\" : [ { \"delta\" : { \"content\" : \"é\" } } ] }\n",
    ];
    for s in shapes {
        let (fast, full) = both(s);
        assert_eq!(fast.as_ref(), Some(&full), "{s}");
    }
    assert_eq!(both(VLLM).1.content_bytes, 6);
    assert_eq!(both(VLLM).1.completion_tokens, Some(6));
}

#[test]
fn unusual_chunks_go_to_the_full_parser() {
    let unusual = [
        r#"{"error":{"message":"boom","code":500}}"#,
        r#"{"object":"error","message":"flat","code":400}"#,
        r#"{"choices":[{"delta":{"content":"\u00e9"}}]}"#,
        r#"{"choices":[{"delta":{"content":"a"},"delta":{"content":"b"}}]}"#,
        r#"{"usage":{"completion_tokens":1.0}}"#,
        r#"{"usage":{"completion_tokens":-1}}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}"#,
        r#"{"choices":[]} x"#,
        r#"{"choices":[{"delta":{"content":"a"}}]"#,
    ];
    for s in unusual {
        assert_eq!(fast::parse(s.as_bytes()), None, "{s}");
    }
}

/// One of `options`, with `<ff>` and `<c3>` standing for those bytes (invalid UTF-8).
fn pick(options: &'static [&'static str]) -> impl Strategy<Value = Vec<u8>> {
    prop::sample::select(options).prop_map(|s| {
        let (mut out, mut rest) = (Vec::new(), s.as_bytes());
        while let Some((&first, tail)) = rest.split_first() {
            let byte = [(&b"<ff>"[..], 0xff), (b"<c3>", 0xc3)].into_iter().find(|(k, _)| rest.starts_with(k));
            match byte {
                Some((k, b)) => (out.push(b), rest = &rest[k.len()..]),
                None => (out.push(first), rest = tail),
            };
        }
        out
    })
}

/// A JSON string: any text serde_json writes (escapes included), or a hand-made oddity.
pub(super) fn text() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        any::<String>().prop_map(|s| serde_json::to_vec(&s).unwrap()),
        "[a-z \u{e9}\u{1F600}]{0,8}".prop_map(|s| format!("\"{s}\"").into_bytes()),
        pick(&[
            "\"a\\nb\"",
            "\"\\/\\t\\\\\"",
            "\"a\\qb\"",
            "\"\\ud83d\"",
            "\"x\x01\"",
            "\"<ff>\"",
            "\"<c3>\"",
            "null",
            "5",
            "[]",
            "{}",
            "true"
        ]),
    ]
}

pub(super) fn number() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        any::<u64>().prop_map(|n| n.to_string().into_bytes()),
        pick(&["0", "05", "-1", "1.0", "1e2", "18446744073709551616", "null", "\"7\"", "true"]),
    ]
}

fn object(members: Vec<Vec<Vec<u8>>>, ws: &[u8]) -> Vec<u8> {
    let mut out = b"{".to_vec();
    for (i, m) in members.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(ws);
        out.extend(m.iter().flatten());
    }
    out.push(b'}');
    out
}

fn member(key: &'static str, value: impl Strategy<Value = Vec<u8>>) -> impl Strategy<Value = Vec<Vec<u8>>> {
    value.prop_map(move |v| vec![format!("\"{key}\":").into_bytes(), v])
}

fn delta() -> impl Strategy<Value = Vec<u8>> {
    let m = prop_oneof![
        member("content", text()),
        member("reasoning_content", text()),
        member("reasoning", text()),
        member("role", pick(&["\"assistant\"", "null", "\"a\\\"\""])),
        member("tool_calls", pick(&["[]", "null"])),
    ];
    prop_oneof![prop::collection::vec(m, 0..4).prop_map(|ms| object(ms, b"")), pick(&["null"])]
}

fn choice() -> impl Strategy<Value = Vec<u8>> {
    let m = prop_oneof![
        member("index", number()),
        member("delta", delta()),
        member("text", text()),
        member(
            "finish_reason",
            pick(&["null", "\"stop\"", "\"length\"", "\"abort\"", "\"tool_calls\"", "5", "\"st\\u006fp\""])
        ),
        member("logprobs", pick(&["null", "{\"content\":[]}"])),
        member("stop_reason", number()),
    ];
    prop::collection::vec(m, 0..5).prop_map(|ms| object(ms, b" "))
}

fn usage() -> impl Strategy<Value = Vec<u8>> {
    let details = prop_oneof![
        member("cached_tokens", number()).prop_map(|m| object(vec![m], b"")),
        pick(&["null", "{}", "{\"cached_tokens\":1,\"cached_tokens\":2}", "{\"audio_tokens\":0,\"cached_tokens\":3}"]),
    ];
    let m = prop_oneof![
        member("prompt_tokens", number()),
        member("completion_tokens", number()),
        member("total_tokens", number()),
        member("prompt_tokens_details", details),
    ];
    prop_oneof![prop::collection::vec(m, 0..5).prop_map(|ms| object(ms, b"\n")), pick(&["null", "3"])]
}

pub(super) fn chunk() -> impl Strategy<Value = Vec<u8>> {
    let choices = prop_oneof![
        prop::collection::vec(choice(), 0..3).prop_map(|cs| {
            let mut out = b"[".to_vec();
            out.extend(cs.join(&b","[..]));
            out.push(b']');
            out
        }),
        pick(&["null", "{}"]),
    ];
    let m = prop_oneof![
        4 => member("choices", choices),
        3 => member("usage", usage()),
        1 => member("id", text()),
        1 => member("object", pick(&["\"chat.completion.chunk\"", "\"error\"", "null", "1", "\"<ff>\""])),
        1 => member("created", number()),
        1 => member("error", pick(&["{\"message\":\"m\"}", "\"m\"", "null"])),
        1 => member("message", text()),
        1 => member("system_fingerprint", pick(&["null", "\"fp\"", "[1]"])),
        1 => pick(&["\"<ff>\":1", "\"k\\\"\":1"]).prop_map(|k| vec![k]),
    ];
    (prop::collection::vec(m, 0..6), pick(&["", " ", "\t\r\n"]), pick(&["", "", "", " ", "x", "}"]))
        .prop_map(|(ms, ws, tail)| [object(ms, &ws), tail].concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn the_fast_path_agrees_with_the_full_parser(data in chunk(), cut in any::<prop::sample::Index>(), whole in any::<bool>()) {
        let data = if whole { &data[..] } else { &data[..cut.index(data.len() + 1)] };
        if let Some(fast) = fast::parse(data) {
            let full = parse_chunk_full(data);
            prop_assert!(full.is_ok(), "fast path accepted what the full parser rejects: {}", String::from_utf8_lossy(data));
            prop_assert_eq!(fast, full.unwrap(), "{}", String::from_utf8_lossy(data));
        }
    }
}

#[test]
fn the_generated_chunks_often_reach_the_fast_path() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let hits = (0..2000).filter(|_| fast::parse(&chunk().new_tree(&mut runner).unwrap().current()).is_some()).count();
    // Otherwise the agreement test above would check little.
    assert!(hits > 200, "{hits} of 2000");
}
