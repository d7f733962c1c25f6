//! Fuzz target `sse`: the incremental SSE decoder (`src/load/sse.rs`).
//!
//! Input layout: byte 0 picks the line limit (high bit set: a small limit of 1..=128 bytes,
//! else the default), byte 1 the number of split points (0..=31), then two bytes per split
//! point (little-endian offset into the body, modulo its length + 1); the rest is the body.
//!
//! Checked: no panic; feeding the body split at those points gives the same events and the
//! same outcome as one feed of the whole body, and both equal a plain line-by-line model of
//! the rules in the module's doc comment; a line or an event longer than the limit is an
//! error (never a longer line or event handed out); the counters add up; a decoder is
//! reusable after `finish` or an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use llm_decode_bench::load::sse::{DEFAULT_MAX_LINE, SseDecoder, SseError, SseEvent};

/// An owned copy of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ev {
    Data(Vec<u8>),
    Done,
    Error(Vec<u8>),
}

impl Ev {
    fn of(e: SseEvent<'_>) -> Self {
        match e {
            SseEvent::Data(d) => Ev::Data(d.to_vec()),
            SseEvent::Done => Ev::Done,
            SseEvent::Error(d) => Ev::Error(d.to_vec()),
        }
    }

    fn len(&self) -> usize {
        match self {
            Ev::Data(d) | Ev::Error(d) => d.len(),
            Ev::Done => 6,
        }
    }
}

/// The events seen and how the stream ended.
type Outcome = (Vec<Ev>, Result<(), SseError>);

struct Case<'a> {
    limit: usize,
    cuts: Vec<usize>,
    body: &'a [u8],
}

fn case(data: &[u8]) -> Option<Case<'_>> {
    let (&sel, rest) = data.split_first()?;
    let (&n, mut rest) = rest.split_first()?;
    let limit = if sel & 0x80 != 0 { usize::from(sel & 0x7f) + 1 } else { DEFAULT_MAX_LINE };
    let mut raw = Vec::new();
    for _ in 0..n % 32 {
        let Some((pair, after)) = rest.split_first_chunk::<2>() else { break };
        raw.push(usize::from(u16::from_le_bytes(*pair)));
        rest = after;
    }
    let mut cuts: Vec<usize> = raw.into_iter().map(|c| c % (rest.len() + 1)).collect();
    cuts.sort_unstable();
    Some(Case { limit, cuts, body: rest })
}

/// Feeds `chunks` in order, then finishes, stopping at the first error.
fn run<'a>(dec: &mut SseDecoder, chunks: impl IntoIterator<Item = &'a [u8]>) -> Outcome {
    let mut events = Vec::new();
    for chunk in chunks {
        let before = dec.bytes_seen();
        let fed = dec.feed(chunk, |e| events.push(Ev::of(e)));
        assert_eq!(dec.bytes_seen(), before + chunk.len() as u64);
        if let Err(e) = fed {
            return (events, Err(e));
        }
    }
    let end = dec.finish(|e| events.push(Ev::of(e)));
    (events, end)
}

fn chunks<'a>(body: &'a [u8], cuts: &'a [usize]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let starts = std::iter::once(0).chain(cuts.iter().copied());
    let ends = cuts.iter().copied().chain(std::iter::once(body.len()));
    starts.zip(ends).map(move |(a, b)| &body[a..b])
}

/// Splits the body into lines at `\r\n`, `\n` or `\r`; the last element is the unterminated
/// remainder (possibly empty).
fn lines(body: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
        out.push(&rest[..end]);
        let skip = if rest[end] == b'\r' && rest.get(end + 1) == Some(&b'\n') { 2 } else { 1 };
        rest = &rest[end + skip..];
    }
    out.push(rest);
    out
}

/// The event being built by the model.
#[derive(Default)]
struct Pending {
    data: Option<Vec<u8>>,
    is_error: bool,
}

impl Pending {
    fn dispatch(&mut self, out: &mut Vec<Ev>) {
        let is_error = std::mem::take(&mut self.is_error);
        let Some(data) = self.data.take() else { return };
        out.push(match (is_error, data.as_slice()) {
            (true, _) => Ev::Error(data),
            (false, b"[DONE]") => Ev::Done,
            (false, _) => Ev::Data(data),
        });
    }

    fn push(&mut self, value: &[u8], limit: usize) -> Result<(), SseError> {
        match &mut self.data {
            None => self.data = Some(value.to_vec()),
            Some(d) if d.len() + 1 + value.len() > limit => return Err(SseError::EventTooLarge { limit }),
            Some(d) => {
                d.push(b'\n');
                d.extend_from_slice(value);
            }
        }
        Ok(())
    }
}

/// The decoding rules restated over the whole body at once.
fn model(body: &[u8], limit: usize) -> Outcome {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let all = lines(body);
    let (last, complete) = all.split_last().expect("at least the remainder");
    let mut out = Vec::new();
    let mut ev = Pending::default();
    for line in complete.iter().chain(Some(last).filter(|l| !l.is_empty())) {
        if let Err(e) = model_line(line, limit, &mut ev, &mut out) {
            return (out, Err(e));
        }
    }
    ev.dispatch(&mut out);
    (out, Ok(()))
}

fn model_line(line: &[u8], limit: usize, ev: &mut Pending, out: &mut Vec<Ev>) -> Result<(), SseError> {
    if line.len() > limit {
        return Err(SseError::LineTooLong { limit });
    }
    if line.is_empty() {
        ev.dispatch(out);
        return Ok(());
    }
    if line[0] == b':' {
        return Ok(());
    }
    let (name, value) = match line.iter().position(|&b| b == b':') {
        Some(c) => (&line[..c], line[c + 1..].strip_prefix(b" ").unwrap_or(&line[c + 1..])),
        None => (line, &[][..]),
    };
    match name {
        b"data" => ev.push(value, limit),
        b"event" => {
            ev.is_error = value == b"error";
            Ok(())
        }
        b"error" => {
            ev.is_error = true;
            ev.push(value, limit)
        }
        _ => Ok(()),
    }
}

fn check(c: &Case<'_>) {
    let mut whole_dec = SseDecoder::with_max_line(c.limit);
    let whole = run(&mut whole_dec, [c.body]);
    let mut split_dec = SseDecoder::with_max_line(c.limit);
    let split = run(&mut split_dec, chunks(c.body, &c.cuts));
    assert_eq!(split, whole, "split at {:?}", c.cuts);
    assert_eq!(whole, model(c.body, c.limit));
    assert!(whole.0.iter().all(|e| e.len() <= c.limit), "an event longer than the limit");
    assert_eq!(split_dec.events_seen(), split.0.len() as u64);
    // After `finish` or an error the decoder starts a new stream.
    let again = run(&mut split_dec, chunks(c.body, &c.cuts));
    assert_eq!(again, whole, "second stream on a reused decoder");
}

fuzz_target!(|data: &[u8]| {
    if let Some(c) = case(data) {
        check(&c);
    }
});
