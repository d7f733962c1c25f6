//! Tests of the hyper-util stream path: reads bounded by [`READ_BUF_MAX`] against a server
//! faster than the reader, the source addresses taken in turn, and which URLs it takes.

use super::*;
use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A loopback server answering every connection's request with `body` (`content-length`) at
/// once, whole; sends each peer's address on the returned channel.
async fn serve(body: &'static [u8]) -> (String, tokio::sync::mpsc::UnboundedReceiver<SocketAddr>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut sock, peer)) = listener.accept().await {
            let _ = tx.send(peer);
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut piece = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut piece).await {
                        Ok(n) if n > 0 => head.extend_from_slice(&piece[..n]),
                        _ => return,
                    }
                }
                let answer = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len());
                let _ = sock.write_all(answer.as_bytes()).await;
                let _ = sock.write_all(body).await;
            });
        }
    });
    (base, rx)
}

#[tokio::test]
async fn reads_stay_within_the_bound_while_the_reader_lags() {
    static BODY: [u8; 4 << 20] = [b'x'; 4 << 20];
    let (base, _) = serve(&BODY).await;
    let h1 = H1Streams { proxy: ProxyEnv::default(), own: None, ..H1Streams::new(&[]) };
    let url = format!("{base}/v1/completions");
    let headers = HeaderMap::new();
    let uri = h1.route(&url).expect("an http:// URL takes this path");
    let mut resp = h1.send(uri, Exchange::post(&url, &headers, Some(Bytes::from("{}"))), false).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    // The server writes 4 MiB at once; the reader is behind for every read after this.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (mut total, mut largest, mut reads) = (0, 0, 0);
    while let Some(b) = resp.chunk().await.unwrap() {
        (total, largest, reads) = (total + b.len(), largest.max(b.len()), reads + 1);
        if reads % 16 == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    assert_eq!(total, BODY.len(), "the whole body");
    assert!(largest <= READ_BUF_MAX, "a read of {largest} bytes, over {READ_BUF_MAX}");
    assert!(largest > READ_BUF_MAX / 2, "reads filled the buffer ({largest}): the reader did lag");
}

#[tokio::test]
async fn connections_come_from_each_source_address_in_turn() {
    let (base, mut peers) = serve(b"ok").await;
    let sources: Vec<IpAddr> = ["127.0.0.1", "127.0.0.2"].iter().map(|a| a.parse().unwrap()).collect();
    let h1 = H1Streams { proxy: ProxyEnv::default(), own: None, ..H1Streams::new(&sources) };
    let url = format!("{base}/v1/completions");
    let headers = HeaderMap::new();
    for i in 0..4 {
        let uri = h1.route(&url).unwrap();
        let resp = h1.send(uri, Exchange::post(&url, &headers, None), i % 2 == 0).await.unwrap();
        assert_eq!(resp.bytes(16).await.unwrap(), "ok");
    }
    let mut seen = Vec::new();
    while let Ok(p) = peers.try_recv() {
        seen.push(p.ip().to_string());
    }
    assert_eq!(seen, ["127.0.0.1", "127.0.0.2", "127.0.0.1", "127.0.0.2"]);
}

#[test]
fn https_credentials_and_proxies_stay_with_reqwest() {
    let h1 = H1Streams { proxy: ProxyEnv::default(), own: None, ..H1Streams::new(&[]) };
    assert!(h1.route("http://127.0.0.1:8000/v1/chat/completions").is_some());
    assert!(h1.route("http://[::1]:8000/v1/completions").is_some());
    assert!(h1.route("https://h/v1/completions").is_none());
    assert!(h1.route("http://user:secret@h/v1/completions").is_none());
    assert!(h1.route("http://h/a path").is_none(), "a URL hyper does not parse");
    let proxy = ProxyEnv::new(Some("http_proxy"), "localhost,127.0.0.2");
    let proxied = H1Streams { proxy, own: None, ..H1Streams::new(&[]) };
    assert!(proxied.route("http://127.0.0.1:8000/v1/completions").is_none());
    assert!(proxied.route("http://127.0.0.2:8000/v1/completions").is_some(), "NO_PROXY lists it");
    assert!(proxied.route("http://localhost:8000/v1/completions").is_some(), "NO_PROXY lists it");
}

#[tokio::test]
async fn a_refused_connection_is_a_connect_error_that_was_never_sent() {
    let (_held, port) = crate::net::refused_port();
    let h1 = H1Streams { proxy: ProxyEnv::default(), own: None, ..H1Streams::new(&[]) };
    let url = format!("http://127.0.0.1:{port}/v1/completions");
    let headers = HeaderMap::new();
    let e = h1.send(h1.route(&url).unwrap(), Exchange::post(&url, &headers, None), true).await.unwrap_err();
    assert_eq!(super::super::resend::delivery(&e), super::super::resend::Delivery::NotSent);
    assert!(!e.describe().contains("/v1/completions"), "{}", e.describe());
}

#[tokio::test]
async fn the_exchange_timeout_covers_the_body() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/x", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut piece = [0u8; 1024];
        let _ = sock.read(&mut piece).await;
        let _ = sock.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nab").await;
        tokio::time::sleep(Duration::from_secs(30)).await;
    });
    let h1 = H1Streams { proxy: ProxyEnv::default(), own: None, ..H1Streams::new(&[]) };
    let headers = HeaderMap::new();
    let ex = Exchange::get(&url, &headers).with_timeout(Duration::from_millis(200));
    let mut resp = h1.send(h1.route(&url).unwrap(), ex, false).await.unwrap();
    assert_eq!(resp.chunk().await.unwrap().as_deref(), Some(&b"ab"[..]));
    let e = resp.chunk().await.unwrap_err();
    assert_eq!(e.describe(), "operation timed out");
}

#[tokio::test]
async fn a_connect_waits_for_a_permit_of_the_gate() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let uri: Uri = format!("http://{}/", listener.local_addr().unwrap()).parse().unwrap();
    let gate = Arc::new(Semaphore::new(1));
    let mut gated = Gated { inner: HttpConnector::new(), gate: Arc::clone(&gate) };
    let held = gate.acquire().await.unwrap();
    let mut connect = std::pin::pin!(gated.call(uri));
    let waited = tokio::time::timeout(Duration::from_millis(100), connect.as_mut()).await;
    assert!(waited.is_err(), "connected while the only permit was held");
    drop(held);
    connect.await.expect("connects once the permit is free");
}
