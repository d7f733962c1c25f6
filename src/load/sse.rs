//! Incremental Server-Sent Events decoder for the streaming hot path (no per-event allocation).
//!
//! Follows the WHATWG `text/event-stream` rules: lines end in `\n`, `\r\n` or `\r`;
//! a leading byte-order mark is skipped; lines starting with `:` are comments; `data:`
//! lines (one optional space after the colon) are joined with `\n`; `event:` sets the
//! event type; `id:`, `retry:` and unknown fields are ignored; a blank line dispatches
//! the event if it had at least one `data` line.
//!
//! One deliberate extension: llama.cpp reports streaming failures as an `error: {...}`
//! line instead of `event: error` + `data: {...}`. Such a line is treated as a data line
//! that also marks the event as an error, so the caller sees [`SseEvent::Error`].

/// Default bound on the length of one line and on the data of one event: 1 MiB
/// ([`super::limits::SSE_LINE_MAX`]).
pub const DEFAULT_MAX_LINE: usize = super::limits::SSE_LINE_MAX;

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// One dispatched event. Slices borrow the decoder's input or its internal buffers
/// and are only valid during the callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SseEvent<'a> {
    /// Data of an ordinary event; several `data:` lines are joined with `\n`.
    Data(&'a [u8]),
    /// The OpenAI end-of-stream sentinel `data: [DONE]`.
    Done,
    /// Data of an event typed `error` (`event: error`, or llama.cpp's `error:` line).
    Error(&'a [u8]),
}

/// Why decoding stopped. The decoder is reset for a new stream after an error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// A single line exceeded the limit (in bytes).
    #[error("SSE line exceeds {limit} bytes")]
    LineTooLong {
        /// The configured limit, in bytes.
        limit: usize,
    },
    /// The joined data of one event exceeded the limit (in bytes).
    #[error("SSE event data exceeds {limit} bytes")]
    EventTooLarge {
        /// The configured limit, in bytes.
        limit: usize,
    },
    /// More than the limit of bytes arrived since the last event (or the stream start).
    #[error("SSE stream carried over {limit} bytes without an event")]
    NoEvents {
        /// The limit, in bytes ([`super::limits::SSE_WITHOUT_EVENT_MAX`]).
        limit: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bom {
    /// At stream start, this many BOM bytes seen so far (0..=2).
    Matching(usize),
    /// Past the stream start.
    Done,
}

/// Incremental SSE decoder: feed it body reads as they arrive, split anywhere.
///
/// Only an incomplete trailing line is copied between reads, and the data of an event
/// whose blank line has not arrived yet. An event whose single `data:` line and blank
/// line arrive in the same read is handed out as a slice of that read, without copying.
#[derive(Debug, Clone)]
pub struct SseDecoder {
    /// Bytes of the incomplete line at the end of the previous read.
    line: Vec<u8>,
    /// Data of the current event when it could not stay borrowed.
    data: Vec<u8>,
    /// Whether `data` holds the current event's data.
    has_owned_data: bool,
    /// The current event's type is `error`.
    is_error: bool,
    /// The previous read ended in `\r`; a leading `\n` of the next read belongs to it.
    skip_lf: bool,
    bom: Bom,
    /// Limit on one line and on one event's data, in bytes.
    max_line: usize,
    /// Bytes fed since creation.
    bytes_seen: u64,
    /// Events dispatched since creation.
    events_seen: u64,
    /// `bytes_seen` when the last event was dispatched (or the stream began).
    bytes_at_event: u64,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl SseDecoder {
    /// A decoder with the default limit, [`DEFAULT_MAX_LINE`].
    pub fn new() -> Self {
        Self::with_max_line(DEFAULT_MAX_LINE)
    }

    /// A decoder limiting lines and event data to `max_line` bytes.
    pub fn with_max_line(max_line: usize) -> Self {
        Self {
            line: Vec::new(),
            data: Vec::new(),
            has_owned_data: false,
            is_error: false,
            skip_lf: false,
            bom: Bom::Matching(0),
            max_line,
            bytes_seen: 0,
            events_seen: 0,
            bytes_at_event: 0,
        }
    }

    /// Decodes one read of the body, calling `on_event` for every completed event.
    ///
    /// On error the stream state is discarded (the counters are kept).
    pub fn feed<F: FnMut(SseEvent<'_>)>(&mut self, bytes: &[u8], mut on_event: F) -> Result<(), SseError> {
        self.bytes_seen = self.bytes_seen.saturating_add(bytes.len() as u64);
        let bytes = self.skip_prefix(bytes);
        if bytes.is_empty() {
            return Ok(());
        }
        let mut result = self.decode(bytes, &mut on_event);
        let limit = super::limits::SSE_WITHOUT_EVENT_MAX;
        if result.is_ok() && self.bytes_seen.saturating_sub(self.bytes_at_event) > limit {
            result = Err(SseError::NoEvents { limit });
        }
        if result.is_err() {
            self.reset();
        }
        result
    }

    /// Ends the stream: a trailing line without line ending is processed, and an event
    /// lacking its blank line is dispatched. The decoder is then ready for a new stream.
    pub fn finish<F: FnMut(SseEvent<'_>)>(&mut self, mut on_event: F) -> Result<(), SseError> {
        if let Bom::Matching(n) = self.bom {
            self.line.extend_from_slice(&BOM[..n]);
        }
        let carry = std::mem::take(&mut self.line);
        let mut pending = None;
        let result = if carry.is_empty() { Ok(()) } else { self.on_line(&carry, &mut pending, &mut on_event) };
        if result.is_ok() {
            self.dispatch(&mut pending, &mut on_event);
        }
        self.line = carry;
        self.reset();
        result
    }

    /// Discards any partial line or event and expects a new stream; counters are kept.
    pub fn reset(&mut self) {
        self.line.clear();
        self.data.clear();
        self.has_owned_data = false;
        self.is_error = false;
        self.skip_lf = false;
        self.bom = Bom::Matching(0);
        self.bytes_at_event = self.bytes_seen;
    }

    /// Total bytes fed, in bytes.
    pub fn bytes_seen(&self) -> u64 {
        self.bytes_seen
    }

    /// Number of events dispatched (including `[DONE]` and errors).
    pub fn events_seen(&self) -> u64 {
        self.events_seen
    }

    /// The configured limit on a line and on an event's data, in bytes.
    pub fn max_line(&self) -> usize {
        self.max_line
    }

    /// Drops a byte-order mark at stream start and a `\n` completing a split `\r\n`.
    fn skip_prefix<'b>(&mut self, mut bytes: &'b [u8]) -> &'b [u8] {
        while let Bom::Matching(n) = self.bom {
            let Some((&first, rest)) = bytes.split_first() else {
                return bytes;
            };
            if first == BOM[n] {
                bytes = rest;
                self.bom = if n + 1 == BOM.len() { Bom::Done } else { Bom::Matching(n + 1) };
            } else {
                // Not a BOM after all: the bytes matched so far start the first line.
                self.bom = Bom::Done;
                self.line.extend_from_slice(&BOM[..n]);
            }
        }
        if self.skip_lf && !bytes.is_empty() {
            self.skip_lf = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        bytes
    }

    fn decode<F: FnMut(SseEvent<'_>)>(&mut self, bytes: &[u8], on_event: &mut F) -> Result<(), SseError> {
        let Some((head, rest)) = self.split_line(bytes) else {
            return self.buffer_partial(bytes);
        };
        let mut carry = std::mem::take(&mut self.line);
        let tail = self.decode_lines(&mut carry, head, rest, on_event);
        carry.clear();
        self.line = carry;
        self.buffer_partial(tail?)
    }

    /// Handles every complete line of one read; returns the incomplete remainder.
    fn decode_lines<'b, F: FnMut(SseEvent<'_>)>(
        &mut self,
        carry: &mut Vec<u8>,
        head: &'b [u8],
        mut rest: &'b [u8],
        on_event: &mut F,
    ) -> Result<&'b [u8], SseError> {
        let first: &[u8] = if carry.is_empty() {
            head
        } else {
            carry.extend_from_slice(head);
            carry
        };
        let mut pending = None;
        self.on_line(first, &mut pending, on_event)?;
        while let Some((line, after)) = self.split_line(rest) {
            self.on_line(line, &mut pending, on_event)?;
            rest = after;
        }
        // The event continues in a later read: its data must outlive this one.
        if let Some(data) = pending {
            self.own_data(data);
        }
        Ok(rest)
    }

    /// Splits off the first complete line, without its line ending.
    fn split_line<'b>(&mut self, bytes: &'b [u8]) -> Option<(&'b [u8], &'b [u8])> {
        let end = memchr::memchr2(b'\n', b'\r', bytes)?;
        let ending = match (bytes[end], bytes.get(end + 1)) {
            (b'\r', Some(b'\n')) => 2,
            (b'\r', None) => {
                self.skip_lf = true;
                1
            }
            _ => 1,
        };
        Some((&bytes[..end], &bytes[end + ending..]))
    }

    fn buffer_partial(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        if self.line.len().saturating_add(bytes.len()) > self.max_line {
            return Err(SseError::LineTooLong { limit: self.max_line });
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn on_line<'x, F: FnMut(SseEvent<'_>)>(
        &mut self,
        line: &'x [u8],
        pending: &mut Option<&'x [u8]>,
        on_event: &mut F,
    ) -> Result<(), SseError> {
        if line.len() > self.max_line {
            return Err(SseError::LineTooLong { limit: self.max_line });
        }
        match line.first() {
            None => {
                self.dispatch(pending, on_event);
                Ok(())
            }
            Some(b':') => Ok(()),
            Some(_) => self.on_field(line, pending),
        }
    }

    fn on_field<'x>(&mut self, line: &'x [u8], pending: &mut Option<&'x [u8]>) -> Result<(), SseError> {
        let (name, value) = split_field(line);
        match name {
            b"data" => self.push_data(value, pending),
            b"event" => {
                self.is_error = value == b"error";
                Ok(())
            }
            b"error" => {
                self.is_error = true;
                self.push_data(value, pending)
            }
            _ => Ok(()),
        }
    }

    fn push_data<'x>(&mut self, value: &'x [u8], pending: &mut Option<&'x [u8]>) -> Result<(), SseError> {
        if let Some(previous) = pending.take() {
            self.own_data(previous);
        } else if !self.has_owned_data {
            *pending = Some(value);
            return Ok(());
        }
        if self.data.len().saturating_add(1 + value.len()) > self.max_line {
            return Err(SseError::EventTooLarge { limit: self.max_line });
        }
        self.data.push(b'\n');
        self.data.extend_from_slice(value);
        Ok(())
    }

    fn own_data(&mut self, data: &[u8]) {
        self.data.clear();
        self.data.extend_from_slice(data);
        self.has_owned_data = true;
    }

    /// Blank line: hands out the current event if it has data, then starts a new one.
    fn dispatch<F: FnMut(SseEvent<'_>)>(&mut self, pending: &mut Option<&[u8]>, on_event: &mut F) {
        let is_error = std::mem::take(&mut self.is_error);
        let data: &[u8] = match pending.take() {
            Some(data) => data,
            None if self.has_owned_data => &self.data,
            None => return,
        };
        self.events_seen = self.events_seen.saturating_add(1);
        self.bytes_at_event = self.bytes_seen;
        on_event(classify(data, is_error));
        self.data.clear();
        self.has_owned_data = false;
    }
}

/// Splits `name:value`, dropping one space after the colon; no colon means empty value.
fn split_field(line: &[u8]) -> (&[u8], &[u8]) {
    let Some(colon) = line.iter().position(|&b| b == b':') else {
        return (line, &[]);
    };
    let value = &line[colon + 1..];
    let value = value.strip_prefix(b" ").unwrap_or(value);
    (&line[..colon], value)
}

fn classify(data: &[u8], is_error: bool) -> SseEvent<'_> {
    if is_error {
        SseEvent::Error(data)
    } else if data == b"[DONE]" {
        SseEvent::Done
    } else {
        SseEvent::Data(data)
    }
}

#[cfg(test)]
#[path = "sse_tests.rs"]
mod tests;
