//! The preflight probe of connection reuse, engine-neutral: one tiny streamed request on a raw
//! TCP socket, its chunked body read to the end, then a short wait to see whether the server
//! closes the connection unasked, as llama.cpp's `llama-server` does after every stream
//! although it advertises `Keep-Alive` (docs/protocol.md §2.3). Only `http://` targets are probed.

use bytes::Bytes;
use reqwest::header::{CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HOST, HeaderMap, TRANSFER_ENCODING};
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout};

/// How long the server has to close the connection after the end of a streamed response.
pub const CLOSE_WAIT: Duration = Duration::from_millis(300);
/// Longest the whole probe may take (connect, answer, body).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest line of a response head or chunk size the probe reads, bytes.
const LINE_LIMIT: u64 = 16 * 1024;
/// Longest body the probe reads: its answer is one token (a few hundred bytes).
const BODY_LIMIT: u64 = 1 << 20;

/// What the probe found.
#[derive(Debug, Clone, PartialEq)]
pub enum Probe {
    /// The server closed the connection this long after the end of a streamed response.
    Closed(Duration),
    /// The server answered the streamed request with `Connection: close`, or ended its body
    /// by closing the connection.
    SaidClose,
    /// The connection was still open [`CLOSE_WAIT`] after the response.
    KeptOpen,
    /// Nothing learned, and why ("https", "HTTP 404 to the probe", ...).
    NotProbed(String),
}

impl Probe {
    /// True when streamed requests may keep reusing pooled connections.
    pub fn streams_reuse(&self) -> bool {
        matches!(self, Self::KeptOpen | Self::NotProbed(_))
    }

    /// Requests the server answered: the probe's one, unless nothing was learned.
    pub fn answered(&self) -> u32 {
        u32::from(!matches!(self, Self::NotProbed(_)))
    }

    /// The evidence, one line, as the report records it.
    pub fn evidence(&self) -> String {
        match self {
            Self::Closed(after) => {
                format!("server closed the connection {} after a streamed response (preflight probe)", delay(*after))
            }
            Self::SaidClose => "server closes the connection after a streamed response (preflight probe)".into(),
            Self::KeptOpen => format!(
                "server kept the connection open {} ms after a streamed response (preflight probe)",
                CLOSE_WAIT.as_millis()
            ),
            Self::NotProbed(why) => format!("not probed: {why}"),
        }
    }
}

/// A short delay for a message: microseconds under 1 ms, else milliseconds to 0.1.
fn delay(d: Duration) -> String {
    match d < Duration::from_millis(1) {
        true => format!("{} µs", d.as_micros()),
        false => format!("{:.1} ms", d.as_secs_f64() * 1e3),
    }
}

/// Posts `body` (a streamed request, `max_tokens` 1) to `url` with `headers` on a socket of
/// its own, reads the answer to its end and waits up to [`CLOSE_WAIT`] for the server to close.
pub async fn probe(url: &str, headers: &HeaderMap, body: &Bytes) -> Probe {
    let target = match Target::parse(url) {
        Ok(t) => t,
        Err(why) => return Probe::NotProbed(why),
    };
    match timeout(PROBE_TIMEOUT, exchange(&target, headers, body)).await {
        Ok(Ok(found)) => found,
        Ok(Err(e)) => Probe::NotProbed(format!("the probe failed ({e})")),
        Err(_) => Probe::NotProbed(format!("no whole answer to the probe within {} s", PROBE_TIMEOUT.as_secs())),
    }
}

/// Where the probe connects and what its request line and `Host` say.
struct Target {
    /// `host:port` to connect to.
    addr: String,
    /// The `Host` header.
    host: String,
    /// Path and query of the request line.
    path: String,
}

impl Target {
    fn parse(url: &str) -> Result<Self, String> {
        let u = reqwest::Url::parse(url).map_err(|e| format!("unparsable URL ({e})"))?;
        match u.scheme() {
            "http" => {}
            "https" => return Err("https".into()),
            other => return Err(format!("scheme {other}")),
        }
        if !u.username().is_empty() || u.password().is_some() {
            return Err("credentials in the URL".into());
        }
        if let Some(var) = super::proxy_env::ProxyEnv::from_env().for_url(url) {
            return Err(format!("a proxy is set (${var})"));
        }
        let host = u.host_str().ok_or("no host in the URL")?.to_string();
        let port = u.port_or_known_default().unwrap_or(80);
        let host_header = crate::net::host_port(url).to_string();
        let path = match u.query() {
            Some(q) => format!("{}?{q}", u.path()),
            None => u.path().to_string(),
        };
        Ok(Self { addr: format!("{host}:{port}"), host: host_header, path })
    }
}

/// The request: `headers` but those the probe sets itself, a JSON body of known length.
fn request(t: &Target, headers: &HeaderMap, body: &Bytes) -> Vec<u8> {
    let mut out = format!("POST {} HTTP/1.1\r\nhost: {}\r\ncontent-length: {}\r\n", t.path, t.host, body.len());
    if !headers.contains_key(CONTENT_TYPE) {
        out.push_str("content-type: application/json\r\n");
    }
    let own = [HOST, CONTENT_LENGTH, CONNECTION, TRANSFER_ENCODING];
    for (name, value) in headers.iter().filter(|(n, _)| !own.contains(n)) {
        if let Ok(v) = value.to_str() {
            out.push_str(&format!("{name}: {v}\r\n"));
        }
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

async fn exchange(t: &Target, headers: &HeaderMap, body: &Bytes) -> std::io::Result<Probe> {
    let mut sock = TcpStream::connect(&t.addr).await?;
    sock.set_nodelay(true)?;
    sock.write_all(&request(t, headers, body)).await?;
    let mut r = BufReader::new(sock);
    let head = read_head(&mut r).await?;
    if !(200..300).contains(&head.status) {
        return Ok(Probe::NotProbed(format!("HTTP {} to the probe", head.status)));
    }
    match head.framing {
        Framing::Chunked => read_chunked(&mut r).await?,
        Framing::Length(n) => skip(&mut r, n).await?,
        Framing::UntilClose => return Ok(Probe::SaidClose),
    }
    if head.close {
        return Ok(Probe::SaidClose);
    }
    Ok(wait_for_close(&mut r).await)
}

/// After the body's end: closed within [`CLOSE_WAIT`] (EOF or reset), or kept open.
async fn wait_for_close(r: &mut BufReader<TcpStream>) -> Probe {
    let ended = Instant::now();
    let mut one = [0u8; 1];
    match timeout(CLOSE_WAIT, r.read(&mut one)).await {
        Err(_) => Probe::KeptOpen,
        Ok(Ok(0)) => Probe::Closed(ended.elapsed()),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => Probe::Closed(ended.elapsed()),
        Ok(Ok(_)) => Probe::NotProbed("the server sent more after its response".into()),
        Ok(Err(e)) => Probe::NotProbed(format!("the connection failed after the response ({e})")),
    }
}

/// How the body of the answer ends.
#[derive(Debug, PartialEq)]
enum Framing {
    Chunked,
    Length(u64),
    UntilClose,
}

/// The parts of a response head the probe needs.
#[derive(Debug, PartialEq)]
struct Head {
    status: u16,
    framing: Framing,
    /// `Connection: close`.
    close: bool,
}

fn bad(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string())
}

/// One line without its CRLF, at most [`LINE_LIMIT`] bytes.
async fn line<R: AsyncBufRead + Unpin>(r: &mut R) -> std::io::Result<String> {
    let mut buf = Vec::new();
    let n = (&mut *r).take(LINE_LIMIT).read_until(b'\n', &mut buf).await?;
    if n == 0 || buf.last() != Some(&b'\n') {
        return Err(bad("the connection ended inside a line"));
    }
    Ok(String::from_utf8_lossy(&buf).trim_end_matches(['\r', '\n']).to_string())
}

async fn read_head<R: AsyncBufRead + Unpin>(r: &mut R) -> std::io::Result<Head> {
    let status_line = line(r).await?;
    let status = status_line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| bad("no status"))?;
    let mut head = Head { status, framing: Framing::UntilClose, close: false };
    for _ in 0..256 {
        let l = line(r).await?;
        if l.is_empty() {
            return Ok(head);
        }
        let Some((name, value)) = l.split_once(':') else { continue };
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim().to_ascii_lowercase());
        match name.as_str() {
            "transfer-encoding" if value.contains("chunked") => head.framing = Framing::Chunked,
            "content-length" if head.framing != Framing::Chunked => {
                head.framing = Framing::Length(value.parse().map_err(|_| bad("bad content-length"))?);
            }
            "connection" => head.close = value.split(',').any(|t| t.trim() == "close"),
            _ => {}
        }
    }
    Err(bad("too many header lines"))
}

/// Reads a chunked body to its end (the zero chunk and the trailers), at most [`BODY_LIMIT`].
async fn read_chunked<R: AsyncBufRead + Unpin>(r: &mut R) -> std::io::Result<()> {
    let mut total = 0u64;
    loop {
        let size_line = line(r).await?;
        let hex = size_line.split(';').next().unwrap_or_default().trim();
        let size = u64::from_str_radix(hex, 16).map_err(|_| bad("bad chunk size"))?;
        if size == 0 {
            while !line(r).await?.is_empty() {}
            return Ok(());
        }
        total = total.saturating_add(size);
        if total > BODY_LIMIT {
            return Err(too_long());
        }
        skip(r, size).await?;
        if !line(r).await?.is_empty() {
            return Err(bad("no CRLF after a chunk"));
        }
    }
}

fn too_long() -> std::io::Error {
    bad("an answer over 1 MiB to a one-token request")
}

/// Reads and drops `n` bytes; a body over [`BODY_LIMIT`] in all (`n` included) is an error.
async fn skip<R: AsyncRead + Unpin>(r: &mut R, n: u64) -> std::io::Result<()> {
    if n > BODY_LIMIT {
        return Err(too_long());
    }
    let copied = tokio::io::copy(&mut (&mut *r).take(n), &mut tokio::io::sink()).await?;
    if copied < n { Err(bad("the connection ended inside the body")) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_chunked_head_and_body_read_to_their_end() {
        let text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nKeep-Alive: timeout=5\r\n\r\n\
            5;x=1\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT";
        let mut r = BufReader::new(text.as_bytes());
        let head = read_head(&mut r).await.unwrap();
        assert_eq!(head, Head { status: 200, framing: Framing::Chunked, close: false });
        read_chunked(&mut r).await.unwrap();
        let mut rest = String::new();
        r.read_to_string(&mut rest).await.unwrap();
        assert_eq!(rest, "NEXT", "nothing past the body is read");
    }

    #[tokio::test]
    async fn close_and_length_are_read_and_a_cut_body_is_an_error() {
        let text = "HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\nConnection: keep-alive, close\r\n\r\nab";
        let mut r = BufReader::new(text.as_bytes());
        let head = read_head(&mut r).await.unwrap();
        assert_eq!(head, Head { status: 404, framing: Framing::Length(3), close: true });
        assert!(skip(&mut r, 3).await.is_err());
    }

    #[test]
    fn the_evidence_names_the_delay_in_a_readable_unit() {
        let e = Probe::Closed(Duration::from_micros(42)).evidence();
        assert_eq!(e, "server closed the connection 42 µs after a streamed response (preflight probe)");
        assert!(Probe::Closed(Duration::from_micros(2_345)).evidence().contains(" 2.3 ms after"));
        assert!(!Probe::Closed(Duration::ZERO).streams_reuse() && !Probe::SaidClose.streams_reuse());
    }

    #[test]
    fn only_plain_http_without_credentials_is_probed() {
        let t = Target::parse("http://127.0.0.1:8091/v1/completions?x=1").unwrap();
        assert_eq!(
            (t.addr.as_str(), t.host.as_str(), t.path.as_str()),
            ("127.0.0.1:8091", "127.0.0.1:8091", "/v1/completions?x=1")
        );
        let t = Target::parse("http://[::1]/v1/chat/completions").unwrap();
        assert_eq!((t.addr.as_str(), t.host.as_str()), ("[::1]:80", "[::1]"));
        assert_eq!(Target::parse("https://h/v1/completions").err().as_deref(), Some("https"));
        assert!(Target::parse("http://u:p@h/v1").is_err());
    }

    #[test]
    fn the_request_carries_the_session_headers_but_framing_its_own() {
        let t = Target::parse("http://h:1/v1/completions").unwrap();
        let mut h = HeaderMap::new();
        h.insert("authorization", "Bearer k".parse().unwrap());
        h.insert("connection", "close".parse().unwrap());
        let text = String::from_utf8(request(&t, &h, &Bytes::from_static(b"{}"))).unwrap();
        assert!(text.starts_with("POST /v1/completions HTTP/1.1\r\nhost: h:1\r\ncontent-length: 2\r\n"), "{text}");
        assert!(text.contains("authorization: Bearer k\r\n") && text.contains("content-type: application/json"));
        assert!(!text.contains("connection:") && text.ends_with("\r\n\r\n{}"), "{text}");
    }
}
