//! The vllm-router and sglang-router modes of the gateway: the worker is picked by the configured
//! policy (any `routing-strategy` header is ignored), `stream_options` loses
//! `continuous_usage_stats`, the answer names no worker and carries a fresh `x-request-id`.

use super::mode::{GatewayMode, RouterPolicy};
use super::prefix::byte_block_hashes;
use super::rewrite::{fresh_request_id, strip_stream_options};
use super::router_metrics::{RouterCounters, WorkerView};
use super::{GatewayState, InFlight, forwarded_headers, prompt_text, sglang_api};
use crate::load::backend::{BackendResponse, Exchange};
use crate::sim::SimConfig;
use crate::sim::api::error::ApiError;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use futures_util::StreamExt;
use rand::Rng;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Router-mode settings and counters of the gateway (inert in AIBrix mode).
#[derive(Debug, Default)]
pub struct RouterState {
    /// Which gateway is imitated.
    pub mode: GatewayMode,
    /// Worker-selection policy of the router modes.
    pub policy: RouterPolicy,
    /// Count every request twice in `vllm_router_processed_requests_total` (the over-counting
    /// seen on vllm-router 0.1.17).
    pub overcount: bool,
    /// Next round-robin slot.
    next: AtomicUsize,
    /// Router-mode counters.
    pub counters: Mutex<RouterCounters>,
}

impl RouterState {
    /// Router settings for `mode` and `policy`, counters at zero.
    pub fn new(mode: GatewayMode, policy: RouterPolicy) -> Self {
        Self { mode, policy, ..Self::default() }
    }

    /// The router settings a cluster configuration asks for.
    pub fn from_config(cfg: &SimConfig) -> Self {
        Self { overcount: cfg.router_overcount, ..Self::new(cfg.gateway_mode, cfg.router_policy) }
    }

    fn counters(&self) -> std::sync::MutexGuard<'_, RouterCounters> {
        self.counters.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The axum router of a router-mode gateway.
pub(crate) fn routes(state: Arc<GatewayState>) -> Router {
    let mut r = Router::new()
        .route("/v1/{*path}", any(proxy))
        .route("/metrics", get(metrics))
        .route("/health", get(|| async { StatusCode::OK }));
    if state.router.mode == GatewayMode::SglangRouter {
        r = r
            .route("/v1/models", get(sglang_api::models))
            .route("/workers", get(sglang_api::workers))
            .route("/get_loads", get(sglang_api::get_loads))
            .route("/liveness", get(|| async { StatusCode::OK }))
            .route("/readiness", get(|| async { StatusCode::OK }));
    }
    r.fallback(sglang_api::not_found).layer(middleware::from_fn_with_state(state.clone(), count_http)).with_state(state)
}

/// Counts every request but the metrics scrape (which real routers serve on their own port).
async fn count_http(State(st): State<Arc<GatewayState>>, req: Request, next: Next) -> Response {
    if req.uri().path() != "/metrics" {
        st.router.counters().count_http(req.method().as_str(), req.uri().path());
    }
    next.run(req).await
}

/// The router's view of its workers.
pub(super) fn worker_views(st: &GatewayState) -> Vec<WorkerView> {
    st.upstreams
        .iter()
        .zip(&st.in_flight)
        .map(|(u, n)| WorkerView { url: u.base.clone(), running: n.load(Ordering::Relaxed) })
        .collect()
}

async fn metrics(State(st): State<Arc<GatewayState>>) -> Response {
    let workers = worker_views(&st);
    let c = st.router.counters();
    let text = match st.router.mode {
        GatewayMode::SglangRouter => c.render_sglang(st.router.policy, &workers),
        _ => c.render_vllm(st.router.policy, &workers),
    };
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text).into_response()
}

/// What the counters need to know of a request body.
struct RequestInfo {
    model: String,
    streaming: bool,
}

impl RequestInfo {
    fn of(body: &[u8]) -> Self {
        let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        Self {
            model: v.get("model").and_then(|m| m.as_str()).unwrap_or("unknown").to_string(),
            streaming: v.get("stream").and_then(serde_json::Value::as_bool).unwrap_or(false),
        }
    }
}

/// The `endpoint` label of sglang-router's router layer.
fn endpoint_label(path: &str) -> &'static str {
    match path {
        "/v1/chat/completions" => "chat",
        "/v1/completions" => "completions",
        "/v1/embeddings" => "embeddings",
        "/v1/responses" => "responses",
        _ => "other",
    }
}

/// Picks a worker by the configured policy.
fn choose(st: &GatewayState, body: &[u8]) -> usize {
    let n = st.upstreams.len().max(1);
    match st.router.policy {
        RouterPolicy::RoundRobin => st.router.next.fetch_add(1, Ordering::Relaxed) % n,
        RouterPolicy::Random => st.rng.lock().unwrap_or_else(PoisonError::into_inner).random_range(0..n),
        RouterPolicy::CacheAware => cache_aware(st, body),
    }
}

/// The routers' `cache_aware`: while loads are within `imbalance_abs`, the worker holding the
/// longest prefix of the prompt (least loaded among equals); otherwise, or with no match, the
/// least-loaded worker, ties to the first. So requests sent one after another to an idle
/// cluster all land on the first worker (docs/protocol.md §8.10).
fn cache_aware(st: &GatewayState, body: &[u8]) -> usize {
    let load: Vec<usize> = st.in_flight.iter().map(|l| l.load(Ordering::Relaxed)).collect();
    let hashes = byte_block_hashes(prompt_text(body).as_bytes(), st.prefix_params.block_bytes);
    let mut index = st.prefix.lock().unwrap_or_else(PoisonError::into_inner);
    let pct = index.match_percents(&hashes, load.len());
    let (min, max) = (load.iter().min().copied().unwrap_or(0), load.iter().max().copied().unwrap_or(0));
    let first_least = (0..load.len()).min_by_key(|&i| (load[i], i)).unwrap_or(0);
    let best = (0..load.len()).min_by_key(|&i| (std::cmp::Reverse(pct[i]), load[i], i)).unwrap_or(0);
    let hit = max - min <= st.prefix_params.imbalance_abs && pct.get(best).is_some_and(|p| *p > 0);
    let pick = if hit { best } else { first_least };
    index.add(&hashes, pick, st.clock.now(), &st.prefix_params);
    let mut c = st.router.counters();
    match hit {
        true => c.cache_hits += 1,
        false => c.cache_misses += 1,
    }
    pick
}

fn count_dispatch(st: &GatewayState, path: &str, worker: usize, info: RequestInfo) {
    let mut c = st.router.counters();
    *c.routes.entry(path.to_string()).or_default() += 1;
    *c.decisions.entry(worker).or_default() += 1;
    *c.router_requests.entry((info.model.clone(), endpoint_label(path), info.streaming)).or_default() += 1;
    *c.selections.entry(info.model).or_default() += 1;
}

async fn proxy(State(st): State<Arc<GatewayState>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 64 << 20).await else {
        return ApiError::bad_request("request body too large or unreadable".into(), None).into_response();
    };
    let body: Bytes = strip_stream_options(body);
    let worker = choose(&st, &body);
    count_dispatch(&st, parts.uri.path(), worker, RequestInfo::of(&body));
    st.in_flight[worker].fetch_add(1, Ordering::Relaxed);
    let guard = InFlight(st.clone(), worker);
    let request_id = fresh_request_id(&mut *st.rng.lock().unwrap_or_else(PoisonError::into_inner));
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let url = format!("{}{path}", st.upstreams[worker].base);
    let mut headers = forwarded_headers(&parts.headers);
    if let Ok(v) = HeaderValue::from_str(&request_id) {
        headers.insert("x-request-id", v);
    }
    let fwd = Exchange { method: parts.method.clone(), url: &url, headers: &headers, body: Some(body), timeout: None };
    let upstream = match st.upstream.send(fwd).await {
        Ok(r) => r,
        Err(e) => {
            let msg = format!("upstream connect error: {}", e.describe());
            return ApiError::status(StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailableError", msg).into_response();
        }
    };
    *st.router.counters().processed.entry(worker).or_default() += if st.router.overcount { 2 } else { 1 };
    respond(upstream, &request_id, guard)
}

/// Hop-by-hop and framing headers a proxy must not copy.
fn is_hop_by_hop(name: &HeaderName) -> bool {
    [
        header::CONNECTION,
        header::TRANSFER_ENCODING,
        header::CONTENT_LENGTH,
        header::TE,
        header::TRAILER,
        header::UPGRADE,
    ]
    .contains(name)
        || name == "keep-alive"
        || name == "proxy-connection"
}

/// Streams the upstream answer through with its headers (both routers forward them unchanged)
/// and the router's own `x-request-id`.
fn respond(upstream: BackendResponse, request_id: &str, guard: InFlight) -> Response {
    let status = upstream.status();
    let headers: Vec<(HeaderName, HeaderValue)> =
        upstream.headers().iter().filter(|(k, _)| !is_hop_by_hop(k)).map(|(k, v)| (k.clone(), v.clone())).collect();
    let stream = upstream.into_stream().map(move |chunk| {
        let _hold = &guard;
        chunk.map_err(std::io::Error::other)
    });
    let mut resp = Response::new(Body::from_stream(stream));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    for (k, v) in headers {
        h.append(k, v);
    }
    if let Ok(v) = HeaderValue::from_str(request_id) {
        h.insert("x-request-id", v);
    }
    resp
}
