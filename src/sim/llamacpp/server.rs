//! Serving a llama.cpp replica on loopback the way llama-server's HTTP layer behaves: every
//! answer says `Server: llama.cpp` and, unless it is an error (`Connection: close`),
//! `Keep-Alive: timeout=5, max=100`; yet after a *streamed* response the connection is closed
//! (no `Connection: close` is sent), so a pooled client that reuses it fails. Non-streamed
//! answers keep the connection open.
//!
//! axum's own server cannot close one connection after one response, so each accepted
//! connection is served here with hyper: the connection's [`StreamCloser`] rides in every
//! request's extensions, a streamed body holds a [`CloseGuard`], and when the body is done
//! (hyper drops it right after the terminal chunk) the connection shuts down. In process
//! there is no connection, no closer, and the guard does nothing.

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// `Content-Type` of llama-server's JSON answers.
pub(crate) const JSON: &str = "application/json; charset=utf-8";
/// `Content-Type` of its event streams.
pub(crate) const SSE: &str = "text/event-stream";
/// The `Keep-Alive` header every non-error answer carries.
pub(crate) const KEEP_ALIVE: &str = "timeout=5, max=100";

/// Pause after a failed `accept` (e.g. out of file descriptors) before the next one.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// Shuts one served connection down once its streamed response is done.
#[derive(Debug, Clone, Default)]
pub(crate) struct StreamCloser(Arc<Notify>);

/// Held by a streamed body; dropping it (the body is done or abandoned) closes the
/// connection the body was sent on, if there is one.
#[derive(Debug)]
pub(crate) struct CloseGuard(Option<StreamCloser>);

impl CloseGuard {
    /// A guard for the connection of `closer` (none in process).
    pub(crate) fn new(closer: Option<StreamCloser>) -> Self {
        Self(closer)
    }
}

impl Drop for CloseGuard {
    fn drop(&mut self) {
        if let Some(c) = &self.0 {
            c.0.notify_one();
        }
    }
}

/// Adds llama-server's response headers: `Server`, an empty `Access-Control-Allow-Origin`,
/// and `Keep-Alive` on every answer that does not close its connection.
pub(crate) async fn llama_headers(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert(header::SERVER, HeaderValue::from_static("llama.cpp"));
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static(""));
    if !h.contains_key(header::CONNECTION) {
        h.insert(HeaderName::from_static("keep-alive"), HeaderValue::from_static(KEEP_ALIVE));
    }
    resp
}

/// Serves `router` on `listener` until `cancel`, one hyper connection per accepted socket
/// (Nagle off, as the vLLM replicas have it).
pub(crate) fn serve(listener: TcpListener, router: Router, cancel: CancellationToken) {
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                () = cancel.cancelled() => return,
                r = listener.accept() => r,
            };
            match accepted {
                Ok((tcp, _)) => {
                    if let Err(e) = tcp.set_nodelay(true) {
                        tracing::debug!("cannot turn Nagle off on an accepted connection: {e}");
                    }
                    tokio::spawn(connection(tcp, router.clone(), cancel.clone()));
                }
                Err(e) => {
                    tracing::debug!("llama.cpp replica: accept failed: {e}");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            }
        }
    });
}

/// Serves one connection until the client leaves, a streamed response ends, or `cancel`.
async fn connection(tcp: TcpStream, router: Router, cancel: CancellationToken) {
    let closer = StreamCloser::default();
    let ext = closer.clone();
    let svc = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        req.extensions_mut().insert(ext.clone());
        router.clone().oneshot(req.map(Body::new))
    });
    let mut builder = http1::Builder::new();
    builder.auto_date_header(false);
    let conn = builder.serve_connection(TokioIo::new(tcp), svc);
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r {
                tracing::debug!("llama.cpp replica connection: {e}");
            }
            return;
        }
        () = closer.0.notified() => {}
        () = cancel.cancelled() => {}
    }
    // Mid-response this lets the response finish first; idle, it closes at once.
    conn.as_mut().graceful_shutdown();
    if let Err(e) = conn.await {
        tracing::debug!("llama.cpp replica connection: {e}");
    }
}

/// The gateway's client to llama.cpp replicas: no idle connections kept, since the replica
/// closes each one after a stream and a reused one would fail.
pub(crate) fn upstream_client() -> reqwest::Result<reqwest::Client> {
    crate::net::client_builder().no_proxy().pool_max_idle_per_host(0).build()
}
