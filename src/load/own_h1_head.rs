//! The own stream reader's request head (written) and response head (parsed with the
//! `httparse` crate), for `super::own_h1`.
//!
//! Hot path cost: one request head built per request; the response head parsed once.

use super::body_frame::BodyFrame;
use reqwest::header::{
    CONNECTION, CONTENT_ENCODING, CONTENT_LENGTH, HeaderMap, HeaderName, HeaderValue, TRANSFER_ENCODING,
};
use reqwest::{Method, StatusCode};

/// Most header lines of a response head (more is `oversized`, as with hyper's 100).
pub const MAX_HEADERS: usize = 100;

/// The request head for `method` on `path_and_query` of `authority`, with `headers` (Host and
/// Content-Length written here, from `authority` and `body_len`; `close`: `Connection: close`).
pub fn request_head(
    method: &Method,
    path_and_query: &str,
    authority: &str,
    headers: &HeaderMap,
    body_len: Option<usize>,
    close: bool,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(if path_and_query.is_empty() { b"/" } else { path_and_query.as_bytes() });
    out.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    out.extend_from_slice(authority.as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in headers {
        if name == reqwest::header::HOST || name == CONTENT_LENGTH || (close && name == CONNECTION) {
            continue;
        }
        line(&mut out, name.as_str().as_bytes(), value.as_bytes());
    }
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    }
    if let Some(n) = body_len {
        line(&mut out, b"content-length", n.to_string().as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out
}

fn line(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// A parsed response head.
#[derive(Debug)]
pub struct Head {
    /// HTTP status.
    pub status: StatusCode,
    /// Response headers.
    pub headers: HeaderMap,
    /// Bytes the head took.
    pub len: usize,
    /// The server keeps the connection open after this answer (HTTP/1.1 without
    /// `Connection: close`, or HTTP/1.0 with `keep-alive`).
    pub keep_alive: bool,
}

/// Why a response head was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeadError {
    /// Over the read buffer or [`MAX_HEADERS`] lines: `oversized`.
    #[error("response head too large (over {0} bytes or {MAX_HEADERS} header lines)")]
    TooLarge(usize),
    /// Not an HTTP/1.x response head.
    #[error("invalid response head: {0}")]
    Invalid(String),
}

/// Parses the head at the start of `buf` (None: incomplete; `limit` is the most bytes it may
/// take, the read buffer's size).
pub fn parse(buf: &[u8], limit: usize) -> Result<Option<Head>, HeadError> {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut slots);
    let len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() >= limit => return Err(HeadError::TooLarge(limit)),
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooLarge(limit)),
        Err(e) => return Err(HeadError::Invalid(e.to_string())),
    };
    let code = resp.code.unwrap_or(0);
    let status = StatusCode::from_u16(code).map_err(|_| HeadError::Invalid(format!("status {code}")))?;
    let mut headers = HeaderMap::with_capacity(resp.headers.len());
    for h in resp.headers.iter() {
        let name = HeaderName::from_bytes(h.name.as_bytes()).map_err(|e| HeadError::Invalid(e.to_string()))?;
        let value = HeaderValue::from_bytes(h.value).map_err(|e| HeadError::Invalid(e.to_string()))?;
        headers.append(name, value);
    }
    let http11 = resp.version == Some(1);
    let keep_alive = match headers.get(CONNECTION).map(HeaderValue::as_bytes) {
        Some(v) if has_token(v, b"close") => false,
        Some(v) if has_token(v, b"keep-alive") => true,
        _ => http11,
    };
    Ok(Some(Head { status, headers, len, keep_alive }))
}

impl Head {
    /// The body's framing for an answer to `method` (RFC 9112 section 6.3, as hyper reads
    /// it): none for HEAD, 1xx, 204 and 304; chunked when the last transfer coding is; else
    /// `Content-Length`; else until the server closes.
    pub fn frame(&self, method: &Method) -> Result<BodyFrame, HeadError> {
        let s = self.status.as_u16();
        if method == Method::HEAD || s == 204 || s == 304 || (100..200).contains(&s) {
            return Ok(BodyFrame::Done);
        }
        if let Some(te) = self.headers.get_all(TRANSFER_ENCODING).iter().next_back() {
            let last = te.as_bytes().rsplit(|b| *b == b',').next().unwrap_or_default();
            return match last.trim_ascii().eq_ignore_ascii_case(b"chunked") {
                true => Ok(BodyFrame::chunked()),
                false => Ok(BodyFrame::Close),
            };
        }
        let mut lengths = self.headers.get_all(CONTENT_LENGTH).iter();
        match (lengths.next(), lengths.next()) {
            (None, _) => Ok(BodyFrame::Close),
            (Some(v), None) => {
                let n = std::str::from_utf8(v.as_bytes()).ok().and_then(|s| s.trim().parse::<u64>().ok());
                let n = n.ok_or_else(|| HeadError::Invalid("content-length".into()))?;
                Ok(if n == 0 { BodyFrame::Done } else { BodyFrame::Length(n) })
            }
            (Some(_), Some(_)) => Err(HeadError::Invalid("several content-length headers".into())),
        }
    }

    /// True when the body is gzip-encoded (decoded by the reader, as the hyper path does).
    pub fn gzip(&self) -> bool {
        self.headers.get(CONTENT_ENCODING).is_some_and(|v| v.as_bytes().trim_ascii().eq_ignore_ascii_case(b"gzip"))
    }
}

/// True when the comma-separated `list` holds `token` (any case).
fn has_token(list: &[u8], token: &[u8]) -> bool {
    list.split(|b| *b == b',').any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

#[cfg(test)]
#[path = "own_h1_head_tests.rs"]
mod tests;
