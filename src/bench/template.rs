//! The bench server's pre-formatted event streams: every event of one stream laid out once, one
//! token per SSE event with `usage` on every event, then the final usage chunk and `[DONE]`.
//!
//! Each event ends with `"bench_sent_unix_ns":N}` (N: 19 digits, unix time in nanoseconds):
//! the server's send time, written into the copy of the event just before it is handed to the
//! socket. The tool's chunk parser ignores the field; the bench's lag probe reads it.

use bytes::{Bytes, BytesMut};

/// The JSON field holding the server's send time (unix ns), last in every event.
pub const STAMP_FIELD: &str = "bench_sent_unix_ns";

/// Digits of a stamp: unix ns have 19 until the year 2286.
pub const STAMP_DIGITS: usize = 19;

/// The placeholder written at build time (a valid JSON number, overwritten before sending).
const PLACEHOLDER: &str = "1000000000000000000";

/// Which OpenAI-compatible answer the events imitate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flavor {
    /// `/v1/chat/completions`: `chat.completion.chunk` with `delta.content`.
    Chat,
    /// `/v1/completions`: `text_completion` with `text`.
    Completion,
}

/// One stream's events, laid out once.
#[derive(Debug)]
pub struct Template {
    /// Every event, back to back (`data: {...}\n\n`), `[DONE]` last.
    pub bytes: Bytes,
    /// End offset of each event; the token events first (one per token), then the final usage
    /// chunk, then `[DONE]`.
    pub ends: Vec<usize>,
    /// Offset of each event's stamp digits (`[DONE]` has none); empty when the events carry
    /// no send time (vLLM's shape, src/bench/shape.rs).
    pub stamps: Vec<usize>,
    /// Events before the first token's (vLLM's role chunk: 1; the bench's shape: 0).
    pub lead: usize,
}

/// The text of every token.
const TOKEN: &str = " tok";

fn usage(prompt: u64, done: u64) -> String {
    format!("\"usage\":{{\"prompt_tokens\":{prompt},\"total_tokens\":{},\"completion_tokens\":{done}}}", prompt + done)
}

fn choice(flavor: Flavor, finish: Option<&str>) -> String {
    let finish = finish.map_or_else(|| "null".to_string(), |f| format!("\"{f}\""));
    match flavor {
        Flavor::Chat => {
            format!(
                "{{\"index\":0,\"delta\":{{\"content\":\"{TOKEN}\"}},\"logprobs\":null,\"finish_reason\":{finish}}}"
            )
        }
        Flavor::Completion => {
            format!("{{\"index\":0,\"text\":\"{TOKEN}\",\"logprobs\":null,\"finish_reason\":{finish}}}")
        }
    }
}

impl Template {
    /// The events of a `tokens`-token answer to a `prompt`-token request for `model`.
    pub fn build(flavor: Flavor, model: &str, prompt: u64, tokens: u64) -> Self {
        let (id, object) = match flavor {
            Flavor::Chat => ("chatcmpl-bench", "chat.completion.chunk"),
            Flavor::Completion => ("cmpl-bench", "text_completion"),
        };
        let head = format!("data: {{\"id\":\"{id}\",\"object\":\"{object}\",\"created\":0,\"model\":\"{model}\",");
        let mut out = String::with_capacity((tokens as usize + 2) * (head.len() + 200));
        let (mut ends, mut stamps) = (Vec::new(), Vec::new());
        let mut push = |out: &mut String, body: String| {
            out.push_str(&head);
            out.push_str(&body);
            out.push_str(&format!(",\"{STAMP_FIELD}\":"));
            stamps.push(out.len());
            out.push_str(PLACEHOLDER);
            out.push_str("}\n\n");
            ends.push(out.len());
        };
        for k in 1..=tokens {
            let finish = (k == tokens).then_some("length");
            push(&mut out, format!("\"choices\":[{}],{}", choice(flavor, finish), usage(prompt, k)));
        }
        push(&mut out, format!("\"choices\":[],{}", usage(prompt, tokens)));
        out.push_str("data: [DONE]\n\n");
        ends.push(out.len());
        Self { bytes: Bytes::from(out), ends, stamps, lead: 0 }
    }

    /// The token events among events `from..to` (not the role chunk, the final usage chunk or
    /// `[DONE]`).
    pub fn tokens_in(&self, from: usize, to: usize) -> usize {
        let last = self.events().saturating_sub(2);
        to.min(last).saturating_sub(from.max(self.lead))
    }

    /// Events in all, `[DONE]` included.
    pub fn events(&self) -> usize {
        self.ends.len()
    }

    /// Start offset of event `i`.
    fn start(&self, i: usize) -> usize {
        if i == 0 { 0 } else { self.ends[i - 1] }
    }

    /// A copy of events `from..to`, each stamped with `now_ns` (a shared slice when the events
    /// carry no stamp).
    pub fn stamped(&self, from: usize, to: usize, now_ns: u64) -> Bytes {
        let (a, b) = (self.start(from), self.ends[to - 1]);
        if self.stamps.is_empty() {
            return self.bytes.slice(a..b);
        }
        let mut buf = BytesMut::from(&self.bytes[a..b]);
        let digits = format!("{now_ns:019}");
        let digits = &digits.as_bytes()[digits.len() - STAMP_DIGITS..];
        for &at in self.stamps.iter().skip(from).take(to - from) {
            buf[at - a..at - a + STAMP_DIGITS].copy_from_slice(digits);
        }
        buf.freeze()
    }

    /// The end of the frame starting at event `from`: at most `max_events` events and at most
    /// `bytes` bytes, whichever limit comes first, but always at least one event.
    pub fn batch_end(&self, from: usize, bytes: usize, max_events: usize) -> usize {
        let limit = self.start(from) + bytes;
        let last = self.events().min(from.saturating_add(max_events.max(1)));
        let mut to = from + 1;
        while to < last && self.ends[to] <= limit {
            to += 1;
        }
        to
    }
}

/// The stamp of one event's data (`{...}` or the whole `data:` line), if it has one.
pub fn stamp_of(data: &[u8]) -> Option<u64> {
    let tail = data.len().checked_sub(STAMP_DIGITS + 1)?;
    // The event ends `...:DIGITS}`, possibly followed by the line's own `\n`s.
    let mut end = data.len();
    while end > tail && matches!(data[end - 1], b'\n' | b'\r' | b'}') {
        end -= 1;
    }
    let digits = data.get(end.checked_sub(STAMP_DIGITS)?..end)?;
    if data.get(end.checked_sub(STAMP_DIGITS + 1)?) != Some(&b':') {
        return None;
    }
    digits.iter().try_fold(0u64, |acc, d| d.is_ascii_digit().then(|| acc * 10 + u64::from(d - b'0')))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::chunk::parse_chunk;

    fn data_of(event: &[u8]) -> &[u8] {
        let s = event.strip_prefix(b"data: ").expect("data line");
        &s[..s.len() - 2]
    }

    #[test]
    fn events_parse_as_the_tool_reads_them_and_carry_the_stamp() {
        for flavor in [Flavor::Chat, Flavor::Completion] {
            let t = Template::build(flavor, "bench", 5, 3);
            assert_eq!(t.events(), 5, "3 tokens, final usage, [DONE]");
            let all = t.stamped(0, t.events(), 1_764_000_000_123_456_789);
            let text = std::str::from_utf8(&all).unwrap();
            let events: Vec<&str> = text.split_inclusive("\n\n").collect();
            assert_eq!(events.len(), 5);
            for (k, ev) in events[..3].iter().enumerate() {
                let d = data_of(ev.as_bytes());
                let info = parse_chunk(d).expect("valid chunk");
                assert!(info.has_choices);
                assert_eq!(info.completion_tokens, Some(k as u64 + 1));
                assert_eq!(info.prompt_tokens, Some(5));
                assert_eq!(stamp_of(d), Some(1_764_000_000_123_456_789));
                assert_eq!(stamp_of(ev.as_bytes()), Some(1_764_000_000_123_456_789));
            }
            let last = parse_chunk(data_of(events[3].as_bytes())).unwrap();
            assert!(!last.has_choices);
            assert_eq!(last.completion_tokens, Some(3));
            assert_eq!(events[4], "data: [DONE]\n\n");
            assert_eq!(stamp_of(b"[DONE]"), None);
        }
    }

    #[test]
    fn batches_cover_every_event_once() {
        let t = Template::build(Flavor::Chat, "m", 1, 50);
        let (mut from, mut n) = (0, 0);
        while from < t.events() {
            let to = t.batch_end(from, 1000, usize::MAX);
            assert!(to > from);
            n += to - from;
            from = to;
        }
        assert_eq!(n, t.events());
        assert_eq!(t.batch_end(0, 1, usize::MAX), 1, "at least one event");
        assert_eq!(t.batch_end(0, 1, 16), 1, "the byte limit first");
        assert_eq!(t.batch_end(0, 1 << 20, 16), 16, "the event limit first");
        assert_eq!(t.batch_end(48, 1 << 20, 16), t.events(), "the last frame is short");
        assert_eq!(t.batch_end(3, 1 << 20, 0), 4, "0 events reads as 1");
        assert_eq!((t.tokens_in(0, t.events()), t.tokens_in(48, t.events()), t.tokens_in(50, 52)), (50, 2, 0));
    }
}
