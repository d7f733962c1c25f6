//! Hostile answers to the load's streamed requests: the first one is hostile, every later one
//! well-behaved, so each run shows the hostile request ending with its named kind and the
//! session going on to measure its next cell.

use super::server::{Server, first_loads, handler, head, normal, stream_tokens, write_flood};
use super::{SECRET, run_against};
use llm_decode_bench::load::sample::ErrorKind;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// One gigabyte.
const GB: u64 = 1 << 30;

/// The bearer token a request sent, as a hostile server would echo it.
fn echoed(req: &super::server::Request) -> String {
    req.header("authorization").unwrap_or_default().to_string()
}

#[test]
fn a_head_sent_one_byte_a_second_is_a_first_token_timeout() {
    let (h, _) = first_loads(1, |_, mut sock| async move {
        for b in b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n" {
            if sock.write_all(&[*b]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
    let s = Server::start(h);
    let ran = run_against(&s.base, &[]);
    assert_eq!(ran.kinds().get(&ErrorKind::FirstTokenTimeout), Some(&1), "{}", ran.stderr);
    assert!(ran.example(ErrorKind::FirstTokenTimeout).starts_with("no first token after 2."));
    ran.assert_went_on();
    ran.assert_clean();
}

#[test]
fn a_head_that_never_ends_is_oversized() {
    let (h, _) = first_loads(1, |req, mut sock| async move {
        let _ = sock.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n").await;
        let echo = format!("x-echo: {}\r\n", echoed(&req));
        while sock.write_all(echo.as_bytes()).await.is_ok() {}
    });
    let s = Server::start(h);
    let ran = run_against(&s.base, &[]);
    assert_eq!(ran.kinds().get(&ErrorKind::Oversized), Some(&1), "{}", ran.stderr);
    assert!(ran.example(ErrorKind::Oversized).starts_with("response head too large"), "{}", ran.stderr);
    ran.assert_went_on();
    ran.assert_clean();
}

#[test]
fn an_event_stream_line_that_never_ends_is_oversized_at_its_cap() {
    let written = Arc::new(AtomicU64::new(0));
    let count = Arc::clone(&written);
    let (h, _) = first_loads(1, move |req, mut sock| {
        let count = Arc::clone(&count);
        async move {
            let _ = sock.write_all(&head("200 OK", &[("content-type", "text/event-stream")])).await;
            let _ = sock.write_all(format!("data: {}", echoed(&req)).as_bytes()).await;
            count.store(write_flood(&mut sock, b'x', GB).await, Ordering::SeqCst);
        }
    });
    let s = Server::start(h);
    let ran = run_against(&s.base, &[]);
    assert_eq!(ran.kinds().get(&ErrorKind::Oversized), Some(&1), "{}", ran.stderr);
    assert_eq!(ran.example(ErrorKind::Oversized), "SSE line exceeds 1048576 bytes");
    assert!(written.load(Ordering::SeqCst) < GB / 8, "read no further than the cap");
    ran.assert_went_on();
    ran.assert_clean();
}

/// A gzip body that inflates to `mib` MiB of zeros, built without ever holding them: deflate
/// blocks of 1 MiB each, fully flushed so every one after the first is the same bytes. The
/// trailer is left out: no reader may get that far.
pub(crate) fn gzip_bomb(mib: usize) -> Vec<u8> {
    use flate2::{Compress, Compression, FlushCompress};
    let zeros = vec![0u8; 1 << 20];
    let mut c = Compress::new(Compression::best(), false);
    let mut segment = || {
        let mut out = Vec::with_capacity(64 << 10);
        let start = c.total_in();
        while c.total_in() - start < zeros.len() as u64 {
            let at = (c.total_in() - start) as usize;
            c.compress_vec(&zeros[at..], &mut out, FlushCompress::Full).unwrap();
            out.reserve(64 << 10);
        }
        c.compress_vec(&[], &mut out, FlushCompress::Full).unwrap();
        out
    };
    let (first, repeated) = (segment(), segment());
    assert_eq!(repeated, segment(), "fully flushed blocks of zeros repeat");
    let mut body = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 0xff];
    body.extend_from_slice(&first);
    (1..mib).for_each(|_| body.extend_from_slice(&repeated));
    body
}

#[test]
fn a_gzip_bomb_on_the_stream_stops_at_the_line_cap() {
    let bomb = Arc::new(gzip_bomb(4096));
    assert!(bomb.len() < 8 << 20, "{} bytes inflate to 4 GiB", bomb.len());
    let (h, _) = first_loads(1, move |_, mut sock| {
        let bomb = Arc::clone(&bomb);
        async move {
            let headers = [("content-type", "text/event-stream"), ("content-encoding", "gzip")];
            let _ = sock.write_all(&head("200 OK", &headers)).await;
            let _ = sock.write_all(&bomb).await;
        }
    });
    let s = Server::start(h);
    let ran = run_against(&s.base, &[]);
    assert_eq!(ran.kinds().get(&ErrorKind::Oversized), Some(&1), "{}", ran.stderr);
    let load = &s.requests(|r| r.is_load())[0];
    assert_eq!(load.header("accept-encoding"), Some("identity"), "the load asks for no compression");
    ran.assert_went_on();
    ran.assert_clean();
}

#[test]
fn invalid_utf8_in_the_stream_is_a_malformed_chunk() {
    let (h, _) = first_loads(1, |req, mut sock| async move {
        let _ = sock.write_all(&head("200 OK", &[("content-type", "text/event-stream")])).await;
        for _ in 0..4 {
            let mut bad = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xff\xfe\xc3(".to_vec();
            bad.extend_from_slice(echoed(&req).as_bytes());
            bad.extend_from_slice(b"\"}}]}\n\n");
            let _ = sock.write_all(&bad).await;
        }
        stream_tokens(&mut sock, 8).await;
    });
    let s = Server::start(h);
    let ran = run_against(&s.base, &[]);
    assert_eq!(ran.kinds().get(&ErrorKind::MalformedChunk), Some(&1), "{}", ran.stderr);
    assert_eq!(ran.example(ErrorKind::MalformedChunk), "4 malformed chunk(s)");
    ran.assert_went_on();
    ran.assert_clean();
}

#[test]
fn a_close_delimited_http_1_0_stream_is_read_to_its_close() {
    let (h, loads) = first_loads(u64::MAX, |req, mut sock| async move {
        let _ = sock.write_all(b"HTTP/1.0 200 OK\r\ncontent-type: text/event-stream\r\n\r\n").await;
        stream_tokens(&mut sock, req_tokens(&req)).await;
    });
    let s = Server::start(h);
    let ran = run_against(&s.base, &[]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(ran.kinds().is_empty(), "{:?}", ran.kinds());
    assert!(loads.load(Ordering::SeqCst) >= 3, "every stream was HTTP/1.0");
    ran.assert_went_on();
    ran.assert_clean();
}

fn req_tokens(req: &super::server::Request) -> u64 {
    let v: serde_json::Value = serde_json::from_slice(&req.body).unwrap_or_default();
    v["max_tokens"].as_u64().unwrap_or(16)
}

#[test]
fn a_redirect_to_another_origin_is_never_followed() {
    let elsewhere = Server::start(handler(normal));
    let to = format!("{}/v1/chat/completions?key={SECRET}", elsewhere.base);
    let (h, _) = first_loads(1, move |_, mut sock| {
        let to = to.clone();
        async move {
            let headers = [("location", to.as_str()), ("content-length", "0")];
            let _ = sock.write_all(&head("307 Temporary Redirect", &headers)).await;
        }
    });
    let s = Server::start(h);
    let ran = run_against(&s.base, &[]);
    assert_eq!(ran.kinds().get(&ErrorKind::Redirected), Some(&1), "{}", ran.stderr);
    let example = ran.example(ErrorKind::Redirected);
    let expected = format!("HTTP 307: a redirect to {}/v1/chat/completions?key=***, not followed", elsewhere.base);
    assert_eq!(example, expected);
    assert!(elsewhere.requests(|_| true).is_empty(), "nothing, and no key, went to the other origin");
    ran.assert_went_on();
    ran.assert_clean();
}

#[test]
fn a_one_gigabyte_error_body_is_cut_at_its_cap() {
    let written = Arc::new(AtomicU64::new(0));
    let count = Arc::clone(&written);
    let (h, _) = first_loads(1, move |req, mut sock| {
        let count = Arc::clone(&count);
        async move {
            let len = GB.to_string();
            let headers = [("content-type", "application/json"), ("content-length", len.as_str())];
            let _ = sock.write_all(&head("500 Internal Server Error", &headers)).await;
            let start = format!("{{\"error\": {{\"message\": \"overloaded, {} ", echoed(&req));
            let _ = sock.write_all(start.as_bytes()).await;
            count.store(write_flood(&mut sock, b'x', GB - start.len() as u64).await, Ordering::SeqCst);
        }
    });
    let s = Server::start(h);
    let ran = run_against(&s.base, &[]);
    assert_eq!(ran.kinds().get(&ErrorKind::ServerError), Some(&1), "{}", ran.stderr);
    let example = ran.example(ErrorKind::ServerError);
    assert!(example.starts_with("HTTP 500: {\"error\": {\"message\": \"overloaded, Bearer *** xxx"), "{example}");
    assert!(written.load(Ordering::SeqCst) < GB / 8, "read no further than the cap");
    ran.assert_went_on();
    ran.assert_clean();
}
