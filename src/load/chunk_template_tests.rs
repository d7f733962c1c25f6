//! The learned chunk template against the fast path and the full parser: whenever it answers,
//! it answers what they do, and a stream of vLLM's chunks is read from the template.

use super::super::fast_tests::{chunk, number, text};
use super::super::parse_chunk;
use super::*;
use proptest::prelude::*;

/// vLLM's chat chunk of one token (PROTOCOL.md §3), `tokens` counted so far.
fn vllm(text: &str, tokens: u64, tail: &str) -> String {
    format!(
        r#"{{"id":"chatcmpl-9f2c","object":"chat.completion.chunk","created":1795974014,"model":"m","choices":[{{"index":0,"delta":{{"content":{text}}},"logprobs":null,"finish_reason":null{tail}}}],"usage":{{"prompt_tokens":12,"total_tokens":{},"completion_tokens":{tokens}}}}}"#,
        12 + tokens
    )
}

#[test]
fn a_vllm_stream_is_read_from_the_template_after_its_first_token() {
    let mut reader = ChunkReader::new();
    let role = vllm(r#""""#, 0, "").replace(r#""delta":{"#, r#""delta":{"role":"assistant","#);
    let mut stream = vec![role];
    let texts = [r#"" tok""#, r#""é""#, r#""a\nb""#, r#""""#, r#""\"q\" \\""#, r#"" and more words""#];
    stream.extend((1..=600).map(|i| vllm(texts[i % texts.len()], i as u64, "")));
    let last =
        vllm(r#""!""#, 601, "").replace(r#""finish_reason":null"#, r#""finish_reason":"length","stop_reason":null"#);
    stream.push(last);
    stream.push(r#"{"id":"chatcmpl-9f2c","object":"chat.completion.chunk","created":1795974014,"model":"m","choices":[],"usage":{"prompt_tokens":12,"total_tokens":613,"completion_tokens":601}}"#.into());
    let mut hits = 0;
    for (i, c) in stream.iter().enumerate() {
        hits += usize::from(reader.matched(c.as_bytes()).is_some());
        let got = reader.parse(c.as_bytes()).unwrap();
        assert_eq!(got, parse_chunk(c.as_bytes()).unwrap(), "chunk {i}: {c}");
    }
    // The role chunk teaches a shape the first token does not have; the last two chunks
    // change shape (finish reason, no choices).
    assert_eq!(hits, 599, "every token chunk after the first comes from the template");
    let kept: Vec<_> = reader.rec.slots.iter().map(|s| s.field).collect();
    assert_eq!(
        kept,
        [Field::Unread, Field::Prompt, Field::Unread, Field::Completion],
        "the final chunk's shape, unsettled"
    );
    let moved = vllm(r#""x""#, 3, "").replace(r#""usage":{"#, r#""usage": {"#);
    assert_eq!(reader.matched(moved.as_bytes()), None, "whitespace moved: a miss");
}

#[test]
fn numbers_that_stay_the_same_become_bytes_to_compare() {
    let mut reader = ChunkReader::new();
    reader.parse(vllm(r#""a""#, 1, "").as_bytes()).unwrap();
    reader.parse(vllm(r#""b""#, 2, "").as_bytes()).unwrap();
    let kept: Vec<_> = reader.rec.slots.iter().map(|s| s.field).collect();
    assert_eq!(kept, [Field::Text, Field::Unread, Field::Completion], "text, total_tokens, completion_tokens");
    let c = vllm(r#""cd""#, 3, "");
    assert_eq!(reader.matched(c.as_bytes()), parse_chunk(c.as_bytes()).ok());
    let other_prompt = c.replace(r#""prompt_tokens":12"#, r#""prompt_tokens":13"#);
    assert_eq!(reader.matched(other_prompt.as_bytes()), None, "a settled number changed: a miss");
    assert_eq!(reader.parse(other_prompt.as_bytes()).unwrap().prompt_tokens, Some(13));
}

#[test]
fn values_the_fast_path_would_not_take_miss() {
    let mut reader = ChunkReader::new();
    reader.parse(vllm(r#""a""#, 1, "").as_bytes()).unwrap();
    for odd in [r#""\u00e9""#, "null", r#""a\qb""#, "\"\u{1}\"", "5"] {
        assert_eq!(reader.matched(vllm(odd, 2, "").as_bytes()), None, "{odd}");
    }
    for n in ["02", "1.5", "1e3", "-1", "18446744073709551616", "null"] {
        let c = vllm(r#""a""#, 2, "").replace(r#""completion_tokens":2"#, &format!(r#""completion_tokens":{n}"#));
        assert_eq!(reader.matched(c.as_bytes()), None, "{n}");
        assert_eq!(reader.parse(c.as_bytes()).ok(), parse_chunk(c.as_bytes()).ok(), "{n}");
    }
}

#[test]
fn two_reasoning_texts_in_one_delta_are_not_learned() {
    let mut reader = ChunkReader::new();
    let both = r#"{"choices":[{"delta":{"reasoning_content":"abc","reasoning":"abcd"}}]}"#;
    assert_eq!(reader.parse(both.as_bytes()).unwrap().content_bytes, 4);
    assert_eq!(reader.matched(both.as_bytes()), None, "their larger one is no sum");
    let one = r#"{"choices":[{"delta":{"reasoning_content":"abc","reasoning":null,"content":"x"}}]}"#;
    reader.parse(one.as_bytes()).unwrap();
    let next = one.replace("abc", "abcdef");
    assert_eq!(reader.matched(next.as_bytes()).map(|i| i.content_bytes), Some(7));
}

/// A chat chunk as servers stream them, with any text and numbers in its values.
fn streamed() -> impl Strategy<Value = Vec<u8>> {
    let tail = prop::sample::select(&["", r#","stop_reason":null"#, r#","stop_reason":7"#][..]);
    (text(), text(), number(), number(), number(), tail).prop_map(|(a, b, created, prompt, done, tail)| {
        let s = |v: Vec<u8>| String::from_utf8_lossy(&v).into_owned();
        let (a, b, created, prompt, done) = (s(a), s(b), s(created), s(prompt), s(done));
        format!(
            r#"{{"id":"x","created":{created},"choices":[{{"index":0,"delta":{{"reasoning_content":{a},"content":{b}}},"finish_reason":null{tail}}}],"usage":{{"prompt_tokens":{prompt},"completion_tokens":{done},"prompt_tokens_details":{{"cached_tokens":{prompt}}}}}}}"#
        )
        .into_bytes()
    })
}

/// `data` with a few edits, mostly inside its values (text and numbers) and some anywhere: a
/// digit swapped for another or a letter inserted (the value changes), or any byte replaced,
/// inserted or deleted.
fn mutated() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    let byte = prop::sample::select(&b"0159a \"\\.e-n\x01\xff\xc3,}"[..]);
    let edit = (any::<prop::sample::Index>(), any::<prop::sample::Index>(), 0..5u8, 0..6u8, byte);
    (prop_oneof![1 => chunk(), 2 => streamed()], prop::collection::vec(edit, 0..4)).prop_map(|(data, edits)| {
        let mut rec = Recorder::default();
        let _ = fast::parse_recording(&data, &mut rec);
        let mut next = data.clone();
        for (slot, at, anywhere, op, byte) in edits {
            // Edits after the first may shift the values; they still land near them.
            let (lo, hi) = match rec.slots.get(slot.index(rec.slots.len().max(1))) {
                Some(s) if anywhere > 0 => (s.start, s.end),
                _ => (0, next.len()),
            };
            let hi = hi.min(next.len());
            if lo >= hi {
                continue;
            }
            let i = lo + at.index(hi - lo);
            match op {
                0..3 if next[i].is_ascii_digit() => next[i] = b'0' + (next[i] - b'0' + 1) % 10,
                0..3 => next.insert(i, b'a'),
                3 => next[i] = byte,
                4 => next.insert(i, byte),
                _ => drop(next.remove(i)),
            }
        }
        (data, next)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn numbers_read_as_the_fast_path_reads_them(s in "[0-9]{0,22}[.eE,x}]?", from in 0..3usize) {
        let data = format!("ab{s}");
        let at = from.min(data.len());
        let mut cur = Cursor::at(data.as_bytes(), at);
        let want = cur.digits().map(|n| (n, cur.pos()));
        let mut pos = at;
        prop_assert_eq!(plain_uint(data.as_bytes(), &mut pos).map(|n| (n, pos)), want, "{}", data);
    }

    #[test]
    fn the_template_agrees_with_the_fast_path_and_the_full_parser((first, next) in mutated(), settle in any::<bool>()) {
        let mut reader = ChunkReader::new();
        let _ = reader.parse(&first);
        if settle {
            // A second chunk equal to the first: every number becomes bytes to compare.
            let _ = reader.parse(&first);
        }
        if let Some(info) = reader.matched(&next) {
            prop_assert_eq!(Some(info), fast::parse(&next), "{}", String::from_utf8_lossy(&next));
        }
        let (got, want) = (reader.parse(&next), parse_chunk(&next));
        prop_assert_eq!(got.as_ref().ok(), want.as_ref().ok(), "{}", String::from_utf8_lossy(&next));
    }
}

#[test]
fn the_mutated_chunks_often_match_the_template() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut learned, mut hits) = (0, 0);
    for _ in 0..4000 {
        let (first, next) = mutated().new_tree(&mut runner).unwrap().current();
        let mut reader = ChunkReader::new();
        let _ = reader.parse(&first);
        learned += usize::from(!reader.learned.is_empty());
        hits += usize::from(reader.matched(&next).is_some_and(|_| next != first));
    }
    // Otherwise the agreement test above would check little.
    assert!(learned > 500 && hits > 80, "{learned} learned, {hits} changed chunks matched");
}
