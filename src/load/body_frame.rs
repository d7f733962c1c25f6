//! Undoes an HTTP/1.1 body's framing in place (the own stream reader, `super::own_h1`):
//! chunked transfer encoding, a `Content-Length` body, or a body that ends when the server
//! closes the connection.
//!
//! [`BodyFrame::decode`] takes the bytes of one socket read and moves the body's data bytes to
//! the front of the same buffer (data never grows under decoding), so all the data of one read
//! goes to the SSE decoder at once, however many chunks it held. Chunked framing is read
//! strictly: hex sizes, `;` extensions skipped, CRLF line ends, trailers skipped.
//!
//! Hot path cost: one pass over the read's bytes, one `copy_within` per data run, no
//! allocation.

/// A body's framing went wrong (a body error's source).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A chunk-size line that is not hex, or too large.
    #[error("invalid chunk size line")]
    ChunkSize,
    /// A missing CRLF after a chunk-size line or a chunk's data.
    #[error("invalid chunk line end")]
    LineEnd,
}

/// Where the chunked decoder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunked {
    /// In the hex digits of a size line (`digits` read so far).
    Size { size: u64, digits: u8 },
    /// In a size line's extension, skipped up to its CR.
    Ext { size: u64 },
    /// After a size line's CR.
    SizeLf { size: u64 },
    /// In a chunk's data, `left` bytes to go.
    Data { left: u64 },
    /// After a chunk's data: its CR next.
    DataCr,
    /// After a chunk's data and CR.
    DataLf,
    /// After the last chunk's line, at the start of a trailer line (or the final CRLF).
    TrailerStart,
    /// In a trailer line.
    Trailer,
    /// After a trailer line's CR.
    TrailerLf,
    /// After the final CR.
    EndLf,
}

/// A body's framing and how far through it the reader is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFrame {
    /// Chunked transfer encoding.
    Chunked(ChunkedState),
    /// A `Content-Length` body: bytes still to come.
    Length(u64),
    /// Ends when the server closes the connection.
    Close,
    /// Read to its end.
    Done,
}

/// The chunked decoder's state (opaque).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkedState(Chunked);

/// What one [`BodyFrame::decode`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded {
    /// Data bytes now at the front of the buffer.
    pub data: usize,
    /// Bytes after the body's end (the framing is then [`BodyFrame::Done`]).
    pub extra: usize,
}

/// Most hex digits of a chunk size (16: any u64).
const MAX_DIGITS: u8 = 16;

impl BodyFrame {
    /// A chunked body, at its start.
    pub fn chunked() -> Self {
        Self::Chunked(ChunkedState(Chunked::Size { size: 0, digits: 0 }))
    }

    /// True once the body's end was read.
    pub fn is_done(&self) -> bool {
        matches!(self, Self::Done)
    }

    /// Decodes `buf` (the bytes of one read) in place: its data bytes move to its front.
    pub fn decode(&mut self, buf: &mut [u8]) -> Result<Decoded, FrameError> {
        match self {
            Self::Close => Ok(Decoded { data: buf.len(), extra: 0 }),
            Self::Done => Ok(Decoded { data: 0, extra: buf.len() }),
            Self::Length(left) => {
                let take = (*left).min(buf.len() as u64) as usize;
                *left -= take as u64;
                if *left == 0 {
                    *self = Self::Done;
                }
                Ok(Decoded { data: take, extra: buf.len() - take })
            }
            Self::Chunked(ChunkedState(state)) => {
                let (data, end) = dechunk(state, buf)?;
                if let Some(end) = end {
                    *self = Self::Done;
                    return Ok(Decoded { data, extra: buf.len() - end });
                }
                Ok(Decoded { data, extra: 0 })
            }
        }
    }
}

/// Runs the chunked state machine over `buf`, moving data to its front; returns the data's
/// length and, when the body ended, the offset just past its end.
fn dechunk(state: &mut Chunked, buf: &mut [u8]) -> Result<(usize, Option<usize>), FrameError> {
    let mut out = 0;
    let mut i = 0;
    while i < buf.len() {
        if let Chunked::Data { left } = state {
            let take = (*left).min((buf.len() - i) as u64) as usize;
            buf.copy_within(i..i + take, out);
            out += take;
            i += take;
            *left -= take as u64;
            if *left == 0 {
                *state = Chunked::DataCr;
            }
            continue;
        }
        let b = buf[i];
        i += 1;
        if step(state, b)? {
            return Ok((out, Some(i)));
        }
    }
    Ok((out, None))
}

/// One framing byte `b` (not data) in `state`; true at the body's end.
fn step(state: &mut Chunked, b: u8) -> Result<bool, FrameError> {
    *state = match *state {
        Chunked::Size { size, digits } => match (hex(b), b) {
            (Some(d), _) if digits < MAX_DIGITS => Chunked::Size { size: size << 4 | d, digits: digits + 1 },
            (Some(_), _) => return Err(FrameError::ChunkSize),
            (None, b';') if digits > 0 => Chunked::Ext { size },
            (None, b'\r') if digits > 0 => Chunked::SizeLf { size },
            // Whitespace before an extension, as some servers write it.
            (None, b' ' | b'\t') if digits > 0 => Chunked::Ext { size },
            _ => return Err(FrameError::ChunkSize),
        },
        Chunked::Ext { size } => match b {
            b'\r' => Chunked::SizeLf { size },
            b'\n' => return Err(FrameError::LineEnd),
            _ => Chunked::Ext { size },
        },
        Chunked::SizeLf { size } => match (b, size) {
            (b'\n', 0) => Chunked::TrailerStart,
            (b'\n', left) => Chunked::Data { left },
            _ => return Err(FrameError::LineEnd),
        },
        // Not reached: `dechunk` copies data bytes without stepping.
        Chunked::Data { left } => Chunked::Data { left },
        Chunked::DataCr => match b {
            b'\r' => Chunked::DataLf,
            _ => return Err(FrameError::LineEnd),
        },
        Chunked::DataLf | Chunked::TrailerLf => match (b, *state) {
            (b'\n', Chunked::DataLf) => Chunked::Size { size: 0, digits: 0 },
            (b'\n', _) => Chunked::TrailerStart,
            _ => return Err(FrameError::LineEnd),
        },
        Chunked::TrailerStart => match b {
            b'\r' => Chunked::EndLf,
            b'\n' => return Err(FrameError::LineEnd),
            _ => Chunked::Trailer,
        },
        Chunked::Trailer => match b {
            b'\r' => Chunked::TrailerLf,
            b'\n' => return Err(FrameError::LineEnd),
            _ => Chunked::Trailer,
        },
        Chunked::EndLf => match b {
            b'\n' => return Ok(true),
            _ => return Err(FrameError::LineEnd),
        },
    };
    Ok(false)
}

/// The value of hex digit `b`.
fn hex(b: u8) -> Option<u64> {
    (b as char).to_digit(16).map(u64::from)
}

#[cfg(test)]
#[path = "body_frame_tests.rs"]
mod tests;
