//! Fast path of the chunk parser: one forward scan over the common chunk shape (vLLM, SGLang
//! and llama.cpp chat or completion chunks with or without usage), without serde.
//!
//! It answers only when it is sure to agree with the full parser ([`super::parse_chunk`]'s
//! serde path): anything unusual (escapes other than the one-character ones, `\u`, nested
//! values in fields it does not read, duplicate keys, error fields, numbers that are not plain
//! unsigned integers, invalid UTF-8 where the full parser checks it) makes it give up with
//! `None`, and the full parser decides. A property test in `chunk_tests.rs` checks the
//! agreement on generated chunks.

use super::template::{Field, Recorder};
use super::{ChunkInfo, FinishReason};

/// Parses `data` if it has the common shape; None hands it to the full parser.
pub(super) fn parse(data: &[u8]) -> Option<ChunkInfo> {
    let mut cur = Cursor { b: data, i: 0, rec: None };
    let info = cur.chunk()?;
    cur.ws();
    (cur.i == data.len()).then_some(info)
}

/// [`parse`], noting in `rec` where the values that may change from one chunk of a stream to
/// the next (text and numbers) lie (`chunk_template.rs`).
pub(super) fn parse_recording(data: &[u8], rec: &mut Recorder) -> Option<ChunkInfo> {
    let mut cur = Cursor { b: data, i: 0, rec: Some(rec) };
    let info = cur.chunk()?;
    cur.ws();
    (cur.i == data.len()).then_some(info)
}

/// Bytes that end the plain run of a string: the quote, the backslash, control characters.
const STOPS: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 0x20 {
        t[c] = true;
        c += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

pub(super) struct Cursor<'a, 'r> {
    b: &'a [u8],
    i: usize,
    /// Where the variable values lie, when the caller learns a template.
    rec: Option<&'r mut Recorder>,
}

/// Bits of the keys already seen in one object (the full parser rejects duplicates).
#[derive(Default)]
struct Seen(u8);

impl Seen {
    fn first(&mut self, bit: u8) -> Option<()> {
        if self.0 & bit != 0 {
            return None;
        }
        self.0 |= bit;
        Some(())
    }
}

impl<'a> Cursor<'a, '_> {
    /// A cursor at byte `i` of `b`, recording nothing.
    pub(super) fn at(b: &'a [u8], i: usize) -> Self {
        Self { b, i, rec: None }
    }

    /// The position of the next byte.
    pub(super) fn pos(&self) -> usize {
        self.i
    }

    fn note(&mut self, start: usize, field: Field) {
        if let Some(rec) = self.rec.as_mut() {
            rec.note(start, self.i, field);
        }
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// Consumes `lit` if the input continues with it.
    fn literal(&mut self, lit: &[u8]) -> bool {
        let hit = self.b[self.i..].starts_with(lit);
        if hit {
            self.i += lit.len();
        }
        hit
    }

    /// Consumes `null` if it comes next.
    fn null(&mut self) -> bool {
        self.ws();
        self.literal(b"null")
    }

    /// A string's raw bytes between the quotes, and how many one-character escapes it holds.
    /// Gives up on `\u`, on other escapes and on control characters.
    pub(super) fn string(&mut self, escapes_ok: bool) -> Option<(&'a [u8], usize)> {
        self.eat(b'"')?;
        let start = self.i;
        let mut escapes = 0;
        loop {
            let rest = &self.b[self.i..];
            let stop = rest.iter().position(|&c| STOPS[usize::from(c)])?;
            self.i += stop + 1;
            match rest[stop] {
                b'"' => return Some((&self.b[start..self.i - 1], escapes)),
                b'\\' if escapes_ok => {
                    let e = *self.b.get(self.i)?;
                    if !matches!(e, b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') {
                        return None;
                    }
                    self.i += 1;
                    escapes += 1;
                }
                _ => return None,
            }
        }
    }

    /// A string without escapes, checked as UTF-8 (as the full parser checks kept strings).
    fn text(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.string(false)?.0).ok()
    }

    /// Byte length of a string once unescaped; null counts 0.
    fn text_len(&mut self) -> Option<usize> {
        if self.null() {
            return Some(0);
        }
        let start = self.i;
        let len = self.string_len()?;
        self.note(start, Field::Text);
        Some(len)
    }

    /// Byte length of the string that comes next (no whitespace before it) once unescaped,
    /// checked as UTF-8.
    pub(super) fn string_len(&mut self) -> Option<usize> {
        let (raw, escapes) = self.string(true)?;
        // Escapes are ASCII, so the raw bytes are valid UTF-8 exactly when the text is.
        std::str::from_utf8(raw).ok()?;
        Some(raw.len() - escapes)
    }

    /// A plain unsigned integer, noted as `field`'s value.
    fn uint(&mut self, field: Field) -> Option<u64> {
        self.ws();
        let start = self.i;
        let n = self.digits()?;
        self.note(start, field);
        Some(n)
    }

    /// A plain unsigned integer (no sign, fraction, exponent or leading zero) within u64,
    /// starting right here.
    pub(super) fn digits(&mut self) -> Option<u64> {
        let start = self.i;
        let mut n: u64 = 0;
        while let Some(&c @ b'0'..=b'9') = self.b.get(self.i) {
            n = n.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
            self.i += 1;
        }
        let len = self.i - start;
        let leading_zero = len > 1 && self.b[start] == b'0';
        let more = matches!(self.b.get(self.i), Some(b'.' | b'e' | b'E'));
        (len > 0 && !leading_zero && !more).then_some(n)
    }

    fn opt_uint(&mut self, field: Field) -> Option<Option<u64>> {
        if self.null() { Some(None) } else { self.uint(field).map(Some) }
    }

    /// Skips the value of a field nobody reads: null, a boolean, a plain unsigned integer or
    /// a string without escapes. Anything else gives up.
    fn skip(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string(false).map(drop),
            b'0'..=b'9' => self.uint(Field::Unread).map(drop),
            _ => (self.literal(b"null") || self.literal(b"true") || self.literal(b"false")).then_some(()),
        }
    }

    /// Walks the members of an object, handing each key to `member`, which reads the value.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &[u8]) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            let (key, _) = self.string(false)?;
            self.eat(b':')?;
            member(self, key)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A key the caller does not read: skipped, but the full parser checks it as UTF-8.
    fn skip_member(&mut self, key: &[u8]) -> Option<()> {
        (key.is_ascii() || std::str::from_utf8(key).is_ok()).then_some(())?;
        self.skip()
    }

    fn chunk(&mut self) -> Option<ChunkInfo> {
        let mut info = ChunkInfo::default();
        let mut seen = Seen::default();
        self.object(|cur, key| match key {
            b"choices" => {
                seen.first(1)?;
                cur.choices(&mut info)
            }
            b"usage" => {
                seen.first(2)?;
                if cur.null() { Some(()) } else { cur.usage(&mut info) }
            }
            b"object" => {
                seen.first(4)?;
                // A flat error (`"object": "error"`) is the full parser's business.
                if cur.null() { Some(()) } else { (cur.text()? != "error").then_some(()) }
            }
            b"error" | b"message" | b"type" | b"code" => None,
            _ => cur.skip_member(key),
        })?;
        Some(info)
    }

    fn usage(&mut self, info: &mut ChunkInfo) -> Option<()> {
        let mut seen = Seen::default();
        self.object(|cur, key| match key {
            b"prompt_tokens" => {
                seen.first(1)?;
                info.prompt_tokens = cur.opt_uint(Field::Prompt)?;
                Some(())
            }
            b"completion_tokens" => {
                seen.first(2)?;
                info.completion_tokens = cur.opt_uint(Field::Completion)?;
                Some(())
            }
            b"prompt_tokens_details" => {
                seen.first(4)?;
                if cur.null() { Some(()) } else { cur.details(info) }
            }
            _ => cur.skip_member(key),
        })
    }

    fn details(&mut self, info: &mut ChunkInfo) -> Option<()> {
        let mut seen = Seen::default();
        self.object(|cur, key| match key {
            b"cached_tokens" => {
                seen.first(1)?;
                info.cached_tokens = cur.opt_uint(Field::Cached)?;
                Some(())
            }
            _ => cur.skip_member(key),
        })
    }

    fn choices(&mut self, info: &mut ChunkInfo) -> Option<()> {
        if self.null() {
            return Some(());
        }
        self.eat(b'[')?;
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            self.choice(info)?;
            info.has_choices = true;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn choice(&mut self, info: &mut ChunkInfo) -> Option<()> {
        let (mut seen, mut bytes, mut finish) = (Seen::default(), 0usize, None);
        self.object(|cur, key| match key {
            b"delta" => {
                seen.first(1)?;
                if cur.null() { Some(()) } else { cur.delta(&mut bytes) }
            }
            b"text" => {
                seen.first(2)?;
                bytes += cur.text_len()?;
                Some(())
            }
            b"finish_reason" => {
                seen.first(4)?;
                finish = if cur.null() { None } else { Some(FinishReason::from_name(cur.text()?)) };
                Some(())
            }
            _ => cur.skip_member(key),
        })?;
        info.content_bytes = info.content_bytes.saturating_add(bytes);
        if info.finish_reason.is_none() {
            info.finish_reason = finish;
        }
        Some(())
    }

    fn delta(&mut self, bytes: &mut usize) -> Option<()> {
        let (mut seen, mut content, mut reasoning, mut reasoning_new) = (Seen::default(), None, None, None);
        self.object(|cur, key| {
            let (bit, slot) = match key {
                b"content" => (1, &mut content),
                b"reasoning_content" => (2, &mut reasoning),
                b"reasoning" => (4, &mut reasoning_new),
                _ => return cur.skip_member(key),
            };
            seen.first(bit)?;
            *slot = if cur.null() { None } else { Some(cur.text_len()?) };
            Some(())
        })?;
        if reasoning.is_some() && reasoning_new.is_some() {
            // Text bytes add up in a template, but these two count as their larger one.
            if let Some(rec) = self.rec.as_mut() {
                rec.spoil();
            }
        }
        let len = |n: Option<usize>| n.unwrap_or(0);
        *bytes += len(content) + len(reasoning).max(len(reasoning_new));
        Some(())
    }
}
