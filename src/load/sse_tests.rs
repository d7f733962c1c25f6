//! Tests for the SSE decoder, including a differential property test against `eventsource-stream`.

use super::*;
use futures_util::{FutureExt, TryStreamExt};
use proptest::prelude::*;

/// An owned copy of an [`SseEvent`], for comparisons.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ev {
    Data(String),
    Done,
    Error(String),
}

impl Ev {
    fn from_event(e: SseEvent<'_>) -> Self {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        match e {
            SseEvent::Data(d) => Ev::Data(text(d)),
            SseEvent::Done => Ev::Done,
            SseEvent::Error(d) => Ev::Error(text(d)),
        }
    }

    fn data(s: &str) -> Self {
        Ev::Data(s.to_owned())
    }
}

fn feed_chunks(dec: &mut SseDecoder, chunks: &[&[u8]]) -> Vec<Ev> {
    let mut out = Vec::new();
    for chunk in chunks {
        dec.feed(chunk, |e| out.push(Ev::from_event(e))).unwrap();
    }
    out
}

fn decode(chunks: &[&[u8]]) -> Vec<Ev> {
    feed_chunks(&mut SseDecoder::new(), chunks)
}

fn decode_and_finish(chunks: &[&[u8]]) -> Vec<Ev> {
    let mut dec = SseDecoder::new();
    let mut out = feed_chunks(&mut dec, chunks);
    dec.finish(|e| out.push(Ev::from_event(e))).unwrap();
    out
}

const SAMPLE: &[u8] = b": keep-alive\r\n\
data: {\"a\":1}\n\n\
event: message\r\nid: 7\rretry: 100\ndata: line one\ndata:line two\n\n\
data\n\n\
event: error\ndata: {\"error\":{}}\n\n\
id: only-an-id\n\n\
data: [DONE]\r\n\r\n";

fn sample_events() -> Vec<Ev> {
    vec![
        Ev::data("{\"a\":1}"),
        Ev::data("line one\nline two"),
        Ev::data(""),
        Ev::Error("{\"error\":{}}".into()),
        Ev::Done,
    ]
}

#[test]
fn whole_read_decodes_every_kind_of_line() {
    let mut dec = SseDecoder::new();
    assert_eq!(feed_chunks(&mut dec, &[SAMPLE]), sample_events());
    assert_eq!(dec.bytes_seen(), SAMPLE.len() as u64);
    assert_eq!(dec.events_seen(), 5);
}

#[test]
fn every_two_way_split_gives_the_same_events() {
    for i in 0..=SAMPLE.len() {
        let (a, b) = SAMPLE.split_at(i);
        assert_eq!(decode(&[a, b]), sample_events(), "split at {i}");
    }
}

#[test]
fn every_three_way_split_gives_the_same_events() {
    let small = b"data: ab\r\n\r\ndata: c\rdata: d\r\r:x\n\n";
    let want = vec![Ev::data("ab"), Ev::data("c\nd")];
    for i in 0..=small.len() {
        for j in i..=small.len() {
            let got = decode(&[&small[..i], &small[i..j], &small[j..]]);
            assert_eq!(got, want, "splits at {i}, {j}");
        }
    }
}

#[test]
fn byte_by_byte_gives_the_same_events() {
    let chunks: Vec<&[u8]> = SAMPLE.chunks(1).collect();
    assert_eq!(decode(&chunks), sample_events());
}

#[test]
fn several_events_in_one_read_and_empty_reads() {
    let got = decode(&[b"", b"data: 1\n\ndata: 2\n\ndata: 3\n", b"", b"\n"]);
    assert_eq!(got, vec![Ev::data("1"), Ev::data("2"), Ev::data("3")]);
}

#[test]
fn line_endings_cr_lf_and_crlf() {
    assert_eq!(decode(&[b"data: a\r\n\r\n"]), vec![Ev::data("a")]);
    assert_eq!(decode(&[b"data: a\r\r"]), vec![Ev::data("a")]);
    assert_eq!(decode(&[b"data: a\n\n"]), vec![Ev::data("a")]);
    // A `\r\n` split across reads is one line ending, not a blank line.
    assert_eq!(decode(&[b"data: a\r", b"\ndata: b\r", b"\n\r\n"]), vec![Ev::data("a\nb")]);
}

#[test]
fn field_value_rules() {
    // Only one space after the colon is dropped; a colon in the value is kept.
    assert_eq!(decode(&[b"data:  x:y\n\n"]), vec![Ev::data(" x:y")]);
    assert_eq!(decode(&[b"data:x\n\n"]), vec![Ev::data("x")]);
    // Field names are case-sensitive; unknown fields and comments are ignored.
    assert_eq!(decode(&[b"Data: x\nfoo: y\n: data: z\n\n"]), vec![]);
    // `event:` only lasts for one event.
    let got = decode(&[b"event: error\ndata: e\n\ndata: ok\n\n"]);
    assert_eq!(got, vec![Ev::Error("e".into()), Ev::data("ok")]);
    // `event: error` without data is not dispatched and does not leak into the next event.
    assert_eq!(decode(&[b"event: error\n\ndata: ok\n\n"]), vec![Ev::data("ok")]);
}

#[test]
fn llama_cpp_error_line_is_an_error_event() {
    let body = b"error: {\"code\":400,\"message\":\"too long\",\"type\":\"exceed_context_size_error\"}\n\n";
    let got = decode(&[body]);
    let want = "{\"code\":400,\"message\":\"too long\",\"type\":\"exceed_context_size_error\"}";
    assert_eq!(got, vec![Ev::Error(want.into())]);
}

#[test]
fn done_only_when_exact() {
    assert_eq!(decode(&[b"data: [DONE]\n\n"]), vec![Ev::Done]);
    assert_eq!(decode(&[b"data:[DONE]\n\n"]), vec![Ev::Done]);
    assert_eq!(decode(&[b"data: [DONE] \n\n"]), vec![Ev::data("[DONE] ")]);
    assert_eq!(decode(&[b"data: [DONE]\ndata: x\n\n"]), vec![Ev::data("[DONE]\nx")]);
}

#[test]
fn byte_order_mark_is_skipped_even_when_split() {
    let body = b"\xEF\xBB\xBFdata: x\n\n";
    for i in 0..=4 {
        let (a, b) = body.split_at(i);
        assert_eq!(decode(&[a, b]), vec![Ev::data("x")], "split at {i}");
    }
    // Only at the very start of the stream.
    assert_eq!(decode(&[b"data: \xEF\xBB\xBFx\n\n"]), vec![Ev::data("\u{feff}x")]);
    // A partial BOM is ordinary line content (here: part of an unknown field name).
    assert_eq!(decode(&[b"\xEF", b"\xBBdata: x\n\ndata: y\n\n"]), vec![Ev::data("y")]);
}

#[test]
fn finish_flushes_an_unterminated_event() {
    assert_eq!(decode(&[b"data: a\n\ndata: b"]), vec![Ev::data("a")]);
    assert_eq!(decode_and_finish(&[b"data: a\n\ndata: b"]), vec![Ev::data("a"), Ev::data("b")]);
    assert_eq!(decode_and_finish(&[b"data: b\n"]), vec![Ev::data("b")]);
    assert_eq!(decode_and_finish(&[b"data: b\r"]), vec![Ev::data("b")]);
    assert_eq!(decode_and_finish(&[b"data: b\ndata: c"]), vec![Ev::data("b\nc")]);
    assert_eq!(decode_and_finish(&[b"data: [DONE]"]), vec![Ev::Done]);
    assert_eq!(decode_and_finish(&[b"data: a\n\n: bye"]), vec![Ev::data("a")]);
    assert_eq!(decode_and_finish(&[b"id: 1"]), vec![]);
    assert_eq!(decode_and_finish(&[]), vec![]);
}

#[test]
fn decoder_is_reusable_after_finish() {
    let mut dec = SseDecoder::new();
    let mut out = feed_chunks(&mut dec, &[b"data: a\r"]);
    dec.finish(|e| out.push(Ev::from_event(e))).unwrap();
    // A new stream: leading `\n` is a blank line again and a BOM is skipped again.
    out.extend(feed_chunks(&mut dec, &[b"\xEF\xBB\xBF\ndata: b\n\n"]));
    assert_eq!(out, vec![Ev::data("a"), Ev::data("b")]);
}

#[test]
fn over_long_lines_are_rejected() {
    let limit = SseError::LineTooLong { limit: 8 };
    // Within one read.
    let mut dec = SseDecoder::with_max_line(8);
    assert_eq!(dec.feed(b"data: 123456\n\n", |_| {}), Err(limit.clone()));
    // Accumulated across reads, without a line ending in sight.
    let mut dec = SseDecoder::with_max_line(8);
    assert_eq!(dec.feed(b"data:", |_| {}), Ok(()));
    assert_eq!(dec.feed(b" 1234", |_| {}), Err(limit.clone()));
    // Completed in a later read.
    let mut dec = SseDecoder::with_max_line(8);
    assert_eq!(dec.feed(b"data: 12", |_| {}), Ok(()));
    assert_eq!(dec.feed(b"3\n\n", |_| {}), Err(limit));
    // After an error the decoder starts over cleanly.
    let mut out = Vec::new();
    dec.feed(b"data: ok\n\n", |e| out.push(Ev::from_event(e))).unwrap();
    assert_eq!(out, vec![Ev::data("ok")]);
    // Exactly at the limit is fine.
    let mut dec = SseDecoder::with_max_line(8);
    assert_eq!(dec.max_line(), 8);
    assert_eq!(dec.feed(b"data: 12\n\n", |_| {}), Ok(()));
}

#[test]
fn over_large_events_are_rejected() {
    let mut dec = SseDecoder::with_max_line(8);
    let result = dec.feed(b"data: 12\ndata: 34\ndata: 56\ndata: 78\n\n", |_| {});
    assert_eq!(result, Err(SseError::EventTooLarge { limit: 8 }));
    assert!(result.unwrap_err().to_string().contains("8 bytes"));
}

#[test]
fn single_line_events_borrow_the_input() {
    let body = b"data: abc\n\ndata: def\n\n";
    let range = body.as_ptr_range();
    let mut dec = SseDecoder::new();
    let mut seen = 0;
    dec.feed(body, |e| {
        let SseEvent::Data(d) = e else { panic!("unexpected {e:?}") };
        assert!(range.contains(&d.as_ptr()), "data was copied");
        seen += 1;
    })
    .unwrap();
    assert_eq!(seen, 2);
}

/// Decodes with `eventsource-stream`, mapping its events onto [`Ev`].
///
/// eventsource-stream 0.2.3 panics on a leading BOM (it slices the 3-byte char at
/// byte 1), so the BOM is removed here, keeping the split points of the rest.
fn reference(chunks: &[Vec<u8>]) -> Vec<Ev> {
    use eventsource_stream::Eventsource;
    let mut skip = if chunks.concat().starts_with(BOM.as_slice()) { BOM.len() } else { 0 };
    let mut items: Vec<Result<bytes::Bytes, std::convert::Infallible>> = Vec::new();
    for c in chunks {
        let cut = skip.min(c.len());
        skip -= cut;
        items.push(Ok(bytes::Bytes::copy_from_slice(&c[cut..])));
    }
    let collected = futures_util::stream::iter(items).eventsource().try_collect::<Vec<_>>().now_or_never();
    let events = collected.expect("an iterator stream is always ready").unwrap();
    events
        .into_iter()
        .map(|e| match (e.event.as_str(), e.data.as_str()) {
            ("error", data) => Ev::Error(data.to_owned()),
            (_, "[DONE]") => Ev::Done,
            (_, data) => Ev::data(data),
        })
        .collect()
}

#[tokio::test]
async fn reference_agrees_on_the_sample() {
    // Sanity check of the harness itself, on an async runtime like the real client.
    let got = decode(&[SAMPLE]);
    let want = tokio::task::spawn_blocking(|| reference(&[SAMPLE.to_vec()])).await.unwrap();
    assert_eq!(got, want);
}

fn line() -> impl Strategy<Value = String> {
    let value = "[a-z {}\":,\\[\\]é🦀]{0,10}";
    prop_oneof![
        4 => value.prop_map(|v| format!("data: {v}")),
        1 => value.prop_map(|v| format!("data:{v}")),
        1 => Just("data: [DONE]".to_owned()),
        1 => Just("data".to_owned()),
        1 => prop::sample::select(vec!["error", "message", "ping", ""]).prop_map(|n| format!("event: {n}")),
        1 => "[0-9a-z]{0,4}".prop_map(|v| format!("id: {v}")),
        1 => "[0-9]{0,4}".prop_map(|v| format!("retry: {v}")),
        1 => value.prop_map(|v| format!(":{v}")),
        // Arbitrary lines, minus the non-standard `error:` field the reference ignores.
        1 => "[a-z: ]{0,8}".prop_filter("error field", |l| split_field(l.as_bytes()).0 != b"error"),
        4 => Just(String::new()),
    ]
}

fn stream() -> impl Strategy<Value = Vec<u8>> {
    let ending = prop::sample::select(vec!["\n", "\r\n", "\r"]);
    let lines = prop::collection::vec((line(), ending), 0..24);
    (any::<bool>(), lines).prop_map(|(bom, lines)| {
        let mut out = if bom { "\u{feff}".to_owned() } else { String::new() };
        for (l, e) in lines {
            out.push_str(&l);
            out.push_str(e);
        }
        out.into_bytes()
    })
}

fn split(body: &[u8], cuts: &[prop::sample::Index]) -> Vec<Vec<u8>> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c.index(body.len() + 1)).collect();
    points.sort_unstable();
    let mut chunks = Vec::new();
    let mut start = 0;
    for p in points.into_iter().chain([body.len()]) {
        chunks.push(body[start..p].to_vec());
        start = p;
    }
    chunks
}

proptest! {
    #[test]
    fn matches_eventsource_stream(body in stream(), cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8)) {
        let mut chunks = split(&body, &cuts);
        let refs: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
        let got = decode(&refs);
        // eventsource-stream waits for one more byte after a final `\r` (it could start
        // `\r\n`); a trailing comment byte resolves that without adding an event.
        chunks.push(b":".to_vec());
        prop_assert_eq!(&got, &reference(&chunks));
        prop_assert_eq!(got, decode(&[&body]));
    }

    #[test]
    fn finish_acts_like_a_final_blank_line(body in stream(), cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8), tail in "[a-z: ]{0,6}") {
        let mut body = body;
        body.extend_from_slice(tail.as_bytes());
        let mut chunks = split(&body, &cuts);
        let refs: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
        let got = decode_and_finish(&refs);
        chunks.push(b"\n\n".to_vec());
        prop_assert_eq!(got, reference(&chunks));
    }

    #[test]
    fn arbitrary_bytes_never_panic(chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..8), limit in 1usize..64) {
        let mut dec = SseDecoder::with_max_line(limit);
        let mut total = 0;
        for c in &chunks {
            total += c.len() as u64;
            let _ = dec.feed(c, |_| {});
        }
        let _ = dec.finish(|_| {});
        prop_assert_eq!(dec.bytes_seen(), total);
    }
}

#[test]
fn a_stream_of_megabytes_without_an_event_is_cut() {
    let limit = crate::load::limits::SSE_WITHOUT_EVENT_MAX;
    let junk = b"vllm:foo 1\n".repeat(64 << 10);
    let mut dec = SseDecoder::new();
    let mut events = 0;
    let mut fed = 0u64;
    let result = loop {
        if let Err(e) = dec.feed(&junk, |_| events += 1) {
            break e;
        }
        fed += junk.len() as u64;
        assert!(fed <= limit, "read on past the limit");
    };
    assert_eq!(result, SseError::NoEvents { limit });
    assert!(result.to_string().contains("without an event"), "{result}");
    assert_eq!(events, 0);
    // Events reset the count: keep-alive comments between tokens never trip it.
    let mut dec = SseDecoder::new();
    let chunk = [b": ping\n".repeat(100_000), b"data: {}\n\n".to_vec()].concat();
    for _ in 0..20 {
        dec.feed(&chunk, |_| {}).expect("events keep coming");
    }
}

#[path = "sse_frames_tests.rs"]
mod frames;
