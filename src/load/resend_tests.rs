//! Tests of the delivery classification on real errors of hyper, hyper-util and reqwest, and
//! of the re-send loop on a transport of the test's own.

use super::*;
use crate::load::backend::{HttpBackend, SendFuture};
use crate::load::reuse::StreamReuse;
use hyper_util::rt::TokioIo;
use std::sync::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A real `hyper::Error` of a request given back unwritten: its connection is gone.
async fn given_back() -> hyper::Error {
    let (client, _server) = tokio::io::duplex(1024);
    let (mut sender, conn) = hyper::client::conn::http1::handshake::<_, String>(TokioIo::new(client)).await.unwrap();
    drop(conn);
    sender.send_request(hyper::Request::new(String::new())).await.unwrap_err()
}

/// A real `hyper::Error` of a request written whole, then met by the connection closing.
async fn written_then_closed() -> hyper::Error {
    let (client, mut server) = tokio::io::duplex(1024);
    let (mut sender, conn) = hyper::client::conn::http1::handshake::<_, String>(TokioIo::new(client)).await.unwrap();
    tokio::spawn(conn);
    tokio::spawn(async move {
        let mut seen = Vec::new();
        let mut buf = [0u8; 256];
        while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = server.read(&mut buf).await.unwrap();
            seen.extend_from_slice(&buf[..n]);
        }
        server.shutdown().await.unwrap();
    });
    sender.send_request(hyper::Request::new(String::new())).await.unwrap_err()
}

fn io(kind: std::io::ErrorKind) -> std::io::Error {
    std::io::Error::new(kind, "test")
}

#[tokio::test]
async fn a_request_hyper_gave_back_was_not_sent() {
    let e = given_back().await;
    assert!(e.is_canceled(), "{e:?}");
    assert_eq!(delivery(&BackendError::send(e)), Delivery::NotSent);
}

#[tokio::test]
async fn a_request_written_then_closed_may_have_been_sent() {
    let e = written_then_closed().await;
    assert!(e.is_incomplete_message(), "{e:?}");
    assert_eq!(delivery(&BackendError::send(e)), Delivery::ClosedUnanswered);
}

#[tokio::test]
async fn a_refused_connection_through_reqwest_was_not_sent() {
    let (_held, port) = crate::net::refused_port();
    let backend = HttpBackend::new(crate::net::client_builder().no_proxy().build().unwrap());
    let (url, headers) = (format!("http://127.0.0.1:{port}/v1/completions"), HeaderMap::new());
    let e = backend.send(Exchange::post(&url, &headers, None)).await.unwrap_err();
    assert_eq!(delivery(&e), Delivery::NotSent, "{}", e.describe());
}

#[tokio::test]
async fn a_server_that_reads_and_hangs_up_through_reqwest_may_have_been_sent() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 4096];
        let _ = sock.read(&mut buf).await;
    });
    let backend = HttpBackend::new(crate::net::client_builder().no_proxy().build().unwrap());
    let (url, headers) = (format!("http://127.0.0.1:{port}/v1/completions"), HeaderMap::new());
    let e = backend.send(Exchange::post(&url, &headers, Some(Bytes::from_static(b"{}")))).await.unwrap_err();
    assert_eq!(delivery(&e), Delivery::ClosedUnanswered, "{}", e.describe());
}

#[test]
fn io_errors_before_an_answer_are_closes_and_after_it_nothing() {
    use std::io::ErrorKind as K;
    for kind in [K::ConnectionReset, K::BrokenPipe, K::ConnectionAborted, K::UnexpectedEof] {
        assert_eq!(delivery(&BackendError::send(io(kind))), Delivery::ClosedUnanswered, "{kind:?}");
        assert_eq!(delivery(&BackendError::body(io(kind))), Delivery::Other, "{kind:?} in a body");
    }
    assert_eq!(delivery(&BackendError::send(io(K::TimedOut))), Delivery::Other);
    // A bare refusal (the in-process transport's "no such host") is not hyper's: not re-sent.
    assert_eq!(delivery(&BackendError::send(io(K::ConnectionRefused))), Delivery::Other);
}

/// What the scripted transport answers to one send.
#[derive(Clone, Copy, Debug)]
enum Step {
    GiveBack,
    Close,
    Answer,
}

/// A transport that answers sends from a script and records whether each asked for a fresh
/// connection.
#[derive(Debug, Default)]
struct Scripted {
    script: Mutex<Vec<Step>>,
    fresh: Mutex<Vec<bool>>,
    reuse: StreamReuse,
}

impl Scripted {
    fn new(mut script: Vec<Step>) -> Self {
        script.reverse();
        Self { script: Mutex::new(script), ..Self::default() }
    }
}

impl Backend for Scripted {
    fn send<'a>(&'a self, req: Exchange<'a>) -> SendFuture<'a> {
        self.send_stream(req, false)
    }

    fn send_stream<'a>(&'a self, _req: Exchange<'a>, fresh: bool) -> SendFuture<'a> {
        self.fresh.lock().unwrap().push(fresh || self.reuse.fresh_streams());
        let step = self.script.lock().unwrap().pop().unwrap_or(Step::Answer);
        Box::pin(async move {
            match step {
                Step::GiveBack => Err(BackendError::send(given_back().await)),
                Step::Close => Err(BackendError::send(written_then_closed().await)),
                Step::Answer => {
                    Ok(BackendResponse::from_local(axum::response::Response::new(axum::body::Body::empty())))
                }
            }
        })
    }

    fn stream_reuse(&self) -> Option<&StreamReuse> {
        Some(&self.reuse)
    }
}

async fn run(b: &Scripted) -> (bool, u32) {
    let n = AtomicU32::new(0);
    let ok = send_stream(b, "http://x/v1/completions", &HeaderMap::new(), Bytes::new(), &n).await.is_ok();
    (ok, n.into_inner())
}

#[tokio::test]
async fn what_was_not_sent_is_sent_again_on_a_fresh_connection_at_most_twice() {
    let b = Scripted::new(vec![Step::GiveBack, Step::Answer]);
    assert_eq!(run(&b).await, (true, 1));
    assert_eq!(*b.fresh.lock().unwrap(), [false, true], "the re-send asks for a connection of its own");
    let b = Scripted::new(vec![Step::GiveBack; 5]);
    assert_eq!(run(&b).await, (false, MAX_RESENDS));
    assert_eq!(b.fresh.lock().unwrap().len(), 3, "one send and two re-sends");
    assert!(!b.reuse.fresh_streams(), "nothing learned from requests that were never sent");
}

#[tokio::test]
async fn what_may_have_been_sent_is_never_sent_again_and_streams_stop_reusing() {
    let b = Scripted::new(vec![Step::Close, Step::Answer]);
    assert_eq!(run(&b).await, (false, 0));
    assert_eq!(b.fresh.lock().unwrap().len(), 1);
    assert!(b.reuse.fresh_streams(), "a pooled send closed unanswered: streams open their own");
    assert!(b.reuse.report().evidence.contains("connection closed before message completed"));
    assert_eq!(run(&b).await, (true, 0));
    assert_eq!(*b.fresh.lock().unwrap(), [false, true]);
}

#[tokio::test]
async fn a_fresh_send_closed_unanswered_after_a_re_send_is_an_error_without_learning() {
    let b = Scripted::new(vec![Step::GiveBack, Step::Close]);
    assert_eq!(run(&b).await, (false, 1));
    assert!(!b.reuse.fresh_streams(), "the close was on a fresh connection: not a pooled one's fault");
}
