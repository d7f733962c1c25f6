//! What every cell attempt shares: the target, the metrics poller, the live attempt the monitor
//! renders, the configuration, what preflight found, and the session clock.

use super::control::{LiveAttempt, RunnerEvent};
use super::facts::{Facts, ReplicaFacts};
use crate::config::RunConfig;
use crate::load::backend::SharedBackend;
use crate::load::live::LiveCounters;
use crate::load::worker::WorkerCtx;
use crate::metrics::poller::{MetricsSnapshot, PollerHandle};
use reqwest::header::{HeaderMap, HeaderName};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Most token-timeline marks a request reserves before its first chunk (about 3 bytes each,
/// `load::timeline`): a longer stream grows its timeline as chunks arrive, so 10,000 waiting
/// streams hold no more than a few hundred bytes each up front.
pub const TIMELINE_RESERVE: u64 = 128;

/// Where the load goes: the transport, the URL and the headers of every request.
pub struct Target {
    /// Transport of the load, preflight and polling (one connection pool).
    pub backend: SharedBackend,
    /// Base URL of the load (gateway or server).
    pub base: String,
    /// Headers of every load request (content type, authorization).
    pub headers: HeaderMap,
    /// Response headers that name the serving replica.
    pub served_by: Vec<HeaderName>,
}

/// Shared context of the attempts of one session.
pub struct CellEnv {
    /// Where the load goes.
    pub target: Target,
    /// The metrics poller, when any metrics URL is polled.
    pub poller: Option<PollerHandle>,
    /// The live view the monitor renders.
    pub live_tx: watch::Sender<LiveAttempt>,
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
    /// Things the report reader should know, collected as the session runs.
    pub notes: std::sync::Mutex<Vec<String>>,
    /// Warnings already told to the listeners (log panel, headless stderr).
    pub announced: std::sync::Mutex<std::collections::BTreeSet<String>>,
    /// Raised to end the session at once (the runner stops after the running attempt).
    pub halt: super::halt::Halt,
    /// Drawn once per session, whatever `--seed` says: every decode and burst request's nonce
    /// carries it, so no two sessions send the same prompt (a prefix cache would serve it).
    pub nonce: u64,
}

impl CellEnv {
    /// The latest metrics round, if polling.
    pub fn metrics(&self) -> Option<Arc<MetricsSnapshot>> {
        self.poller.as_ref().map(|p| p.latest())
    }

    /// KV capacity of replica `r`, tokens: what preflight read, else (preflight could not read
    /// its metrics) what a later poll in `latest` detected.
    pub fn replica_kv_capacity(&self, r: &ReplicaFacts, latest: Option<&MetricsSnapshot>) -> Option<u64> {
        let polled = latest.and_then(|m| m.replica(&r.name)).and_then(|v| v.sample.as_ref());
        let polled = polled.and_then(|s| s.kv_capacity_tokens).filter(|c| c.is_finite() && *c > 0.0);
        r.kv_capacity.or(polled.map(|c| c as u64))
    }

    /// KV capacity summed over the replicas as known now (see [`Self::replica_kv_capacity`]),
    /// tokens; None while any replica's is unknown, or without replicas.
    pub fn kv_capacity_now(&self) -> Option<u64> {
        let latest = self.metrics();
        super::facts::known_sum(self.facts.replicas.iter().map(|r| self.replica_kv_capacity(r, latest.as_deref())))
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
        if self.cfg.exposition.is_some() {
            // Before the first request: the live page's histograms see every one of them.
            live.series.get_or_init(Default::default);
        }
        WorkerCtx {
            backend: self.target.backend.clone(),
            url: format!("{}{}", self.target.base, self.cfg.endpoint.path()),
            headers: headers.unwrap_or_else(|| self.target.headers.clone()),
            served_by: self.target.served_by.clone(),
            first_token_timeout,
            queued_waits: false,
            idle_timeout: self.cfg.idle_timeout,
            expected_chunks: expected_chunks.min(TIMELINE_RESERVE) as usize,
            live,
            nonce_base,
            no_more: CancellationToken::new(),
            request_timeout: None,
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
            drop(n);
            self.announce(std::slice::from_ref(&msg));
        }
    }

    /// Tells the listeners of every warning in `warnings` not told yet, as a `warning: …` log
    /// line: preflight's at the start, the report's as each save finds them.
    pub fn announce(&self, warnings: &[String]) {
        let Ok(mut told) = self.announced.lock() else { return };
        for w in warnings {
            if told.insert(w.clone()) {
                self.emit(RunnerEvent::Log(format!("warning: {w}")));
            }
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
