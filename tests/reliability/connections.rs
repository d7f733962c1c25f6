//! Connections (issue 20 item 2): a server that closes its connection after every streamed
//! response although it advertises `Keep-Alive` (llama.cpp's `llama-server`), one that reads a
//! request and hangs up without answering, and one that keeps its connections open; raw tokio
//! listeners of the test's own on loopback, through the real `HttpBackend` and `run_stream`.

use bytes::Bytes;
use llm_decode_bench::load::backend::{Backend, HttpBackend};
use llm_decode_bench::load::live::LiveCounters;
use llm_decode_bench::load::resend::MAX_RESENDS;
use llm_decode_bench::load::reuse_probe::{Probe, probe};
use llm_decode_bench::load::sample::{ErrorKind, RequestSample};
use llm_decode_bench::load::stream::{StreamSpec, run_stream};
use reqwest::header::HeaderMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What the test server does after reading a whole request.
#[derive(Debug, Clone, Copy)]
enum Mode {
    /// Streams the answer, then closes the connection after `Duration` (llama-server).
    CloseAfterStream(Duration),
    /// Streams the answer and waits for the next request on the same connection.
    KeepOpen,
    /// Closes the connection without answering.
    HangUp,
}

/// What the server saw.
#[derive(Debug, Default)]
struct Seen {
    connections: AtomicU64,
    requests: AtomicU64,
}

/// A streamed completion in SSE, chunked, advertising keep-alive, in one write.
fn answer() -> Vec<u8> {
    let events = [
        r#"data: {"choices":[{"text":"a","index":0,"finish_reason":null}]}"#,
        r#"data: {"choices":[{"text":"","index":0,"finish_reason":"length"}],"usage":{"prompt_tokens":2,"completion_tokens":1}}"#,
        "data: [DONE]",
    ];
    let mut out = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\
        Keep-Alive: timeout=5, max=100\r\n\r\n"
        .to_vec();
    for e in events {
        let data = format!("{e}\n\n");
        out.extend_from_slice(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes());
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// Reads one request (head and `content-length` body); false at the connection's end.
async fn read_request(r: &mut BufReader<TcpStream>) -> bool {
    let mut length = 0usize;
    let mut first = true;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).await.unwrap_or(0) == 0 {
            return false;
        }
        if line == "\r\n" && !first {
            break;
        }
        first = false;
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; length];
    r.read_exact(&mut body).await.is_ok()
}

async fn connection(sock: TcpStream, mode: Mode, seen: Arc<Seen>) {
    let mut r = BufReader::new(sock);
    while read_request(&mut r).await {
        seen.requests.fetch_add(1, Ordering::SeqCst);
        match mode {
            Mode::HangUp => return,
            Mode::KeepOpen => {
                if r.get_mut().write_all(&answer()).await.is_err() {
                    return;
                }
            }
            Mode::CloseAfterStream(after) => {
                let _ = r.get_mut().write_all(&answer()).await;
                tokio::time::sleep(after).await;
                return;
            }
        }
    }
}

/// Starts a server on loopback; returns its completions URL and what it saw.
async fn server(mode: Mode) -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/completions", listener.local_addr().unwrap());
    let seen = Arc::new(Seen::default());
    let counts = seen.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            counts.connections.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(connection(sock, mode, counts.clone()));
        }
    });
    (url, seen)
}

fn backend() -> HttpBackend {
    HttpBackend::from_builder(|| llm_decode_bench::net::client_builder().no_proxy()).unwrap()
}

fn body() -> Bytes {
    Bytes::from_static(br#"{"model":"m","prompt":"hi","max_tokens":1,"stream":true}"#)
}

/// Probes `url` and sets `backend`'s stream policy from what it found, as preflight does.
async fn probe_into(backend: &HttpBackend, url: &str) -> Probe {
    let found = probe(url, &HeaderMap::new(), &body()).await;
    backend.stream_reuse().unwrap().decide(found.streams_reuse(), found.evidence(), found.answered());
    found
}

/// One streamed request through `run_stream`.
async fn one(backend: &dyn Backend, url: &str) -> RequestSample {
    let headers = HeaderMap::new();
    let spec = StreamSpec {
        url,
        headers: &headers,
        served_by: &[],
        first_token_timeout: Some(Duration::from_secs(10)),
        queued_waits: false,
        idle_timeout: Duration::from_secs(10),
        expected_chunks: 2,
    };
    let live = LiveCounters::default();
    run_stream(backend, &spec, body(), RequestSample::new(0, Instant::now()), &CancellationToken::new(), &live).await
}

/// `n` requests back to back on each of `streams` closed loops; the samples.
async fn closed_loops(backend: &Arc<HttpBackend>, url: &str, streams: u32, n: u32) -> Vec<RequestSample> {
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..streams {
        let (backend, url) = (backend.clone(), url.to_string());
        tasks.spawn(async move {
            let mut out = Vec::new();
            for _ in 0..n {
                out.push(one(&*backend, &url).await);
            }
            out
        });
    }
    tasks.join_all().await.into_iter().flatten().collect()
}

fn errors(samples: &[RequestSample]) -> Vec<String> {
    samples.iter().filter(|s| !s.completed()).map(|s| format!("{:?}", s.outcome)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_closes_after_every_stream_costs_no_request() {
    const N: u32 = 200;
    for streams in [1, 2, 4] {
        let (url, seen) = server(Mode::CloseAfterStream(Duration::from_millis(1))).await;
        let backend = Arc::new(backend());
        let found = probe_into(&backend, &url).await;
        assert!(matches!(found, Probe::Closed(after) if after < Duration::from_millis(300)), "{found:?}");
        let report = backend.stream_reuse().unwrap().report();
        assert!(!report.streams_reuse && report.evidence.contains("after a streamed response"), "{report:?}");
        let probed = seen.requests.load(Ordering::SeqCst);
        let samples = closed_loops(&backend, &url, streams, N / streams).await;
        assert_eq!(errors(&samples), Vec::<String>::new(), "{streams} stream(s)");
        assert_eq!(samples.len() as u32, N);
        let sent = seen.requests.load(Ordering::SeqCst) - probed;
        assert_eq!(sent, u64::from(N), "{streams} stream(s): every request reached the server exactly once");
        assert_eq!(samples.iter().map(|s| s.reconnects).sum::<u32>(), 0, "nothing needed a re-send");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_the_server_read_and_dropped_is_an_error_and_never_sent_twice() {
    let (url, seen) = server(Mode::HangUp).await;
    let backend = backend();
    let sample = one(&backend, &url).await;
    assert_eq!(sample.error_kind(), Some(ErrorKind::Connect), "{:?}", sample.outcome);
    assert_eq!(sample.reconnects, 0);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(seen.requests.load(Ordering::SeqCst), 1, "the request may have reached the server: not re-sent");
    let learned = backend.stream_reuse().unwrap().report();
    assert!(!learned.streams_reuse && learned.evidence.starts_with("learned at run time"), "{learned:?}");
}

#[tokio::test]
async fn a_refused_connection_is_tried_twice_more_then_is_an_error() {
    let refused = crate::common::refused_port();
    let backend = backend();
    let sample = one(&backend, &format!("{}/v1/completions", refused.base())).await;
    assert_eq!(sample.error_kind(), Some(ErrorKind::Connect), "{:?}", sample.outcome);
    assert_eq!(sample.reconnects, MAX_RESENDS, "two re-sends on fresh connections");
    assert!(backend.stream_reuse().unwrap().report().streams_reuse, "nothing was sent: nothing learned");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_keeps_connections_open_keeps_them_reused() {
    let (url, seen) = server(Mode::KeepOpen).await;
    let backend = Arc::new(backend());
    let found = probe_into(&backend, &url).await;
    assert_eq!(found, Probe::KeptOpen);
    let report = backend.stream_reuse().unwrap().report();
    assert!(report.streams_reuse && report.evidence.contains("kept the connection open"), "{report:?}");
    let samples = closed_loops(&backend, &url, 1, 50).await;
    assert_eq!(errors(&samples), Vec::<String>::new());
    assert_eq!(seen.requests.load(Ordering::SeqCst), 51, "the probe and 50 requests");
    let accepted = seen.connections.load(Ordering::SeqCst);
    // A connection is back in the pool just after its stream's last event is read, so back to
    // back requests may alternate between two.
    assert!(accepted <= 4, "{accepted} connections: the probe's and at most 3 pooled ones for 50 requests");
}

#[tokio::test]
async fn https_and_unreachable_targets_are_not_probed() {
    let found = probe("https://127.0.0.1:1/v1/completions", &HeaderMap::new(), &body()).await;
    assert_eq!(found, Probe::NotProbed("https".into()));
    assert!(found.streams_reuse() && found.evidence() == "not probed: https");
    let refused = crate::common::refused_port();
    let found = probe(&format!("{}/v1/completions", refused.base()), &HeaderMap::new(), &body()).await;
    assert!(matches!(&found, Probe::NotProbed(why) if why.starts_with("the probe failed")), "{found:?}");
}
