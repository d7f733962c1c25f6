//! The simulated gateway. In its default AIBrix mode it picks a replica per request from the
//! `routing-strategy` header, proxies `/v1/*` to it (streaming), and answers with `target-pod`;
//! in the vllm-router and sglang-router modes it behaves like those routers instead (see
//! [`router_mode`]).

mod counters;
mod mode;
pub(crate) mod prefix;
mod rewrite;
mod router_metrics;
pub(crate) mod router_mode;
mod sglang_api;

pub use counters::GatewayCounters;
pub use mode::{GatewayMode, RouterPolicy};
pub use prefix::PrefixParams;
pub use rewrite::{fresh_request_id, strip_stream_options};
pub use router_metrics::{RouterCounters, WorkerView};
pub use router_mode::RouterState;

use crate::load::backend::{BackendResponse, Exchange, SharedBackend};
use crate::sim::api::body::message_text;
use crate::sim::api::error::ApiError;
use crate::sim::engine::EngineClock;
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use futures_util::StreamExt;
use prefix::{PrefixIndex, byte_block_hashes, least_loaded_in_turn};
use rand::Rng;
use rand::rngs::StdRng;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Routing strategies the gateway understands (AIBrix names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Uniformly random pod.
    Random,
    /// Pod with the fewest requests in flight at the gateway (ties in turn).
    LeastRequest,
    /// AIBrix prefix-cache routing (see [`prefix`]).
    PrefixCache,
}

impl Strategy {
    /// Parses a `routing-strategy` header value (case-insensitive).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "random" => Some(Self::Random),
            "least-request" => Some(Self::LeastRequest),
            "prefix-cache" => Some(Self::PrefixCache),
            _ => None,
        }
    }

    /// The header value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Random => "random",
            Self::LeastRequest => "least-request",
            Self::PrefixCache => "prefix-cache",
        }
    }
}

/// One replica behind the gateway.
#[derive(Debug, Clone)]
pub struct Upstream {
    /// Pod name sent as `target-pod`.
    pub name: String,
    /// Base URL, e.g. `http://127.0.0.1:8001`.
    pub base: String,
    /// `ip:port`, sent as `target-pod-ip`.
    pub ip_port: String,
}

/// Shared state of the gateway.
#[derive(Debug)]
pub struct GatewayState {
    /// Served model name (a `model` label).
    pub model: String,
    /// Replicas in pod order.
    pub upstreams: Vec<Upstream>,
    /// Requests in flight per pod (the gateway's realtime count).
    pub in_flight: Vec<AtomicUsize>,
    /// Prefix-cache router tunables.
    pub prefix_params: PrefixParams,
    /// Prefix-cache router index.
    pub prefix: Mutex<PrefixIndex>,
    /// Decision and request counters.
    pub counters: Mutex<GatewayCounters>,
    /// Transport to the replicas (reqwest on loopback, or in process).
    pub upstream: SharedBackend,
    /// The clock of the replicas' engines, for the prefix index's ages.
    pub clock: EngineClock,
    /// Random choices.
    pub rng: Mutex<StdRng>,
    /// Least-request decisions so far (ties are taken in turn).
    pub turns: AtomicUsize,
    /// Router-mode settings and counters (the mode decides which API the gateway serves).
    pub router: RouterState,
}

struct InFlight(Arc<GatewayState>, usize);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight[self.1].fetch_sub(1, Ordering::Relaxed);
    }
}

/// The axum router of the gateway, in the API of its [`GatewayMode`].
pub fn router(state: Arc<GatewayState>) -> Router {
    if state.router.mode.is_router() {
        return router_mode::routes(state);
    }
    Router::new()
        .route("/v1/{*path}", any(proxy))
        .route("/metrics", get(metrics))
        .route("/health", get(|| async { StatusCode::OK }))
        .route(
            "/version",
            get(|| async {
                axum::Json(serde_json::json!({"version": format!("sim-aibrix-{}", env!("CARGO_PKG_VERSION"))}))
            }),
        )
        .with_state(state)
}

async fn metrics(State(st): State<Arc<GatewayState>>) -> Response {
    let flight: Vec<(String, usize)> =
        st.upstreams.iter().zip(&st.in_flight).map(|(u, n)| (u.name.clone(), n.load(Ordering::Relaxed))).collect();
    let text = st.counters.lock().unwrap_or_else(PoisonError::into_inner).render(&st.model, &flight);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text).into_response()
}

/// The prompt text AIBrix hashes: a completion's `prompt`, or the chat messages' contents.
fn prompt_text(body: &[u8]) -> String {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) else { return String::new() };
    if let Some(p) = v.get("prompt").and_then(|p| p.as_str()) {
        return p.to_string();
    }
    v.get("messages")
        .and_then(|m| m.as_array())
        .map(|msgs| msgs.iter().filter_map(|m| m.get("content")).map(message_text).collect::<Vec<_>>().join(""))
        .unwrap_or_default()
}

fn choose(st: &GatewayState, strategy: Option<Strategy>, body: &[u8]) -> usize {
    let load: Vec<usize> = st.in_flight.iter().map(|n| n.load(Ordering::Relaxed)).collect();
    let mut rng = st.rng.lock().unwrap_or_else(PoisonError::into_inner);
    match strategy {
        None | Some(Strategy::Random) => rng.random_range(0..st.upstreams.len()),
        Some(Strategy::LeastRequest) => least_loaded_in_turn(&load, st.turns.fetch_add(1, Ordering::Relaxed)),
        Some(Strategy::PrefixCache) => {
            let hashes = byte_block_hashes(prompt_text(body).as_bytes(), st.prefix_params.block_bytes);
            let d = st.prefix.lock().unwrap_or_else(PoisonError::into_inner).route_at(
                st.clock.now(),
                &hashes,
                &load,
                &st.prefix_params,
                &mut *rng,
            );
            st.counters.lock().unwrap_or_else(PoisonError::into_inner).count_decision(&d);
            d.pod
        }
    }
}

/// The strategy named by the `routing-strategy` header; Err carries an unknown name.
fn header_strategy(headers: &HeaderMap) -> Result<Option<Strategy>, String> {
    let Some(v) = headers.get("routing-strategy") else { return Ok(None) };
    let s = v.to_str().unwrap_or_default();
    Strategy::parse(s).map(Some).ok_or_else(|| s.to_string())
}

fn unknown_strategy(name: &str) -> Response {
    let mut resp = ApiError::bad_request(format!("unknown routing strategy `{name}`"), None).into_response();
    resp.headers_mut().insert("x-error-routing", HeaderValue::from_static("true"));
    resp
}

async fn proxy(State(st): State<Arc<GatewayState>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let strategy = match header_strategy(&parts.headers) {
        Ok(s) => s,
        Err(name) => return unknown_strategy(&name),
    };
    let Ok(body) = axum::body::to_bytes(body, 64 << 20).await else {
        return ApiError::bad_request("request body too large or unreadable".into(), None).into_response();
    };
    let pod = choose(&st, strategy, &body);
    st.in_flight[pod].fetch_add(1, Ordering::Relaxed);
    let guard = InFlight(st.clone(), pod);
    let up = &st.upstreams[pod];
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let (url, headers) = (format!("{}{path}", up.base), forwarded_headers(&parts.headers));
    let fwd = Exchange { method: parts.method.clone(), url: &url, headers: &headers, body: Some(body), timeout: None };
    let upstream = match st.upstream.send(fwd).await {
        Ok(r) => r,
        Err(e) => {
            return ApiError::status(
                StatusCode::SERVICE_UNAVAILABLE,
                "ServiceUnavailableError",
                format!("upstream connect error: {}", e.describe()),
            )
            .into_response();
        }
    };
    if let Some(s) = strategy {
        st.counters.lock().unwrap_or_else(PoisonError::into_inner).count_request(&up.name, s.as_str());
    }
    respond(upstream, up, strategy, guard)
}

/// The request headers a proxy forwards: content type, authorization, accept.
fn forwarded_headers(from: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for name in [header::CONTENT_TYPE, header::AUTHORIZATION, header::ACCEPT] {
        if let Some(v) = from.get(&name) {
            out.insert(name, v.clone());
        }
    }
    out
}

fn respond(upstream: BackendResponse, up: &Upstream, strategy: Option<Strategy>, guard: InFlight) -> Response {
    let status = upstream.status();
    let content_type = upstream.headers().get(header::CONTENT_TYPE).cloned();
    let extra: Vec<(&'static str, HeaderValue)> = upstream
        .headers()
        .iter()
        .filter(|(k, _)| *k == "retry-after")
        .map(|(_, v)| ("retry-after", v.clone()))
        .collect();
    let stream = upstream.into_stream().map(move |chunk| {
        let _hold = &guard;
        chunk.map_err(std::io::Error::other)
    });
    let mut resp = Response::new(Body::from_stream(stream));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    if let Some(ct) = content_type {
        h.insert(header::CONTENT_TYPE, ct);
    }
    for (k, v) in extra {
        h.insert(k, v);
    }
    h.insert("x-went-into-req-headers", HeaderValue::from_static("true"));
    if let Some(s) = strategy {
        h.insert("routing-strategy", HeaderValue::from_static(s.as_str()));
        if let Ok(v) = HeaderValue::from_str(&up.name) {
            h.insert("target-pod", v);
        }
        if let Ok(v) = HeaderValue::from_str(&up.ip_port) {
            h.insert("target-pod-ip", v);
        }
    }
    resp
}

/// A reqwest client suited to proxying on loopback (no proxy, no pooled-connection limit).
pub fn upstream_client() -> reqwest::Result<reqwest::Client> {
    crate::net::client_builder().no_proxy().build()
}
