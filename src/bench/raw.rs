//! The raw baseline client: the same streams as the tool, read with no SSE or JSON decoding.
//! Each stream is a loop of plain HTTP/1.1 requests on fresh connections (`Connection: close`,
//! read to the end); per read it takes one timestamp and counts `data:` lines (a SIMD substring
//! search). In paced mode it also reads the send time of the last event of each read, for its
//! lag. The limit every figure of the tool is a ratio to.

use super::lag::LagHist;
use super::sysinfo::unix_ns;
use memchr::memmem;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Read buffer per stream, bytes.
const READ_BUF: usize = 8192;

/// Counters of a raw run, shared by its streams.
#[derive(Debug, Default)]
pub(crate) struct RawCounts {
    /// `data:` lines read.
    pub events: AtomicU64,
    /// Token events: `data:` lines less the final usage chunk and `[DONE]` of finished requests.
    pub tokens: AtomicU64,
    /// Requests finished (the server closed the connection).
    pub completed: AtomicU64,
    /// Failed connects, non-200 answers, read errors.
    pub errors: AtomicU64,
    /// Lags (paced mode).
    pub lag: LagHist,
    /// ITLs against the server's over the same token pairs (paced mode).
    pub itl: super::fidelity::ItlHists,
}

/// What to send.
#[derive(Debug, Clone)]
pub(crate) struct RawTarget {
    /// The server.
    pub addr: SocketAddr,
    /// The whole request, head and body.
    pub request: Arc<[u8]>,
    /// Read the send time of each read's last event.
    pub lag: bool,
}

impl RawTarget {
    /// A streaming chat request for `tokens` tokens with continuous usage.
    pub(crate) fn chat(addr: SocketAddr, model: &str, tokens: u64, lag: bool) -> Self {
        let body = format!(
            "{{\"model\":\"{model}\",\"messages\":[{{\"role\":\"user\",\"content\":\"bench\"}}],\"max_tokens\":{tokens},\
             \"stream\":true,\"stream_options\":{{\"include_usage\":true,\"continuous_usage_stats\":true}}}}"
        );
        let head = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        Self { addr, request: format!("{head}{body}").into_bytes().into(), lag }
    }
}

/// Runs `streams` streams until `until`.
pub(crate) async fn run(target: RawTarget, streams: usize, until: Instant, counts: Arc<RawCounts>) {
    let tasks: Vec<_> =
        (0..streams).map(|_| tokio::spawn(stream_loop(target.clone(), until, counts.clone()))).collect();
    for t in tasks {
        let _ = t.await;
    }
}

async fn stream_loop(target: RawTarget, until: Instant, counts: Arc<RawCounts>) {
    let mut buf = vec![0u8; READ_BUF];
    while Instant::now() < until {
        match tokio::time::timeout_at(until, one_request(&target, &mut buf, &counts)).await {
            Ok(Ok(())) => {
                counts.completed.fetch_add(1, Ordering::Relaxed);
                counts.tokens.fetch_sub(2, Ordering::Relaxed);
            }
            Ok(Err(_)) => {
                counts.errors.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => return,
        }
    }
}

const DATA: &[u8] = b"data:";
const STAMP: &[u8] = b"\"bench_sent_unix_ns\":";

async fn one_request(target: &RawTarget, buf: &mut [u8], counts: &RawCounts) -> std::io::Result<()> {
    let mut tcp = TcpStream::connect(target.addr).await?;
    tcp.set_nodelay(true)?;
    tcp.write_all(&target.request).await?;
    let finder = memmem::Finder::new(DATA);
    let (mut tail, mut first) = ([0u8; 4], true);
    // The last read's timestamp and send stamp, for ITLs.
    let mut prev: Option<(u64, u64)> = None;
    loop {
        let n = tcp.read(buf).await?;
        if n == 0 {
            return Ok(());
        }
        let at = unix_ns();
        let got = &buf[..n];
        if first && !got.starts_with(b"HTTP/1.1 200") {
            return Err(std::io::Error::other("not HTTP 200"));
        }
        first = false;
        // A `data:` split between two reads: search the seam.
        let mut seam = [0u8; 8];
        seam[..4].copy_from_slice(&tail);
        let k = n.min(4);
        seam[4..4 + k].copy_from_slice(&got[..k]);
        let lines = finder.find_iter(got).count() + finder.find_iter(&seam[..4 + k]).count();
        counts.events.fetch_add(lines as u64, Ordering::Relaxed);
        counts.tokens.fetch_add(lines as u64, Ordering::Relaxed);
        if n >= 4 {
            tail.copy_from_slice(&got[n - 4..]);
        }
        if target.lag
            && let Some(i) = memmem::rfind(got, STAMP)
            && let Some(d) = got.get(i + STAMP.len()..i + STAMP.len() + super::template::STAMP_DIGITS)
            && let Some(sent) = d.iter().try_fold(0u64, |a, c| c.is_ascii_digit().then(|| a * 10 + u64::from(c - b'0')))
        {
            counts.lag.record(at, sent);
            if let Some((a, s)) = prev.filter(|(_, s)| *s != sent) {
                counts.itl.record(at.saturating_sub(a), sent.saturating_sub(s));
            }
            prev = Some((at, sent));
        }
    }
}
