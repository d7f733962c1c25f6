//! The simulated cluster in process: the same replicas and gateway as [`Cluster`](super::Cluster),
//! reached through an [`InProcBackend`] that hands each exchange to their axum routers
//! directly (no socket), with every engine a tokio task on tokio time
//! ([`EngineClock::Tokio`]). A test on tokio's paused clock then runs a whole session in
//! virtual time, deterministically.
//!
//! Endpoints are named `http://sim-a.inproc`, ..., `http://gateway.inproc`; the gateway
//! reaches the replicas through the same kind of backend.

use super::engine::{EngineClock, EngineHandle};
use super::{ClusterInfo, EndpointInfo, SimConfig, check, cluster_info, endpoint, gateway, replica_router};
use super::{faults::Power, gateway_state, replica_name, replica_state, set_down, stats};
use crate::load::backend::{Backend, BackendError, BackendResponse, Exchange, SendFuture, SharedBackend};
use axum::Router;
use std::io;
use std::sync::{Arc, PoisonError};
use tower::ServiceExt;

/// A backend that serves exchanges with in-process axum routers, one per URL authority. An
/// exchange's timeout bounds the wait for the response head only (bodies are read by the
/// caller, which bounds them itself where it must, as the poller and the load do).
#[derive(Debug, Clone, Default)]
pub struct InProcBackend {
    hosts: Vec<(String, Router)>,
    /// Hosts that refuse connections while their [`Power`] is down.
    powers: Vec<(String, Arc<Power>)>,
}

impl InProcBackend {
    /// Serves `http://{authority}/...` with `router` (a later router for the same authority
    /// replaces the earlier one).
    pub fn serve(&mut self, authority: &str, router: Router) {
        self.hosts.retain(|(a, _)| a != authority);
        self.hosts.push((authority.to_string(), router));
    }

    /// Makes `authority` refuse connections while `power` is down.
    pub fn power_with(&mut self, authority: &str, power: Arc<Power>) {
        self.powers.retain(|(a, _)| a != authority);
        self.powers.push((authority.to_string(), power));
    }

    fn router(&self, authority: &str) -> Option<&Router> {
        if self.powers.iter().any(|(a, p)| a == authority && p.is_down()) {
            return None;
        }
        self.hosts.iter().find(|(a, _)| a == authority).map(|(_, r)| r)
    }
}

/// The path and query of a URL (path `/` when it has none).
fn path_and_query(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    match rest.find(['/', '?']).map(|i| &rest[i..]) {
        Some(p) if p.starts_with('/') => p.to_string(),
        Some(q) => format!("/{q}"),
        None => "/".to_string(),
    }
}

fn refused(authority: &str) -> BackendError {
    let msg = format!("connection refused: no in-process server at {authority}");
    BackendError::send(io::Error::new(io::ErrorKind::ConnectionRefused, msg))
}

impl Backend for InProcBackend {
    fn send<'a>(&'a self, req: Exchange<'a>) -> SendFuture<'a> {
        Box::pin(async move {
            let authority = crate::net::host_port(req.url);
            let router = self.router(authority).ok_or_else(|| refused(authority))?.clone();
            let mut request = axum::http::Request::builder()
                .method(req.method)
                .uri(path_and_query(req.url))
                .body(axum::body::Body::from(req.body.unwrap_or_default()))
                .map_err(BackendError::send)?;
            *request.headers_mut() = req.headers.clone();
            let call = router.oneshot(request);
            let resp = match req.timeout {
                None => call.await,
                Some(t) => tokio::time::timeout(t, call)
                    .await
                    .map_err(|_| BackendError::send(io::Error::new(io::ErrorKind::TimedOut, "operation timed out")))?,
            };
            let resp = resp.unwrap_or_else(|never| match never {});
            Ok(BackendResponse::from_local(resp))
        })
    }
}

/// A simulated cluster in process: replicas and gateway answer through [`InProcCluster::backend`].
#[derive(Debug)]
pub struct InProcCluster {
    info: ClusterInfo,
    engines: Vec<EngineHandle>,
    powers: Vec<Arc<Power>>,
    backend: Arc<InProcBackend>,
}

impl InProcCluster {
    /// Builds the cluster; its engines are tasks of the current tokio runtime (call it inside
    /// one). Everything ends when the backend and the cluster are dropped.
    pub fn start(cfg: SimConfig) -> anyhow::Result<Self> {
        check(&cfg).map_err(anyhow::Error::msg)?;
        let mut backend = InProcBackend::default();
        let (mut replicas, mut engines, mut powers) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..cfg.replicas {
            let name = replica_name(i);
            let authority = format!("{name}.inproc");
            let state = replica_state(&cfg, i, &name, EngineClock::Tokio)?;
            engines.push(state.engine.clone());
            powers.push(state.power.clone());
            backend.power_with(&authority, state.power.clone());
            backend.serve(&authority, replica_router(&cfg, state));
            replicas.push(endpoint(name, &authority));
        }
        let upstream: SharedBackend = Arc::new(backend.clone());
        let gw = gateway_state(&cfg, &replicas, upstream, EngineClock::Tokio);
        backend.serve("gateway.inproc", gateway::router(Arc::new(gw)));
        let info = cluster_info(&cfg, endpoint("gateway".into(), "gateway.inproc"), replicas);
        Ok(Self { info, engines, powers, backend: Arc::new(backend) })
    }

    /// Where the cluster answers (in-process URLs).
    pub fn info(&self) -> &ClusterInfo {
        &self.info
    }

    /// The backend that reaches every endpoint of [`InProcCluster::info`].
    pub fn backend(&self) -> SharedBackend {
        self.backend.clone()
    }

    /// Live statistics of replica `i`, as its `/metrics` would show them.
    pub fn replica_stats(&self, i: usize) -> Option<stats::ReplicaStats> {
        self.engines.get(i).map(|e| e.stats.lock().unwrap_or_else(PoisonError::into_inner).clone())
    }

    /// Takes replica `i` down (connections to it are refused, its streams break, its engine
    /// forgets every request and counter) or brings it back; false if there is no replica `i`.
    pub fn set_replica_down(&self, i: usize, down: bool) -> bool {
        set_down(&self.powers, &self.engines, i, down)
    }

    /// The endpoints of the replicas, in pod order.
    pub fn replicas(&self) -> &[EndpointInfo] {
        &self.info.replicas
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::live::LiveCounters;
    use crate::load::request::{BodyOptions, BodyTemplate, Endpoint};
    use crate::load::sample::{Outcome, RequestSample, TokenSource};
    use crate::load::stream::{StreamSpec, run_stream};
    use reqwest::header::HeaderMap;

    #[test]
    fn paths_keep_their_query() {
        assert_eq!(path_and_query("http://u:p@sim-a.inproc/v1/models?x=1"), "/v1/models?x=1");
        assert_eq!(path_and_query("http://sim-a.inproc"), "/");
        assert_eq!(path_and_query("http://sim-a.inproc?q"), "/?q");
    }

    #[tokio::test(start_paused = true)]
    async fn replicas_and_gateway_answer_without_a_socket() {
        let c = InProcCluster::start(SimConfig { replicas: 2, ..SimConfig::default() }).unwrap();
        let (b, h) = (c.backend(), HeaderMap::new());
        let models = format!("{}/v1/models", c.info().replicas[1].url);
        let resp = b.send(Exchange::get(&models, &h)).await.unwrap();
        assert_eq!(resp.status(), 200);
        assert!(String::from_utf8_lossy(&resp.bytes(1 << 20).await.unwrap()).contains("sim-llama-27b"));
        let health = format!("{}/health", c.info().gateway.url);
        assert_eq!(b.send(Exchange::get(&health, &h)).await.unwrap().status(), 200);
        let e = b.send(Exchange::get("http://nowhere.inproc/health", &h)).await.unwrap_err();
        assert!(e.describe().contains("no in-process server at nowhere.inproc"), "{}", e.describe());
    }

    /// Streams a 32-token chat completion from `base` through the load's own measuring path.
    async fn stream_32(c: &InProcCluster, base: &str, route: Option<&str>) -> RequestSample {
        let url = format!("{base}{}", Endpoint::Chat.path());
        let mut headers = HeaderMap::new();
        headers.insert(reqwest::header::CONTENT_TYPE, "application/json".parse().unwrap());
        if let Some(r) = route {
            headers.insert("routing-strategy", r.parse().unwrap());
        }
        let served_by = [reqwest::header::HeaderName::from_static("target-pod")];
        let spec = StreamSpec {
            url: &url,
            headers: &headers,
            served_by: &served_by,
            first_token_timeout: None,
            queued_waits: false,
            idle_timeout: std::time::Duration::from_secs(5),
            expected_chunks: 32,
        };
        let opts =
            BodyOptions { endpoint: Endpoint::Chat, model: c.info().model.clone(), max_tokens: 32, ignore_eos: true };
        let body = BodyTemplate::new(&opts, "hello there").render("");
        let (live, cancel) = (LiveCounters::default(), tokio_util::sync::CancellationToken::new());
        let sample = RequestSample::new(0, tokio::time::Instant::now());
        let s = run_stream(&*c.backend(), &spec, body, sample, &cancel, &live).await;
        assert!(matches!(s.outcome, Outcome::Completed(_)), "{:?}", s.outcome);
        assert_eq!((s.output_tokens, s.token_source), (32, TokenSource::OpenaiContinuousUsage));
        s
    }

    /// In virtual time the request lasts what the engine model says: one prefill step and 31
    /// decode steps of 5.6 + 1.15 ms plus per-token costs, each token seen within 1 ms.
    #[tokio::test(start_paused = true)]
    async fn a_stream_takes_its_modelled_time_on_the_paused_clock() {
        let c = InProcCluster::start(SimConfig { replicas: 1, ..SimConfig::default() }).unwrap();
        let s = stream_32(&c, &c.info().replicas[0].url, None).await;
        let e2e_ms = s.e2e().as_secs_f64() * 1e3;
        assert!((32.0 * 6.75..32.0 * 6.75 + 12.0).contains(&e2e_ms), "{e2e_ms} ms");
        assert_eq!(c.replica_stats(0).unwrap().generation_tokens, 32);
    }

    #[tokio::test(start_paused = true)]
    async fn the_gateway_proxies_in_process_and_names_its_pod() {
        let c = InProcCluster::start(SimConfig { replicas: 2, dev_mode: true, ..SimConfig::default() }).unwrap();
        let s = stream_32(&c, &c.info().gateway.url, Some("least-request")).await;
        assert_eq!(s.served_by.as_deref(), Some("sim-a"), "ties go to the first pod first");
        assert_eq!(
            (c.replica_stats(0).unwrap().generation_tokens, c.replica_stats(1).unwrap().generation_tokens),
            (32, 0)
        );
        let (reset, h) = (format!("{}/reset_prefix_cache", c.info().replicas[0].url), HeaderMap::new());
        let resp = c.backend().send(Exchange::post(&reset, &h, None)).await.unwrap();
        assert_eq!(resp.status(), 200, "the engine task answers");
    }

    /// A replica taken down refuses connections; back up, it counts from 0 like a restarted vLLM.
    #[tokio::test(start_paused = true)]
    async fn a_replica_goes_down_and_comes_back_with_zeroed_counters() {
        let c = InProcCluster::start(SimConfig { replicas: 2, ..SimConfig::default() }).unwrap();
        stream_32(&c, &c.info().replicas[1].url, None).await;
        assert_eq!(c.replica_stats(1).unwrap().generation_tokens, 32);
        assert!(c.set_replica_down(1, true));
        let (b, h) = (c.backend(), HeaderMap::new());
        let e = b.send(Exchange::get(&c.info().replicas[1].metrics_url, &h)).await.unwrap_err();
        assert!(e.describe().contains("connection refused"), "{}", e.describe());
        let other = b.send(Exchange::get(&c.info().replicas[0].metrics_url, &h)).await.unwrap();
        assert_eq!(other.status(), 200, "the other replica stays up");
        assert!(c.set_replica_down(1, false));
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        let resp = b.send(Exchange::get(&c.info().replicas[1].metrics_url, &h)).await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(c.replica_stats(1).unwrap().generation_tokens, 0, "counters restart from 0");
        assert!(!c.set_replica_down(7, true));
    }
}
