//! Tests of the own stream reader on loopback: a chunked stream read per socket read with
//! kernel stamps, keep-alive reuse and its refusals, errors with their meanings, gzip.

use super::*;
use crate::load::resend::{Delivery, delivery};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

/// What a test server sends each request: pieces written with a pause between them.
type Script = Vec<Vec<u8>>;

/// A loopback server answering every request of every connection with `script` (closing the
/// connection after it when it is empty or says `connection: close`); sends each request head
/// (with the peer's address) on the returned channel.
async fn serve(script: Script) -> (String, UnboundedReceiver<(SocketAddr, String)>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut sock, peer)) = listener.accept().await {
            let (tx, script) = (tx.clone(), script.clone());
            tokio::spawn(async move {
                loop {
                    let mut head = Vec::new();
                    let mut piece = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        match sock.read(&mut piece).await {
                            Ok(1) => head.push(piece[0]),
                            _ => return,
                        }
                    }
                    let text = String::from_utf8_lossy(&head).into_owned();
                    let len =
                        text.lines().find_map(|l| l.strip_prefix("content-length: ")).map_or(0, |n| n.parse().unwrap());
                    let mut body = vec![0u8; len];
                    sock.read_exact(&mut body).await.unwrap();
                    let _ = tx.send((peer, text));
                    for p in &script {
                        if sock.write_all(p).await.is_err() {
                            return;
                        }
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    let closes = script.first().is_none_or(|p| p.windows(17).any(|w| w == b"connection: close"));
                    if closes {
                        return;
                    }
                }
            });
        }
    });
    (base, rx)
}

fn own() -> Arc<OwnStreams> {
    OwnStreams::new(&[], Arc::new(Semaphore::new(4)))
}

async fn send(own: &Arc<OwnStreams>, url: &str, fresh: bool) -> Result<BackendResponse, BackendError> {
    let headers = HeaderMap::new();
    own.send(url.parse().unwrap(), Exchange::post(url, &headers, Some(Bytes::from("{}"))), fresh).await
}

/// Reads the whole body: its bytes, and how many reads carried a stamp and how many data.
async fn drain(resp: &mut BackendResponse) -> (Vec<u8>, usize, usize) {
    let (mut all, mut stamped, mut reads) = (Vec::new(), 0, 0);
    while let Some((b, at)) = resp.chunk_at().await.unwrap() {
        all.extend_from_slice(&b);
        reads += 1;
        if let Some(at) = at {
            assert!(at <= Instant::now());
            stamped += 1;
        }
    }
    (all, stamped, reads)
}

const SSE_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";

fn sse_script() -> Script {
    vec![
        SSE_HEAD.to_vec(),
        b"9\r\ndata: a\n\n\r\n".to_vec(),
        b"9\r\ndata: b\n\n\r\n9\r\ndata: c\n\n\r\n".to_vec(),
        b"0\r\n\r\n".to_vec(),
    ]
}

#[tokio::test]
async fn a_chunked_stream_reads_whole_with_kernel_stamps_and_its_connection_is_reused() {
    let (base, mut seen) = serve(sse_script()).await;
    let own = own();
    let url = format!("{base}/v1/completions");
    for _ in 0..2 {
        let mut resp = send(&own, &url, false).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let (body, stamped, reads) = drain(&mut resp).await;
        assert_eq!(body, b"data: a\n\ndata: b\n\ndata: c\n\n");
        if cfg!(target_os = "linux") {
            assert_eq!(stamped, reads, "every read on Linux carries the kernel's stamp");
        }
    }
    let (first, head) = seen.recv().await.unwrap();
    let (second, _) = seen.recv().await.unwrap();
    assert_eq!(first, second, "the second request reused the connection");
    assert!(head.starts_with("POST /v1/completions HTTP/1.1\r\nhost: 127.0.0.1:"), "{head}");
    assert!(!head.contains("connection: close"));
}

#[tokio::test]
async fn fresh_requests_ask_to_close_and_never_reuse() {
    let (base, mut seen) = serve(sse_script()).await;
    let own = own();
    let url = format!("{base}/v1/completions");
    for _ in 0..2 {
        drain(&mut send(&own, &url, true).await.unwrap()).await;
    }
    let (first, head) = seen.recv().await.unwrap();
    let (second, _) = seen.recv().await.unwrap();
    assert_ne!(first, second);
    assert!(head.contains("connection: close\r\n"), "{head}");
}

#[tokio::test]
async fn a_body_left_unread_closes_its_connection() {
    let (base, mut seen) = serve(sse_script()).await;
    let own = own();
    let url = format!("{base}/v1/completions");
    let mut resp = send(&own, &url, false).await.unwrap();
    assert!(resp.chunk_at().await.unwrap().is_some());
    drop(resp);
    drain(&mut send(&own, &url, false).await.unwrap()).await;
    let (first, _) = seen.recv().await.unwrap();
    let (second, _) = seen.recv().await.unwrap();
    assert_ne!(first, second);
}

#[tokio::test]
async fn content_length_and_close_delimited_bodies() {
    let (base, _) = serve(vec![b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhel".to_vec(), b"lo".to_vec()]).await;
    let mut resp = send(&own(), &format!("{base}/x"), false).await.unwrap();
    assert_eq!(drain(&mut resp).await.0, b"hello");
    let (base, _) = serve(vec![b"HTTP/1.0 200 OK\r\n\r\nsome".to_vec(), b" more".to_vec()]).await;
    let mut resp = send(&own(), &format!("{base}/x"), false).await.unwrap();
    let read = tokio::time::timeout(Duration::from_millis(100), drain(&mut resp)).await;
    assert!(read.is_err(), "a close-delimited body lasts until the server closes");
}

#[tokio::test]
async fn a_reset_mid_body_is_a_body_error() {
    let (base, _) = serve(vec![b"HTTP/1.1 200 OK\r\ncontent-length: 50\r\nconnection: close\r\n\r\nab".to_vec()]).await;
    let mut resp = send(&own(), &format!("{base}/x"), true).await.unwrap();
    assert_eq!(resp.chunk_at().await.unwrap().unwrap().0, "ab");
    // The server's task ends and drops the socket after its script.
    let e = resp.chunk_at().await.unwrap_err();
    assert_eq!(e.stage(), crate::load::backend::Stage::Body);
}

#[tokio::test]
async fn an_oversized_head_is_too_large_and_an_early_close_is_closed() {
    let big = [b"HTTP/1.1 200 OK\r\nx-pad: ".to_vec(), vec![b'a'; BUF_LEN], b"\r\n\r\n".to_vec()].concat();
    let (base, _) = serve(vec![big]).await;
    let e = send(&own(), &format!("{base}/x"), true).await.unwrap_err();
    let outcome = crate::load::classify::send_failure(&e);
    assert!(format!("{outcome:?}").contains("Oversized"), "{outcome:?}");
    let (base, _) = serve(vec![]).await;
    let e = send(&own(), &format!("{base}/x"), true).await.unwrap_err();
    assert_eq!(delivery(&e), Delivery::ClosedUnanswered, "{}", e.describe());
}

#[tokio::test]
async fn a_refused_connection_was_never_sent() {
    let (_held, port) = crate::net::refused_port();
    let url = format!("http://127.0.0.1:{port}/v1/completions");
    let e = send(&own(), &url, true).await.unwrap_err();
    assert_eq!(delivery(&e), Delivery::NotSent);
    assert!(!e.describe().contains("/v1/completions"), "{}", e.describe());
}

#[tokio::test]
async fn a_gzip_body_is_decoded() {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(b"data: zipped\n\n").unwrap();
    let packed = gz.finish().unwrap();
    let head = format!("HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: {}\r\n\r\n", packed.len());
    let (base, _) = serve(vec![head.into_bytes(), packed[..7].to_vec(), packed[7..].to_vec()]).await;
    let mut resp = send(&own(), &format!("{base}/x"), false).await.unwrap();
    assert!(resp.headers().get(CONTENT_ENCODING).is_none());
    assert_eq!(drain(&mut resp).await.0, b"data: zipped\n\n");
}

#[tokio::test]
async fn the_exchange_timeout_covers_the_body() {
    let (base, _) = serve(vec![b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nab".to_vec(), vec![]]).await;
    let url = format!("{base}/x");
    let headers = HeaderMap::new();
    let ex = Exchange::get(&url, &headers).with_timeout(Duration::from_millis(200));
    let mut resp = own().send(url.parse().unwrap(), ex, false).await.unwrap();
    assert_eq!(resp.chunk_at().await.unwrap().unwrap().0, "ab");
    let e = resp.chunk_at().await.unwrap_err();
    assert_eq!(e.describe(), "operation timed out");
}

#[tokio::test]
async fn a_reader_stopping_at_the_last_event_still_pools_its_connection() {
    // The body's end in the same read as its last event, then in a read of its own.
    let whole = [SSE_HEAD, b"9\r\ndata: a\n\n\r\n0\r\n\r\n"].concat();
    let split = vec![SSE_HEAD.to_vec(), b"9\r\ndata: a\n\n\r\n".to_vec(), b"0\r\n\r\n".to_vec()];
    for script in [vec![whole], split] {
        let (base, mut seen) = serve(script).await;
        let own = own();
        let url = format!("{base}/v1/completions");
        let mut resp = send(&own, &url, false).await.unwrap();
        assert_eq!(resp.chunk_at().await.unwrap().unwrap().0, "data: a\n\n");
        // The server's pauses are 5 ms: the body's end is in the socket by now.
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(resp);
        drain(&mut send(&own, &url, false).await.unwrap()).await;
        let (first, _) = seen.recv().await.unwrap();
        let (second, _) = seen.recv().await.unwrap();
        assert_eq!(first, second, "the second request reused the connection");
    }
}
