//! The chunk shape of a stream, learned from one chunk and matched against the next: a
//! stream's chunks usually differ only in their text and their numbers (usage, `created`).
//!
//! The fast path ([`super::fast`]) notes where those values lie while it parses a chunk. The
//! next chunk then matches when every byte between them is the same and every value reads as
//! the fast path reads it: the answer is the learned one with the new text length and numbers.
//! Anything else (another key, a finish reason, whitespace moved, a value the fast path would
//! not take) misses, and the chunk is parsed afresh. A property test in
//! `chunk_template_tests.rs` checks that whenever a template answers, it answers what the fast
//! path (and the full parser) does.

use super::fast::{self, Cursor};
use super::{ChunkError, ChunkInfo, parse_chunk_full};

/// What a variable value of a chunk is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    /// Text whose unescaped bytes add to `content_bytes`.
    Text,
    /// `usage.prompt_tokens`.
    Prompt,
    /// `usage.completion_tokens`.
    Completion,
    /// `usage.prompt_tokens_details.cached_tokens`.
    Cached,
    /// A number nobody reads (`created`, `index`, `total_tokens`).
    Unread,
}

/// One variable value: its byte range in the learned chunk, and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    start: usize,
    end: usize,
    field: Field,
}

/// Where the fast path met variable values while parsing one chunk.
#[derive(Debug, Default)]
pub(super) struct Recorder {
    slots: Vec<Slot>,
    /// The chunk's answer is not the sum of its values (two reasoning texts in one delta).
    spoiled: bool,
}

impl Recorder {
    /// Notes the value at `start..end` as `field`.
    pub(super) fn note(&mut self, start: usize, end: usize, field: Field) {
        self.slots.push(Slot { start, end, field });
    }

    /// Marks the chunk as unfit for a template.
    pub(super) fn spoil(&mut self) {
        self.spoiled = true;
    }

    fn clear(&mut self) {
        self.slots.clear();
        self.spoiled = false;
    }
}

/// A stream's chunk parser: the learned template first, then the fast path (which learns a
/// new template), then the full parser. Answers exactly what [`super::parse_chunk`] does.
#[derive(Debug, Default)]
pub struct ChunkReader {
    /// The learned chunk's bytes; empty when nothing is learned.
    learned: Vec<u8>,
    rec: Recorder,
    /// The learned chunk's answer, its text length and numbers aside.
    base: ChunkInfo,
    /// A second chunk matched since the template was learned: the numbers it had equal to the
    /// learned ones (`created`, `index`, `prompt_tokens` in a stream) are compared as bytes.
    settled: bool,
}

impl ChunkReader {
    /// A reader that has learned nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses one SSE `data` payload of the stream.
    pub fn parse(&mut self, data: &[u8]) -> Result<ChunkInfo, ChunkError> {
        if let Some(info) = self.matched(data) {
            if !self.settled {
                self.settle(data);
            }
            return Ok(info);
        }
        self.learned.clear();
        self.rec.clear();
        self.settled = false;
        match fast::parse_recording(data, &mut self.rec) {
            Some(info) => {
                if !self.rec.spoiled {
                    self.learned.extend_from_slice(data);
                    self.base = ChunkInfo { content_bytes: 0, ..info.clone() };
                }
                Ok(info)
            }
            None => parse_chunk_full(data),
        }
    }

    /// The answer for `data` if it has the learned shape.
    fn matched(&self, data: &[u8]) -> Option<ChunkInfo> {
        if self.learned.is_empty() {
            return None;
        }
        let mut info = self.base.clone();
        let (mut at, mut from) = (0, 0);
        for slot in &self.rec.slots {
            let same = &self.learned[from..slot.start];
            if !data.get(at..)?.starts_with(same) {
                return None;
            }
            at += same.len();
            let n = match slot.field {
                Field::Text => {
                    let mut cur = Cursor::at(data, at);
                    info.content_bytes += cur.string_len()?;
                    at = cur.pos();
                    None
                }
                _ => Some(plain_uint(data, &mut at)?),
            };
            match slot.field {
                Field::Prompt => info.prompt_tokens = n,
                Field::Completion => info.completion_tokens = n,
                Field::Cached => info.cached_tokens = n,
                Field::Text | Field::Unread => {}
            }
            from = slot.end;
        }
        (data.get(at..)? == &self.learned[from..]).then_some(info)
    }
}

impl ChunkReader {
    /// Keeps as values only the text and the numbers that differ between the learned chunk and
    /// `data`, which matched it: the bytes of the others are compared from now on, and a
    /// chunk where one of them changes misses (and teaches the template afresh).
    fn settle(&mut self, data: &[u8]) {
        self.settled = true;
        let (mut at, mut from) = (0, 0);
        let learned = &self.learned;
        self.rec.slots.retain(|slot| {
            at += slot.start - from;
            let start = at;
            // `data` matched, so every value reads.
            let read = match slot.field {
                Field::Text => {
                    let mut cur = Cursor::at(data, at);
                    cur.string_len().map(|_| at = cur.pos())
                }
                _ => plain_uint(data, &mut at).map(drop),
            };
            from = slot.end;
            let same = read.is_some() && data[start..at] == learned[slot.start..slot.end];
            slot.field == Field::Text || !same
        });
    }
}

/// The plain unsigned integer at `*at`, as the fast path reads it ([`Cursor::digits`]), moving
/// `*at` past it. Up to 19 digits cannot overflow a u64, so they are summed unchecked.
fn plain_uint(data: &[u8], at: &mut usize) -> Option<u64> {
    let rest = &data[*at..];
    let len = rest.iter().position(|b| !b.is_ascii_digit()).unwrap_or(rest.len());
    if len == 0 || len > 19 {
        let mut cur = Cursor::at(data, *at);
        let n = cur.digits()?;
        *at = cur.pos();
        return Some(n);
    }
    let more = matches!(rest.get(len), Some(b'.' | b'e' | b'E'));
    if (len > 1 && rest[0] == b'0') || more {
        return None;
    }
    *at += len;
    Some(rest[..len].iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0')))
}

#[cfg(test)]
#[path = "chunk_template_tests.rs"]
mod tests;
