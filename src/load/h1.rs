//! The load's streamed requests to `http://` targets, sent on hyper-util's HTTP/1 client with a
//! bounded read buffer, from the `--source-addrs` addresses in turn.
//!
//! reqwest (what every other exchange uses) cannot bound hyper's read buffer, which doubles up
//! to about 400 KB per connection while reads fill it: every read does while the client lags a
//! fast server (BENCHMARKS.md, "Memory per stream and 10,000 streams"). Here it stops at
//! [`READ_BUF_MAX`]. Everything else is what the reqwest path does: `Connection: close` on a
//! connection of its own, a pool of idle connections (90 s) otherwise, Nagle off, redirects
//! never followed, a gzip body decoded (the load asks for `identity`), the exchange's timeout
//! over head and body, and hyper's and hyper-util's own errors in the chain
//! (`super::resend`, `super::classify` read them). A URL this path does not take (https,
//! credentials in it, a proxy set in the environment) goes to reqwest ([`H1Streams::route`]).
//!
//! At most [`CONNECTS_IN_FLIGHT`] TCP connects are in flight at once.
//!
//! By default the same streams go to the own stream reader instead (`super::own_h1`: no
//! connection task, one piece per socket read, the kernel's receive time of each read; it beat
//! this path on CPU per token at 1 and 16 events per frame, BENCHMARKS.md); the hidden switch
//! [`OWN_READER_VAR`] set to `0` sends them on hyper-util.
//!
//! Hot path cost: one `frame()` poll per body read, as reqwest's; a relaxed atomic add per
//! request to pick the source address.

use super::backend::{BackendError, BackendResponse, Exchange, SendFuture};
use super::proxy_env::ProxyEnv;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Uri;
use hyper::header::{CONNECTION, HeaderValue};
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tower::{Service, ServiceExt};
use tower_http::decompression::{Decompression, DecompressionBody};

/// Most bytes hyper's read buffer holds per connection: 8 KiB, hyper's least. Measured with
/// `bench --modes firehose --streams 64,1024 --chunk-shape vllm --events-per-frame 16`
/// (BENCHMARKS.md, "Memory per stream and 10,000 streams"), a stream's whole footprint at
/// 1,024 firehose streams was 55 KiB at 8 KiB, 71 KiB at 16, 120 KiB at 32 and 220 KiB at 64
/// (each KiB of the cap costs 2 to 3 KiB of RSS per stream), so only 8 KiB
/// keeps it under 64 KiB. Smaller reads cost CPU per token while the client lags (the same
/// runs: about 0.13 us more than at 64 KiB at 64 streams, 0.2-0.3 us at 1,024). A response
/// head over 8 KiB is `oversized`.
pub const READ_BUF_MAX: usize = 8 * 1024;

/// Most TCP connects in flight at once, over every source address: thousands of streams
/// starting together otherwise send more SYNs than a listener's backlog holds
/// (`net.core.somaxconn`, 4,096 on many systems), and the dropped ones wait a second or more
/// for their retransmit (BENCHMARKS.md: 1,260 of 10,000 `connect` errors against a starved
/// simulator). A loopback connect takes well under a millisecond, so the gate holds back a
/// start of thousands of streams little; a connect that hangs holds its permit until the
/// kernel gives up on it.
pub const CONNECTS_IN_FLIGHT: usize = 256;

/// How long an idle pooled connection is kept, as the reqwest clients of a session do.
pub(crate) const POOL_IDLE: Duration = Duration::from_secs(90);

type Inner = Client<Gated, Full<Bytes>>;
type H1Client = Decompression<Inner>;

/// Streamed requests over hyper-util, one pooled and one fresh client per source address.
#[derive(Debug)]
pub struct H1Streams {
    /// Clients that keep idle connections, one per source address.
    pooled: Vec<H1Client>,
    /// Clients that keep none (connections of their own, `Connection: close`).
    fresh: Vec<H1Client>,
    /// The next source address, counted up per request.
    next: AtomicUsize,
    /// The environment's proxy settings: a stream whose URL they send through a proxy goes to
    /// reqwest.
    proxy: ProxyEnv,
    /// The own stream reader, which sends the streams instead unless [`OWN_READER_VAR`] is `0`.
    own: Option<Arc<super::own_h1::OwnStreams>>,
}

/// The hidden switch of the own stream reader (`super::own_h1`): `0` sends the load's streams
/// to `http://` targets on hyper-util instead of it.
pub const OWN_READER_VAR: &str = "LLM_DECODE_BENCH_OWN_H1";

impl H1Streams {
    /// Clients binding their connections to `sources` in turn (empty: the system picks).
    pub fn new(sources: &[IpAddr]) -> Self {
        let gate = Arc::new(Semaphore::new(CONNECTS_IN_FLIGHT));
        let locals: Vec<Option<IpAddr>> = match sources.is_empty() {
            true => vec![None],
            false => sources.iter().copied().map(Some).collect(),
        };
        let own = std::env::var_os(OWN_READER_VAR).is_none_or(|v| v != "0");
        Self {
            own: own.then(|| super::own_h1::OwnStreams::new(sources, Arc::clone(&gate))),
            pooled: locals.iter().map(|l| client(*l, true, &gate)).collect(),
            fresh: locals.iter().map(|l| client(*l, false, &gate)).collect(),
            next: AtomicUsize::new(0),
            proxy: ProxyEnv::from_env(),
        }
    }

    /// The URI of `url` when this path takes it: `http://`, no credentials in it, no proxy
    /// for it in the environment (`NO_PROXY` read as reqwest reads it), and a URI hyper parses
    /// (else reqwest sends it).
    pub fn route(&self, url: &str) -> Option<Uri> {
        if !url.starts_with("http://") || self.proxy.for_url(url).is_some() {
            return None;
        }
        let uri: Uri = url.parse().ok()?;
        (!uri.authority()?.as_str().contains('@')).then_some(uri)
    }

    /// Sends `req` to `uri`: on a connection of its own asking the server to close it when
    /// `fresh`, else on a pooled one.
    pub fn send<'a>(&'a self, uri: Uri, req: Exchange<'a>, fresh: bool) -> SendFuture<'a> {
        if let Some(own) = &self.own {
            return own.send(uri, req, fresh);
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.pooled.len();
        let client = if fresh { &self.fresh[i] } else { &self.pooled[i] }.clone();
        let mut request = hyper::Request::new(Full::new(req.body.unwrap_or_default()));
        *request.method_mut() = req.method;
        *request.uri_mut() = uri;
        *request.headers_mut() = req.headers.clone();
        if fresh {
            request.headers_mut().insert(CONNECTION, HeaderValue::from_static("close"));
        }
        let deadline = req.timeout.map(|t| Instant::now() + t);
        Box::pin(async move {
            let call = client.oneshot(request);
            let resp = match deadline {
                Some(d) => tokio::time::timeout_at(d, call).await.map_err(|_| BackendError::send(TimedOut))?,
                None => call.await,
            };
            let (parts, body) = resp.map_err(BackendError::send)?.into_parts();
            Ok(BackendResponse::from_h1(H1Answer { status: parts.status, headers: parts.headers, body, deadline }))
        })
    }
}

/// A client binding to `local` (None: any), keeping idle connections when `pool`.
fn client(local: Option<IpAddr>, pool: bool, gate: &Arc<Semaphore>) -> H1Client {
    let mut inner = HttpConnector::new();
    inner.set_nodelay(true);
    inner.set_local_address(local);
    let connector = Gated { inner, gate: Arc::clone(gate) };
    let mut builder = Client::builder(TokioExecutor::new());
    builder.http1_max_buf_size(READ_BUF_MAX).pool_idle_timeout(POOL_IDLE);
    if !pool {
        builder.pool_max_idle_per_host(0);
    }
    Decompression::new(builder.build(connector)).gzip(true)
}

/// hyper-util's connector, connecting only while it holds a permit of `gate`.
#[derive(Debug, Clone)]
struct Gated {
    inner: HttpConnector,
    gate: Arc<Semaphore>,
}

type Connected = <HttpConnector as Service<Uri>>::Response;
type ConnectError = <HttpConnector as Service<Uri>>::Error;

impl Service<Uri> for Gated {
    type Response = Connected;
    type Error = ConnectError;
    type Future = Pin<Box<dyn Future<Output = Result<Connected, ConnectError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ConnectError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let connect = self.inner.call(dst);
        let gate = Arc::clone(&self.gate);
        Box::pin(async move {
            // The semaphore is never closed; a permit (or none, were it closed) then the connect.
            let _permit = gate.acquire_owned().await;
            connect.await
        })
    }
}

/// The exchange's timeout passed (the error of a send or a body read).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("operation timed out")]
pub struct TimedOut;

/// An answer on the hyper-util path: head, and a body still to read.
pub struct H1Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    body: DecompressionBody<hyper::body::Incoming>,
    deadline: Option<Instant>,
}

impl std::fmt::Debug for H1Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H1Answer").field("status", &self.status).finish_non_exhaustive()
    }
}

impl H1Answer {
    /// The next piece of the body (None at its end); trailers are skipped.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, BackendError> {
        loop {
            let frame = match self.deadline {
                Some(d) => {
                    tokio::time::timeout_at(d, self.body.frame()).await.map_err(|_| BackendError::body(TimedOut))?
                }
                None => self.body.frame().await,
            };
            match frame {
                None => return Ok(None),
                Some(Err(e)) => return Err(BackendError::body(e)),
                Some(Ok(f)) => {
                    if let Ok(data) = f.into_data() {
                        return Ok(Some(data));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "h1_tests.rs"]
mod tests;
