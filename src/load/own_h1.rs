//! The own HTTP/1.1 stream reader: the load's streamed requests to `http://` targets read on
//! the worker's own task, with no connection task and no channel between socket and body.
//!
//! A request connects (from the `--source-addrs` addresses in turn, through the connect gate
//! of `super::h1`) or takes an idle connection of its source address, writes its head and
//! body, and parses the response head (`super::own_h1_head`, at most [`BUF_LEN`] bytes). The
//! body is read into the connection's one fixed buffer; each socket read's framing is undone in
//! place (`super::body_frame`) and all of its data goes out as one piece, with the kernel's
//! receive time of the read (`super::rx_stamp`). A gzip body is decoded (the load asks for
//! `identity`). A connection goes back to its pool only when its body was read to its end, the
//! server keeps it open, and nothing followed the body; `Connection: close` on fresh ones.
//!
//! Errors keep the meanings `super::resend` and `super::classify` read: a failed connect or a
//! request not written at all is [`SendError::NotSent`]; a connection closed or reset before
//! any answer is [`SendError::Closed`]; an oversized head is [`head::HeadError::TooLarge`].
//!
//! Hot path cost per read: one `recvmsg`, one pass of the framing over the read's bytes, one
//! `Bytes` copy of its data.

use super::backend::{BackendError, BackendResponse, Exchange, SendFuture};
use super::body_frame::BodyFrame;
use super::own_h1_head as head;
use super::rx_stamp::{self, Control};
use bytes::Bytes;
use hyper::Uri;
use reqwest::header::{CONTENT_ENCODING, CONTENT_LENGTH, HeaderMap};
use reqwest::{Method, StatusCode};
use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Instant;

/// Bytes of each connection's read buffer, which also bounds the response head: 8 KiB, the
/// hyper path's bound (`super::h1::READ_BUF_MAX`).
pub const BUF_LEN: usize = 8 * 1024;

/// A send failed before any answer, in a way `super::resend` reads.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// No connection, or the request not written at all: provably not sent.
    #[error("request not sent: {0}")]
    NotSent(#[source] io::Error),
    /// The connection closed or broke after (part of) the request, before any answer.
    #[error("connection closed before an answer: {0}")]
    Closed(#[source] io::Error),
}

/// One connection: the socket, its read buffer and its control buffer.
struct Conn {
    stream: TcpStream,
    buf: Box<[u8]>,
    control: Control,
}

/// An idle connection in a pool.
struct Idle {
    authority: String,
    since: Instant,
    conn: Conn,
}

/// The own reader's connections: an idle pool per source address.
pub struct OwnStreams {
    sources: Vec<Option<IpAddr>>,
    pools: Vec<Mutex<Vec<Idle>>>,
    gate: Arc<Semaphore>,
    next: AtomicUsize,
}

impl std::fmt::Debug for OwnStreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnStreams").field("sources", &self.sources).finish_non_exhaustive()
    }
}

impl OwnStreams {
    /// Connections bound to `sources` in turn (empty: the system picks), connecting while
    /// holding a permit of `gate`.
    pub fn new(sources: &[IpAddr], gate: Arc<Semaphore>) -> Arc<Self> {
        let sources: Vec<Option<IpAddr>> = match sources.is_empty() {
            true => vec![None],
            false => sources.iter().copied().map(Some).collect(),
        };
        let pools = sources.iter().map(|_| Mutex::new(Vec::new())).collect();
        Arc::new(Self { sources, pools, gate, next: AtomicUsize::new(0) })
    }

    /// Sends `req` to `uri` (fresh: a connection of its own, `Connection: close`).
    pub fn send<'a>(self: &Arc<Self>, uri: Uri, req: Exchange<'a>, fresh: bool) -> SendFuture<'a> {
        let me = Arc::clone(self);
        let deadline = req.timeout.map(|t| Instant::now() + t);
        Box::pin(async move {
            let exchange = me.exchange(uri, req, fresh, deadline);
            match deadline {
                Some(d) => {
                    tokio::time::timeout_at(d, exchange).await.map_err(|_| BackendError::send(super::h1::TimedOut))?
                }
                None => exchange.await,
            }
        })
    }

    async fn exchange(
        self: Arc<Self>,
        uri: Uri,
        req: Exchange<'_>,
        fresh: bool,
        deadline: Option<Instant>,
    ) -> Result<BackendResponse, BackendError> {
        let authority = uri.authority().map(|a| a.as_str().to_owned()).unwrap_or_default();
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.sources.len();
        let idle = if fresh { None } else { self.take(i, &authority) };
        let mut conn = match idle {
            Some(c) => c,
            None => self.connect(i, &uri).await.map_err(|e| BackendError::send(SendError::NotSent(e)))?,
        };
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let body = req.body.unwrap_or_default();
        let has_body = !body.is_empty() || req.method == Method::POST || req.method == Method::PUT;
        let mut out =
            head::request_head(&req.method, path, &authority, req.headers, has_body.then_some(body.len()), fresh);
        out.extend_from_slice(&body);
        write(&mut conn.stream, &out).await?;
        let (got, filled, at) = read_head(&mut conn).await?;
        let frame = got.frame(&req.method).map_err(BackendError::send)?;
        let gzip = frame != BodyFrame::Done && got.gzip();
        let mut headers = got.headers;
        if gzip {
            headers.remove(CONTENT_ENCODING);
            headers.remove(CONTENT_LENGTH);
        }
        let home = (!fresh && got.keep_alive).then(|| (Arc::clone(&self), i, authority));
        Ok(BackendResponse::from_own(OwnAnswer {
            status: got.status,
            headers,
            conn: Some(conn),
            frame,
            pending: (got.len, filled),
            pending_at: at,
            gzip: gzip.then(|| flate2::write::GzDecoder::new(Vec::new())),
            deadline,
            home,
        }))
    }

    /// An idle connection to `authority` of source `i` that the server has not closed.
    fn take(&self, i: usize, authority: &str) -> Option<Conn> {
        let mut pool = self.pools[i].lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        pool.retain(|c| now.saturating_duration_since(c.since) < super::h1::POOL_IDLE);
        while let Some(at) = pool.iter().rposition(|c| c.authority == authority) {
            let idle = pool.swap_remove(at);
            // Still open and quiet: nothing to read yet (a closed one reads 0 or an error).
            let mut probe = [0u8; 1];
            if matches!(idle.conn.stream.try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock) {
                return Some(idle.conn);
            }
        }
        None
    }

    /// Back into the pool of source `i`.
    fn put(&self, i: usize, authority: String, conn: Conn) {
        let mut pool = self.pools[i].lock().unwrap_or_else(|p| p.into_inner());
        pool.push(Idle { authority, since: Instant::now(), conn });
    }

    /// A new connection from source `i` to `uri`'s host (each of its addresses in turn).
    async fn connect(&self, i: usize, uri: &Uri) -> io::Result<Conn> {
        let host = uri.host().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
        let port = uri.port_u16().unwrap_or(80);
        // The semaphore is never closed; a permit (or none, were it closed) then the connect.
        let _permit = self.gate.acquire().await;
        let mut last = io::Error::new(io::ErrorKind::NotFound, format!("no address for {host}"));
        for addr in tokio::net::lookup_host((host, port)).await? {
            match connect_one(addr, self.sources[i]).await {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    rx_stamp::enable(&stream);
                    return Ok(Conn { stream, buf: vec![0; BUF_LEN].into_boxed_slice(), control: Control::default() });
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }
}

/// One TCP connect to `addr`, bound to `local` when given.
async fn connect_one(addr: SocketAddr, local: Option<IpAddr>) -> io::Result<TcpStream> {
    let socket = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    if let Some(ip) = local {
        socket.bind(SocketAddr::new(ip, 0))?;
    }
    socket.connect(addr).await
}

/// Writes the request: a failure before any byte went out is "not sent".
async fn write(stream: &mut TcpStream, out: &[u8]) -> Result<(), BackendError> {
    let mut done = 0;
    while done < out.len() {
        match stream.write(&out[done..]).await {
            Ok(0) => return Err(unsent(done, io::ErrorKind::WriteZero.into())),
            Ok(n) => done += n,
            Err(e) => return Err(unsent(done, e)),
        }
    }
    Ok(())
}

fn unsent(written: usize, e: io::Error) -> BackendError {
    match written {
        0 => BackendError::send(SendError::NotSent(e)),
        _ => BackendError::send(SendError::Closed(e)),
    }
}

/// Reads until a whole final (non-1xx) response head is in: the head, the bytes read, and the
/// kernel stamp of the last read.
async fn read_head(conn: &mut Conn) -> Result<(head::Head, usize, Option<Instant>), BackendError> {
    let mut filled = 0;
    loop {
        let (n, at) = rx_stamp::read(&conn.stream, &mut conn.buf[filled..], &mut conn.control)
            .await
            .map_err(|e| BackendError::send(SendError::Closed(e)))?;
        if n == 0 {
            let e = io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed before message completed");
            return Err(BackendError::send(SendError::Closed(e)));
        }
        filled += n;
        while let Some(got) = head::parse(&conn.buf[..filled], BUF_LEN).map_err(BackendError::send)? {
            let informational = got.status.is_informational() && got.status != StatusCode::SWITCHING_PROTOCOLS;
            if !informational {
                return Ok((got, filled, at));
            }
            conn.buf.copy_within(got.len..filled, 0);
            filled -= got.len;
        }
    }
}

/// An answer on the own reader: head, and the body still to read on its connection.
pub struct OwnAnswer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    conn: Option<Conn>,
    frame: BodyFrame,
    /// Body bytes read with the head: `buf[.0...1]`.
    pending: (usize, usize),
    pending_at: Option<Instant>,
    gzip: Option<flate2::write::GzDecoder<Vec<u8>>>,
    deadline: Option<Instant>,
    /// Where the connection goes back to once its body is read (None: it closes).
    home: Option<(Arc<OwnStreams>, usize, String)>,
}

impl std::fmt::Debug for OwnAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnAnswer").field("status", &self.status).finish_non_exhaustive()
    }
}

impl OwnAnswer {
    /// The data of the next socket read (None at the body's end) and when the kernel received
    /// it (None: no stamp).
    pub async fn chunk_at(&mut self) -> Result<Option<(Bytes, Option<Instant>)>, BackendError> {
        loop {
            let Some(conn) = self.conn.as_mut() else { return Ok(None) };
            if self.frame.is_done() {
                let rest = self.finish()?;
                return Ok((!rest.is_empty()).then_some((rest, None)));
            }
            let (n, at) = match self.pending {
                (from, to) if from < to => {
                    conn.buf.copy_within(from..to, 0);
                    self.pending = (0, 0);
                    (to - from, self.pending_at)
                }
                _ => read_body(conn, self.deadline).await?,
            };
            if n == 0 {
                match self.frame {
                    BodyFrame::Close => self.frame = BodyFrame::Done,
                    _ => return Err(BackendError::body(io::Error::from(io::ErrorKind::UnexpectedEof))),
                }
                continue;
            }
            let got = self.frame.decode(&mut conn.buf[..n]).map_err(BackendError::body)?;
            if got.extra > 0 {
                self.home = None;
            }
            let data = &conn.buf[..got.data];
            let mut bytes = match self.gzip.as_mut() {
                None => Bytes::copy_from_slice(data),
                Some(g) => {
                    g.write_all(data).map_err(BackendError::body)?;
                    Bytes::from(std::mem::take(g.get_mut()))
                }
            };
            if self.frame.is_done() {
                // Pooled now: a reader that stops at the stream's last event never asks again.
                let rest = self.finish()?;
                if !rest.is_empty() {
                    bytes = [bytes, rest].concat().into();
                }
            }
            if !bytes.is_empty() {
                return Ok(Some((bytes, at)));
            }
        }
    }

    /// The rest of the body when it is already in the socket (no wait): pools the connection
    /// if that ends the body. For an answer dropped after its last event, whose body's end came
    /// in a read of its own.
    fn drain_now(&mut self) {
        let Some(conn) = self.conn.as_mut() else { return };
        if self.home.is_none() || self.gzip.is_some() || self.pending.0 < self.pending.1 {
            return;
        }
        while !self.frame.is_done() {
            let n = match conn.stream.try_read(&mut conn.buf) {
                Ok(n) if n > 0 => n,
                _ => return,
            };
            match self.frame.decode(&mut conn.buf[..n]) {
                Ok(got) if got.extra == 0 => {}
                _ => return,
            }
        }
        let _ = self.finish();
    }

    /// The body's end: the gzip decoder's last bytes; the connection back to its pool.
    fn finish(&mut self) -> Result<Bytes, BackendError> {
        let rest = match self.gzip.take() {
            None => Bytes::new(),
            Some(mut g) => {
                g.try_finish().map_err(BackendError::body)?;
                Bytes::from(std::mem::take(g.get_mut()))
            }
        };
        if let (Some(conn), Some((pool, i, authority))) = (self.conn.take(), self.home.take()) {
            pool.put(i, authority, conn);
        }
        Ok(rest)
    }
}

impl Drop for OwnAnswer {
    fn drop(&mut self) {
        self.drain_now();
    }
}

/// One body read of `conn` within `deadline`.
async fn read_body(conn: &mut Conn, deadline: Option<Instant>) -> Result<(usize, Option<Instant>), BackendError> {
    let read = rx_stamp::read(&conn.stream, &mut conn.buf, &mut conn.control);
    let got = match deadline {
        Some(d) => tokio::time::timeout_at(d, read).await.map_err(|_| BackendError::body(super::h1::TimedOut))?,
        None => read.await,
    };
    got.map_err(BackendError::body)
}

#[cfg(test)]
#[path = "own_h1_tests.rs"]
mod tests;
