//! What every cell attempt shares: the HTTP side, the metrics poller, the live view and the
//! session clock.

use super::RunConfig;
use super::control::{LiveView, Phase, RunnerEvent};
use super::preflight::Facts;
use crate::load::backend::SharedBackend;
use crate::load::live::LiveCounters;
use crate::load::worker::WorkerCtx;
use crate::metrics::poller::{MetricsSnapshot, PollerHandle};
use crate::stats::{Ring, Samples};
use reqwest::header::{HeaderMap, HeaderName};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// Shared context of the attempts of one session.
pub struct CellEnv {
    /// Transport of the load, preflight and polling (one connection pool).
    pub backend: SharedBackend,
    /// Base URL of the load (gateway or server).
    pub base: String,
    /// Headers of every load request (content type, authorization).
    pub headers: HeaderMap,
    /// Response headers that name the serving replica.
    pub served_by: Vec<HeaderName>,
    /// The metrics poller, when any metrics URL is polled.
    pub poller: Option<PollerHandle>,
    /// The live view the monitor renders.
    pub live_tx: watch::Sender<LiveView>,
    /// Runner events.
    pub events: mpsc::UnboundedSender<RunnerEvent>,
    /// Session start.
    pub started: Instant,
    /// The run configuration.
    pub cfg: Arc<RunConfig>,
    /// What preflight found.
    pub facts: Arc<Facts>,
    /// Session start, RFC 3339 (UTC).
    pub started_wall: String,
    /// Gateway version, when a gateway was measured.
    pub gateway_version: Option<String>,
    /// Things the report reader should know, collected as the session runs.
    pub notes: std::sync::Mutex<Vec<String>>,
    /// The routing experiment's shared state, when planned.
    pub routing: Option<Arc<crate::routing::RoutingEnv>>,
}

impl CellEnv {
    /// The latest metrics round, if polling.
    pub fn metrics(&self) -> Option<Arc<MetricsSnapshot>> {
        self.poller.as_ref().map(|p| p.latest())
    }

    /// A fresh metrics round taken now (for window boundaries), if polling.
    pub async fn metrics_now(&self) -> Option<Arc<MetricsSnapshot>> {
        match &self.poller {
            Some(p) => Some(p.scrape_now().await),
            None => None,
        }
    }

    /// The workers' context of an attempt: this session's client, URL and headers (plus any
    /// `headers` override, e.g. a routing strategy), `live` counters, timeouts.
    pub fn worker_ctx(
        &self,
        live: Arc<LiveCounters>,
        expected_chunks: u64,
        headers: Option<HeaderMap>,
        first_token_timeout: Option<Duration>,
        nonce_base: u64,
    ) -> WorkerCtx {
        WorkerCtx {
            backend: self.backend.clone(),
            url: format!("{}{}", self.base, self.cfg.endpoint.path()),
            headers: headers.unwrap_or_else(|| self.headers.clone()),
            served_by: self.served_by.clone(),
            first_token_timeout,
            idle_timeout: self.cfg.idle_timeout,
            expected_chunks: expected_chunks.min(4096) as usize,
            live,
            nonce_base,
        }
    }

    /// Sends a runner event (the receiver may be gone in tests).
    pub fn emit(&self, ev: RunnerEvent) {
        let _ = self.events.send(ev);
    }

    /// Records a warning for the report (once per distinct text) and the log.
    pub fn warn(&self, msg: String) {
        if let Ok(mut n) = self.notes.lock()
            && !n.contains(&msg)
        {
            n.push(msg.clone());
            self.emit(RunnerEvent::Log(msg));
        }
    }

    /// Preflight warnings followed by those raised while running.
    pub fn warnings(&self) -> Vec<String> {
        let mut all = self.facts.warnings.clone();
        all.extend(self.notes.lock().map(|n| n.clone()).unwrap_or_default());
        all
    }

    /// Seconds since the session start.
    pub fn since_start(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.started).as_secs_f64()
    }
}

/// Publishes the live view of one attempt at the monitor's tick.
pub struct LivePublisher {
    view: LiveView,
    last_tokens: u64,
    last_at: Instant,
    history: Ring<f64>,
    replicas: super::replicas_live::ReplicaTracker,
}

impl LivePublisher {
    /// Starts the view of an attempt of `cell`.
    pub fn new(cell: usize, label: String, requested: u32) -> Self {
        let view = LiveView { cell: Some(cell), label, requested, ..LiveView::default() };
        Self { view, last_tokens: 0, last_at: Instant::now(), history: Ring::new(240), replicas: Default::default() }
    }

    /// Moves to `phase` (bounded by `len` when known) and tells the runner's listeners.
    pub fn phase(&mut self, env: &CellEnv, phase: Phase, len: Option<Duration>) {
        self.view.phase = phase;
        self.view.phase_started = Some(Instant::now());
        self.view.phase_len = len;
        if let Some(cell) = self.view.cell {
            env.emit(RunnerEvent::Phase { cell, phase });
        }
        env.live_tx.send_replace(self.view.clone());
    }

    /// Counts a finished request in the view: its error kind, and the replica that served it
    /// (`pod`, already resolved by the caller).
    pub fn tally(&mut self, s: &crate::load::sample::RequestSample, pod: Option<&str>) {
        if let Some(kind) = s.error_kind() {
            *self.view.errors.entry(kind.as_str().to_string()).or_default() += 1;
        }
        if let Some(pod) = pod {
            *self.view.served_by.entry(pod.to_string()).or_default() += 1;
        }
    }

    /// Mutable access to the view's tallies (errors, served-by).
    pub fn view_mut(&mut self) -> &mut LiveView {
        &mut self.view
    }

    /// Refreshes rates and percentiles from the live counters and publishes.
    pub fn tick(&mut self, env: &CellEnv, live: &LiveCounters) {
        let now = Instant::now();
        let totals = live.totals();
        let dt = now.saturating_duration_since(self.last_at).as_secs_f64();
        if dt > 0.0 {
            self.view.tps = (totals.tokens - self.last_tokens) as f64 / dt;
            self.history.push(self.view.tps);
        }
        (self.last_tokens, self.last_at) = (totals.tokens, now);
        let mut ttft: Samples = live.ttfts().into_iter().collect();
        self.view.ttft_p50_ms = ttft.percentile(50.0);
        self.view.ttft_p90_ms = ttft.percentile(90.0);
        self.view.itl_now_ms =
            (self.view.tps > 0.0 && totals.streaming > 0).then(|| 1e3 * totals.streaming as f64 / self.view.tps);
        self.view.totals = totals;
        self.view.tps_history = self.history.to_vec();
        self.view.client_lag_ms = Some(live.lag_recent_ms());
        if let Some(snap) = env.metrics() {
            (self.view.replicas, self.view.routing) = self.replicas.update(&snap, &self.view.served_by);
        }
        env.live_tx.send_replace(self.view.clone());
    }

    /// Publishes an idle view (between cells).
    pub fn idle(env: &CellEnv) {
        env.live_tx.send_replace(LiveView::default());
    }
}
