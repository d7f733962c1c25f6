//! The embedded simulated cluster: N vLLM-like replicas behind an AIBrix-like gateway, on
//! loopback ([`Cluster`]) or in process ([`inproc::InProcCluster`], for tests on tokio's
//! paused clock). See [`params`] for the physical model each replica runs, and [`llamacpp`]
//! for the mode where every replica answers like llama.cpp's llama-server instead.

pub(crate) mod api;
pub(crate) mod engine;
pub mod expo;
pub(crate) mod faults;
pub mod gateway;
pub mod inproc;
pub(crate) mod kv;
pub(crate) mod llamacpp;
pub mod params;
pub(crate) mod sglang;
pub(crate) mod stats;
pub(crate) mod tokenizer;

use crate::load::backend::{HttpBackend, SharedBackend};
use anyhow::Context;
use api::ReplicaState;
use engine::{EngineClock, EngineHandle};
use expo::MetricsDialect;
use faults::FaultSpec;
use gateway::{GatewayState, PrefixParams, Upstream};
pub use llamacpp::EngineMode;
use params::EngineParams;
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Everything needed to start a simulated cluster.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Address to bind.
    pub host: IpAddr,
    /// Gateway port; replica i listens on `port + i`. 0 picks free ports for all.
    pub port: u16,
    /// Number of replicas.
    pub replicas: usize,
    /// Served model name.
    pub model: String,
    /// Engine model of every replica.
    pub engine: EngineParams,
    /// Tokens per streamed chunk.
    pub stream_interval: u32,
    /// Metrics dialect per replica; the last entry applies to the remaining replicas.
    pub dialects: Vec<MetricsDialect>,
    /// Injected faults (every replica).
    pub faults: FaultSpec,
    /// Delay of a slow `/metrics` answer (wall clock).
    pub metrics_slow_delay: Duration,
    /// Gateway prefix-cache router tunables.
    pub prefix: PrefixParams,
    /// Seed of the random choices (faults, random routing).
    pub seed: u64,
    /// Which gateway the simulated one imitates (AIBrix by default).
    pub gateway_mode: gateway::GatewayMode,
    /// Worker-selection policy in the vllm-router and sglang-router modes.
    pub router_policy: gateway::RouterPolicy,
    /// vllm-router mode: count each request twice in `vllm_router_processed_requests_total`,
    /// as vllm-router 0.1.17 was seen to over-count (off by default).
    pub router_overcount: bool,
    /// Replicas mount `POST /reset_prefix_cache`, as vLLM does only with
    /// `VLLM_SERVER_DEV_MODE=1` (docs/protocol.md §8.7); off by default, so a reset is a 404.
    pub dev_mode: bool,
    /// Usage carries `prompt_tokens_details.cached_tokens`, as vLLM does only with
    /// `--enable-prompt-tokens-details` (off by default, like stock vLLM; llama.cpp mode always
    /// sends it, as llama-server does).
    pub prompt_tokens_details: bool,
    /// Which server every replica imitates: vLLM (default) or llama.cpp's llama-server.
    pub engine_mode: EngineMode,
    /// llama.cpp mode: context of one slot, tokens; None shares the KV capacity out over the
    /// `max_num_seqs` slots ([`llamacpp::slot_ctx`]).
    pub slot_ctx: Option<usize>,
    /// No gateway: the one replica listens on `port` itself, as a single `vllm serve` does (the
    /// cluster's `gateway` endpoint is then that replica).
    pub no_gateway: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            replicas: 2,
            model: "sim-llama-27b".into(),
            engine: EngineParams::default(),
            stream_interval: 1,
            dialects: vec![MetricsDialect::Vllm],
            faults: FaultSpec::default(),
            metrics_slow_delay: Duration::from_secs(3),
            prefix: PrefixParams::default(),
            seed: 0,
            gateway_mode: gateway::GatewayMode::Aibrix,
            router_policy: gateway::RouterPolicy::RoundRobin,
            router_overcount: false,
            dev_mode: false,
            prompt_tokens_details: false,
            engine_mode: EngineMode::Vllm,
            slot_ctx: None,
            no_gateway: false,
        }
    }
}

/// One served endpoint.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EndpointInfo {
    /// `gateway`, `sim-a`, `sim-b`, ...
    pub name: String,
    /// Base URL.
    pub url: String,
    /// Its Prometheus page.
    pub metrics_url: String,
}

/// Where the cluster listens (printed at start and written to `--ready-file`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ClusterInfo {
    /// The gateway.
    pub gateway: EndpointInfo,
    /// The replicas, in pod order.
    pub replicas: Vec<EndpointInfo>,
    /// Served model name.
    pub model: String,
    /// Longest prompt + output, tokens.
    pub max_model_len: usize,
    /// What the gateway imitates and how it picks replicas, for humans.
    pub gateway_kind: String,
}

/// A running simulated cluster. Dropping it stops the servers.
#[derive(Debug)]
pub struct Cluster {
    info: ClusterInfo,
    cancel: CancellationToken,
    /// Engine handles, for in-process inspection.
    engines: Vec<EngineHandle>,
    /// Up/down switch of each replica.
    powers: Vec<Arc<faults::Power>>,
}

/// The name of replica `i` (0-based): `sim-a` .. `sim-z`, then `sim-27`, ...
pub fn replica_name(i: usize) -> String {
    match u8::try_from(i).ok().filter(|i| *i < 26) {
        Some(i) => format!("sim-{}", (b'a' + i) as char),
        None => format!("sim-{}", i + 1),
    }
}

/// Pending connections a listener queues (the kernel caps it at `net.core.somaxconn`): 10,000
/// streams connecting at once overflow tokio's default of 1,024, and a connection the queue
/// dropped is reset half a minute later.
const LISTEN_BACKLOG: u32 = 16_384;

async fn bind(host: IpAddr, port: u16) -> anyhow::Result<TcpListener> {
    let addr = SocketAddr::new(host, port);
    let listen = || -> std::io::Result<TcpListener> {
        let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        socket.listen(LISTEN_BACKLOG)
    };
    listen().with_context(|| format!("cannot listen on {host}:{port}"))
}

/// An endpoint at `http://{authority}`.
fn endpoint(name: String, authority: &str) -> EndpointInfo {
    let url = format!("http://{authority}");
    EndpointInfo { metrics_url: format!("{url}/metrics"), name, url }
}

impl Cluster {
    /// Binds every listener, starts the engines and serves until dropped or shut down.
    pub async fn start(cfg: SimConfig) -> anyhow::Result<Self> {
        check(&cfg).map_err(anyhow::Error::msg)?;
        let step = |i: usize| {
            if cfg.port == 0 { Ok(0) } else { u16::try_from(usize::from(cfg.port) + i).context("port out of range") }
        };
        let gw_listener = match cfg.no_gateway {
            true => None,
            false => Some(bind(cfg.host, cfg.port).await?),
        };
        let mut listeners = Vec::with_capacity(cfg.replicas);
        for i in 1..=cfg.replicas {
            let port = if cfg.no_gateway { cfg.port } else { step(i)? };
            listeners.push(bind(cfg.host, port).await?);
        }
        let cancel = CancellationToken::new();
        let mut replicas = Vec::new();
        let mut engines = Vec::new();
        let mut powers = Vec::new();
        for (i, listener) in listeners.into_iter().enumerate() {
            let name = replica_name(i);
            let addr = listener.local_addr()?;
            let state = replica_state(&cfg, i, &name, EngineClock::Thread)?;
            engines.push(state.engine.clone());
            powers.push(state.power.clone());
            let router = replica_router(&cfg, state);
            match cfg.engine_mode {
                EngineMode::Vllm => serve(listener, router, cancel.clone()),
                EngineMode::Llamacpp => llamacpp::server::serve(listener, router, cancel.clone()),
            }
            replicas.push(endpoint(name, &addr.to_string()));
        }
        let Some(gw_listener) = gw_listener else {
            let info = cluster_info(&cfg, replicas[0].clone(), replicas);
            return Ok(Self { info, cancel, engines, powers });
        };
        let gw_addr = gw_listener.local_addr()?;
        let client = match cfg.engine_mode {
            EngineMode::Vllm => gateway::upstream_client(),
            EngineMode::Llamacpp => llamacpp::server::upstream_client(),
        };
        let client = client.context("cannot build the gateway's HTTP client")?;
        let gw = gateway_state(&cfg, &replicas, HttpBackend::shared(client), EngineClock::Thread);
        serve(gw_listener, gateway::router(Arc::new(gw)), cancel.clone());
        let info = cluster_info(&cfg, endpoint("gateway".into(), &gw_addr.to_string()), replicas);
        Ok(Self { info, cancel, engines, powers })
    }

    /// Where the cluster listens.
    pub fn info(&self) -> &ClusterInfo {
        &self.info
    }

    /// Live statistics of replica `i`, as its `/metrics` would show them.
    pub fn replica_stats(&self, i: usize) -> Option<stats::ReplicaStats> {
        self.engines.get(i).map(|e| e.stats.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone())
    }

    /// Takes replica `i` down (every endpoint answers 503, its streams break, its engine
    /// forgets every request and counter) or brings it back; false if there is no replica `i`.
    pub fn set_replica_down(&self, i: usize, down: bool) -> bool {
        set_down(&self.powers, &self.engines, i, down)
    }

    /// Stops accepting connections; open streams end with the process or runtime.
    pub fn shutdown(&self) {
        self.cancel.cancel();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Flips replica `i`'s power; going down crashes its engine (requests dropped, counters 0).
fn set_down(powers: &[Arc<faults::Power>], engines: &[EngineHandle], i: usize, down: bool) -> bool {
    let (Some(power), Some(engine)) = (powers.get(i), engines.get(i)) else { return false };
    if power.set_down(down) && down {
        engine.send(engine::EngineMsg::Crash);
    }
    true
}

/// Rejects a configuration no cluster can run, in one line naming the flag (`sim` gives it
/// before binding anything, as a usage error).
pub fn check(cfg: &SimConfig) -> Result<(), String> {
    cfg.engine.validate()?;
    llamacpp::validate(cfg)?;
    if !(1..=64).contains(&cfg.replicas) {
        return Err("--replicas must be within 1..64".into());
    }
    if cfg.no_gateway && cfg.replicas != 1 {
        return Err("--no-gateway serves one replica on --port: give --replicas 1".into());
    }
    let top = usize::from(cfg.port) + cfg.replicas;
    if cfg.port != 0 && top > usize::from(u16::MAX) {
        let port = cfg.port;
        let replicas = cfg.replicas;
        return Err(format!(
            "--port {port} with --replicas {replicas} needs ports {port}..={top}, past the highest port 65535"
        ));
    }
    Ok(())
}

fn cluster_info(cfg: &SimConfig, gateway: EndpointInfo, replicas: Vec<EndpointInfo>) -> ClusterInfo {
    let gateway_kind = match cfg.gateway_mode.is_router() {
        true => format!("{}-like, policy {}", cfg.gateway_mode, cfg.router_policy.as_str()),
        false => "AIBrix-like; routing-strategy: random | least-request | prefix-cache".to_string(),
    };
    let max_model_len = match cfg.engine_mode {
        EngineMode::Vllm => cfg.engine.max_model_len,
        EngineMode::Llamacpp => llamacpp::slot_ctx(cfg),
    };
    ClusterInfo { gateway_kind, gateway, replicas, model: cfg.model.clone(), max_model_len }
}

/// The axum router of a replica built as `state`, in the API of `cfg.engine_mode`.
fn replica_router(cfg: &SimConfig, state: ReplicaState) -> axum::Router {
    match cfg.engine_mode {
        EngineMode::Vllm => api::router(Arc::new(state)),
        EngineMode::Llamacpp => llamacpp::router(Arc::new(llamacpp::LlamaState::new(state, cfg))),
    }
}

fn replica_state(cfg: &SimConfig, i: usize, name: &str, clock: EngineClock) -> anyhow::Result<ReplicaState> {
    let dialect = cfg.dialects.get(i).or(cfg.dialects.last()).copied().unwrap_or_default();
    let params = match cfg.engine_mode {
        EngineMode::Vllm => cfg.engine.clone(),
        EngineMode::Llamacpp => llamacpp::engine_params(cfg),
    };
    Ok(ReplicaState {
        name: name.to_string(),
        model: cfg.model.clone(),
        engine: EngineHandle::spawn_on(name, params.clone(), clock).context("cannot start engine thread")?,
        params,
        stream_interval: cfg.stream_interval.max(1),
        dialect,
        faults: cfg.faults.clone(),
        metrics_slow_delay: cfg.metrics_slow_delay,
        rng: Mutex::new(StdRng::seed_from_u64(cfg.seed.wrapping_add(i as u64 + 1))),
        tally: Default::default(),
        next_id: AtomicU64::new(0),
        dev_mode: cfg.dev_mode,
        prompt_tokens_details: cfg.prompt_tokens_details,
        power: Arc::default(),
    })
}

fn gateway_state(
    cfg: &SimConfig,
    replicas: &[EndpointInfo],
    upstream: SharedBackend,
    clock: EngineClock,
) -> GatewayState {
    let upstreams: Vec<Upstream> = replicas
        .iter()
        .map(|r| Upstream {
            name: r.name.clone(),
            base: r.url.clone(),
            ip_port: r.url.trim_start_matches("http://").to_string(),
        })
        .collect();
    GatewayState {
        model: cfg.model.clone(),
        in_flight: upstreams.iter().map(|_| AtomicUsize::new(0)).collect(),
        upstreams,
        prefix_params: cfg.prefix.clone(),
        prefix: Mutex::default(),
        counters: Mutex::default(),
        upstream,
        clock,
        rng: Mutex::new(StdRng::seed_from_u64(cfg.seed)),
        turns: AtomicUsize::new(0),
        router: gateway::RouterState::from_config(cfg),
    }
}

/// Serves `router` until `cancel`. Accepted sockets have Nagle off, as a real vLLM (uvicorn on
/// asyncio) has: with it on, a streamed chunk written right after the response head waits for
/// the client's delayed ACK, and a client on a kept-alive connection sees its first token up
/// to 40 ms after the engine's `time_to_first_token` says it was sent.
fn serve(listener: TcpListener, router: axum::Router, cancel: CancellationToken) {
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("cannot turn Nagle off on an accepted connection: {e}");
        }
    });
    tokio::spawn(async move {
        let server = axum::serve(listener, router).with_graceful_shutdown(cancel.cancelled_owned());
        if let Err(e) = server.await {
            tracing::warn!("simulator server stopped: {e}");
        }
    });
}
