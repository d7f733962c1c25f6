//! The transport seam: one HTTP exchange with the target (method, URL, headers and body in;
//! status, headers and a body read chunk by chunk out).
//!
//! [`HttpBackend`] sends it with reqwest (what real targets use); the simulator's in-process
//! backend (`crate::sim::inproc`) hands it to an axum router directly, with no socket, so
//! tests can run a whole session on tokio's paused clock. Everything that talks HTTP to the
//! target goes through a [`Backend`]: the load, the API client and the metrics poller.
//!
//! Hot path cost: one boxed future per exchange; reading a chunk is a `match` on the body
//! kind and the underlying read, no allocation of its own.

use super::reuse::StreamReuse;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use reqwest::header::{CONNECTION, HeaderMap};
use reqwest::{Method, StatusCode};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// Any error a transport reports, boxed.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// One request to send.
#[derive(Debug, Clone)]
pub struct Exchange<'a> {
    /// HTTP method.
    pub method: Method,
    /// Full URL (may carry `user:password@`; never put it in a message unredacted).
    pub url: &'a str,
    /// Request headers.
    pub headers: &'a HeaderMap,
    /// Request body; None sends none.
    pub body: Option<Bytes>,
    /// Longest time for the whole exchange, body included; None waits as long as it takes.
    pub timeout: Option<Duration>,
}

impl<'a> Exchange<'a> {
    /// A `GET` without a body or a timeout.
    pub fn get(url: &'a str, headers: &'a HeaderMap) -> Self {
        Self { method: Method::GET, url, headers, body: None, timeout: None }
    }

    /// A `POST` of `body` (None: no body) without a timeout.
    pub fn post(url: &'a str, headers: &'a HeaderMap, body: Option<Bytes>) -> Self {
        Self { method: Method::POST, url, headers, body, timeout: None }
    }

    /// The same exchange, limited to `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// Where an exchange failed: this decides how a failed request is classified (a connect
/// error before any answer, a stream reset once the body flows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// No answer: connecting, sending, or waiting for the response head.
    Send,
    /// The answer started, then reading its body failed.
    Body,
}

/// A failed exchange. Its text is the transport's own message without the URL; use
/// [`BackendError::describe`] for the message with its causes.
#[derive(Debug, thiserror::Error)]
#[error("{source}")]
pub struct BackendError {
    stage: Stage,
    #[source]
    source: BoxError,
}

impl BackendError {
    /// A failure before any answer.
    pub fn send(source: impl Into<BoxError>) -> Self {
        Self { stage: Stage::Send, source: source.into() }
    }

    /// A failure while reading the body.
    pub fn body(source: impl Into<BoxError>) -> Self {
        Self { stage: Stage::Body, source: source.into() }
    }

    /// Where it failed.
    pub fn stage(&self) -> Stage {
        self.stage
    }

    /// The error and its causes in one line (see [`crate::net::describe_chain`]).
    pub fn describe(&self) -> String {
        crate::net::describe_chain(self)
    }

    fn from_reqwest(e: reqwest::Error, stage: Stage) -> Self {
        Self { stage, source: Box::new(e.without_url()) }
    }
}

/// A body longer than its read allows (a body error's source).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an answer over {} (read no further)", super::limits::size_text(*limit))]
pub struct TooLarge {
    /// The limit, bytes.
    pub limit: usize,
}

impl BackendError {
    /// The limit a body went over, when that is why the read failed.
    pub fn too_large(&self) -> Option<TooLarge> {
        self.source.downcast_ref::<TooLarge>().copied()
    }
}

/// The future of one exchange, up to the response head.
pub type SendFuture<'a> = Pin<Box<dyn Future<Output = Result<BackendResponse, BackendError>> + Send + 'a>>;

/// A transport for HTTP exchanges with the target. Dyn-compatible: sessions hold an
/// `Arc<dyn Backend>` ([`SharedBackend`]).
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// Sends `req`; resolves once the response head is in (the body is read from the
    /// [`BackendResponse`]).
    fn send<'a>(&'a self, req: Exchange<'a>) -> SendFuture<'a>;

    /// Sends a streamed request of the load: on a connection of its own when `fresh`, or when
    /// [`Self::stream_reuse`] says streams must not reuse connections; else as [`Self::send`].
    /// A transport without connections (in process) sends it as any other.
    fn send_stream<'a>(&'a self, req: Exchange<'a>, fresh: bool) -> SendFuture<'a> {
        let _ = fresh;
        self.send(req)
    }

    /// Whether streamed requests may reuse pooled connections, for a transport that pools
    /// them (None: it has no connections).
    fn stream_reuse(&self) -> Option<&StreamReuse> {
        None
    }
}

/// A backend shared by every task of a session.
pub type SharedBackend = Arc<dyn Backend>;

/// An answer: status and headers, and a body still to read.
#[derive(Debug)]
pub struct BackendResponse(Answer);

#[derive(Debug)]
enum Answer {
    Http(reqwest::Response),
    Local {
        status: StatusCode,
        headers: HeaderMap,
        body: axum::body::BodyDataStream,
    },
    /// Boxed: hyper-util's body with its decoder is several times the size of the others.
    H1(Box<super::h1::H1Answer>),
    /// The own stream reader's answer (`super::own_h1`).
    Own(Box<super::own_h1::OwnAnswer>),
}

impl BackendResponse {
    /// An answer reqwest received.
    pub fn from_reqwest(resp: reqwest::Response) -> Self {
        Self(Answer::Http(resp))
    }

    /// An answer an in-process service produced.
    pub fn from_local(resp: axum::response::Response) -> Self {
        let (parts, body) = resp.into_parts();
        Self(Answer::Local { status: parts.status, headers: parts.headers, body: body.into_data_stream() })
    }

    /// An answer the hyper-util stream path received.
    pub(crate) fn from_h1(answer: super::h1::H1Answer) -> Self {
        Self(Answer::H1(Box::new(answer)))
    }

    /// An answer the own stream reader received.
    pub(crate) fn from_own(answer: super::own_h1::OwnAnswer) -> Self {
        Self(Answer::Own(Box::new(answer)))
    }

    /// HTTP status.
    pub fn status(&self) -> StatusCode {
        match &self.0 {
            Answer::Http(r) => r.status(),
            Answer::Local { status, .. } => *status,
            Answer::H1(a) => a.status,
            Answer::Own(a) => a.status,
        }
    }

    /// Response headers.
    pub fn headers(&self) -> &HeaderMap {
        match &self.0 {
            Answer::Http(r) => r.headers(),
            Answer::Local { headers, .. } => headers,
            Answer::H1(a) => &a.headers,
            Answer::Own(a) => &a.headers,
        }
    }

    /// The next piece of the body as it arrives; None at its end.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, BackendError> {
        match &mut self.0 {
            Answer::Http(r) => r.chunk().await.map_err(|e| BackendError::from_reqwest(e, Stage::Body)),
            Answer::Local { body, .. } => body.next().await.transpose().map_err(BackendError::body),
            Answer::H1(a) => a.chunk().await,
            Answer::Own(a) => Ok(a.chunk_at().await?.map(|(b, _)| b)),
        }
    }

    /// The next piece of the body and when the kernel received it, where the transport knows
    /// (the own stream reader on Linux; None otherwise: take the time of the wake-up).
    pub async fn chunk_at(&mut self) -> Result<Option<(Bytes, Option<tokio::time::Instant>)>, BackendError> {
        match &mut self.0 {
            Answer::Own(a) => a.chunk_at().await,
            _ => Ok(self.chunk().await?.map(|b| (b, None))),
        }
    }

    /// The whole body, at most `limit` bytes (a compressed body counts decoded): a longer one
    /// is a body error, [`TooLarge`], read no further.
    pub async fn bytes(mut self, limit: usize) -> Result<Bytes, BackendError> {
        let mut all = Vec::new();
        while let Some(b) = self.chunk().await? {
            if all.len().saturating_add(b.len()) > limit {
                return Err(BackendError::body(TooLarge { limit }));
            }
            all.extend_from_slice(&b);
        }
        Ok(Bytes::from(all))
    }

    /// The start of the body, for a message (an error answer's): at most `keep` bytes, and
    /// only what arrives within `wait`. True when some of the body was left unread (it is
    /// longer, slower, or broke off); the rest is never read.
    pub async fn head_of_body(mut self, keep: usize, wait: Duration) -> (Bytes, bool) {
        let mut kept = Vec::new();
        let read = async {
            loop {
                let b = match self.chunk().await {
                    Ok(Some(b)) => b,
                    Ok(None) => return false,
                    Err(_) => return true,
                };
                let room = keep.saturating_sub(kept.len());
                kept.extend_from_slice(&b[..b.len().min(room)]);
                if b.len() > room {
                    return true;
                }
            }
        };
        let cut = tokio::time::timeout(wait, read).await.unwrap_or(true);
        (Bytes::from(kept), cut)
    }

    /// The body as a stream of pieces (for proxying).
    pub fn into_stream(self) -> impl Stream<Item = Result<Bytes, BackendError>> + Send + 'static {
        futures_util::stream::unfold(self, |mut resp| async move { resp.chunk().await.transpose().map(|r| (r, resp)) })
    }
}

/// Exchanges over reqwest: what real targets use. Clones share the connections and the policy.
#[derive(Debug, Clone)]
pub struct HttpBackend {
    /// Every exchange that may reuse a connection (one pool shared by every exchange).
    client: reqwest::Client,
    /// Exchanges that must open a connection of their own: keeps no idle connection.
    fresh: reqwest::Client,
    /// Whether streamed requests go out on `client` or on `fresh`.
    streams: Arc<StreamReuse>,
    /// Streamed requests to `http://` targets (bounded read buffer, `--source-addrs`).
    h1: Arc<super::h1::H1Streams>,
}

impl HttpBackend {
    /// A backend sending with `client`; connections of their own come from a client of
    /// [`crate::net::client_builder`] that keeps none idle (`client` itself if that cannot be
    /// built). Use [`Self::from_builder`] to give both the same settings.
    pub fn new(client: reqwest::Client) -> Self {
        let fresh = crate::net::client_builder().pool_max_idle_per_host(0).build();
        let fresh = fresh.unwrap_or_else(|_| client.clone());
        Self::with_fresh(client, fresh)
    }

    /// A backend pooling on `client` and opening connections of their own on `fresh` (a
    /// client that keeps no idle connection, e.g. `pool_max_idle_per_host(0)`).
    pub fn with_fresh(client: reqwest::Client, fresh: reqwest::Client) -> Self {
        Self { client, fresh, streams: Arc::default(), h1: Arc::new(super::h1::H1Streams::new(&[])) }
    }

    /// The same backend, its streamed requests to `http://` targets bound to `sources` in turn.
    pub fn with_sources(self, sources: &[std::net::IpAddr]) -> Self {
        Self { h1: Arc::new(super::h1::H1Streams::new(sources)), ..self }
    }

    /// A backend whose two clients are built by `make` (the fresh one without idle pool).
    pub fn from_builder(make: impl Fn() -> reqwest::ClientBuilder) -> reqwest::Result<Self> {
        Ok(Self::with_fresh(make().build()?, make().pool_max_idle_per_host(0).build()?))
    }

    /// A shared backend over `client` (see [`Self::new`]).
    pub fn shared(client: reqwest::Client) -> SharedBackend {
        Arc::new(Self::new(client))
    }
}

/// Sends `req` with `client`; `close` asks the server to close the connection after it.
fn exchange<'a>(client: &reqwest::Client, req: Exchange<'a>, close: bool) -> SendFuture<'a> {
    let mut rb = client.request(req.method, req.url).headers(req.headers.clone());
    if close {
        rb = rb.header(CONNECTION, "close");
    }
    if let Some(body) = req.body {
        rb = rb.body(body);
    }
    if let Some(t) = req.timeout {
        rb = rb.timeout(t);
    }
    Box::pin(async move {
        let resp = rb.send().await.map_err(|e| BackendError::from_reqwest(e, Stage::Send))?;
        Ok(BackendResponse::from_reqwest(resp))
    })
}

impl Backend for HttpBackend {
    fn send<'a>(&'a self, req: Exchange<'a>) -> SendFuture<'a> {
        exchange(&self.client, req, false)
    }

    fn send_stream<'a>(&'a self, req: Exchange<'a>, fresh: bool) -> SendFuture<'a> {
        let fresh = fresh || self.streams.fresh_streams();
        if let Some(uri) = self.h1.route(req.url) {
            return self.h1.send(uri, req, fresh);
        }
        match fresh {
            true => exchange(&self.fresh, req, true),
            false => exchange(&self.client, req, false),
        }
    }

    fn stream_reuse(&self) -> Option<&StreamReuse> {
        Some(&self.streams)
    }
}

#[cfg(test)]
#[path = "backend_tests.rs"]
mod tests;
