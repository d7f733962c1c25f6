//! Re-sending a streamed request that provably never reached the server, on a fresh
//! connection; never one that may have reached it.
//!
//! "Provably not sent" is read from the transport's error chain: the TCP (or TLS) connect
//! failed (hyper-util's `Connect` error), or hyper gave the request back before writing any of
//! it (`hyper::Error::is_canceled`: the connection was found closed or not ready first). On a
//! reused pooled connection hyper-util already re-sends the latter itself; here it is re-sent
//! after a failed fresh connection, or a refused one. A request written and then met by the
//! connection closing before any answer (`is_incomplete_message`, a reset or broken pipe) may
//! have reached the server: it stays an error, and it is the signature of a pooled connection
//! the server had closed, so streams stop reusing connections ([`super::reuse`]).

use super::backend::{Backend, BackendError, BackendResponse, Exchange, Stage};
use bytes::Bytes;
use reqwest::header::HeaderMap;
use std::error::Error as StdError;
use std::sync::atomic::{AtomicU32, Ordering};

/// Most re-sends of one request (so at most three sends in all).
pub const MAX_RESENDS: u32 = 2;

/// What a failed send says about whether its request reached the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Provably not sent: no connection, or hyper gave the request back unwritten.
    NotSent,
    /// Perhaps written, then the connection closed before any answer: may have reached the
    /// server; what a dead pooled connection looks like.
    ClosedUnanswered,
    /// Anything else (a timeout, an answer that failed to parse, a failed body read).
    Other,
}

/// Classifies a failed exchange by its error chain (only a failure before any answer can be
/// [`Delivery::NotSent`] or [`Delivery::ClosedUnanswered`]).
pub fn delivery(e: &BackendError) -> Delivery {
    if e.stage() != Stage::Send {
        return Delivery::Other;
    }
    let mut closed = false;
    let mut link: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(err) = link {
        match signal(err) {
            Signal::NotSent => return Delivery::NotSent,
            Signal::Closed => closed = true,
            Signal::None => {}
        }
        link = err.source();
    }
    if closed { Delivery::ClosedUnanswered } else { Delivery::Other }
}

/// What one link of an error chain says.
enum Signal {
    NotSent,
    Closed,
    None,
}

fn signal(err: &(dyn StdError + 'static)) -> Signal {
    if err.downcast_ref::<hyper_util::client::legacy::Error>().is_some_and(|h| h.is_connect()) {
        return Signal::NotSent;
    }
    match err.downcast_ref::<super::own_h1::SendError>() {
        Some(super::own_h1::SendError::NotSent(_)) => return Signal::NotSent,
        Some(super::own_h1::SendError::Closed(_)) => return Signal::Closed,
        None => {}
    }
    if let Some(h) = err.downcast_ref::<hyper::Error>() {
        return match (h.is_canceled(), h.is_incomplete_message()) {
            (true, _) => Signal::NotSent,
            (false, true) => Signal::Closed,
            _ => Signal::None,
        };
    }
    use std::io::ErrorKind as Io;
    match err.downcast_ref::<std::io::Error>().map(std::io::Error::kind) {
        Some(Io::ConnectionReset | Io::ConnectionAborted | Io::BrokenPipe | Io::UnexpectedEof) => Signal::Closed,
        _ => Signal::None,
    }
}

/// Sends a streamed request (`body` to `url`) until it gets an answer or fails in a way that
/// may have reached the server: a send that provably did not is sent again on a connection of
/// its own, at most [`MAX_RESENDS`] times, each re-send counted in `reconnects`. A pooled send
/// closed before any answer makes every later stream open its own connection.
pub async fn send_stream(
    backend: &dyn Backend,
    url: &str,
    headers: &HeaderMap,
    body: Bytes,
    reconnects: &AtomicU32,
) -> Result<BackendResponse, BackendError> {
    let mut fresh = false;
    loop {
        let err = match backend.send_stream(Exchange::post(url, headers, Some(body.clone())), fresh).await {
            Ok(resp) => return Ok(resp),
            Err(e) => e,
        };
        match delivery(&err) {
            Delivery::NotSent if reconnects.load(Ordering::Relaxed) < MAX_RESENDS => {
                reconnects.fetch_add(1, Ordering::Relaxed);
                fresh = true;
            }
            Delivery::ClosedUnanswered if !fresh => {
                if let Some(reuse) = backend.stream_reuse() {
                    reuse.learn(&err.describe());
                }
                return Err(err);
            }
            _ => return Err(err),
        }
    }
}

#[cfg(test)]
#[path = "resend_tests.rs"]
mod tests;
