//! The live view of one attempt: phase changes, tallies of finished requests, and the rates
//! and percentiles refreshed at the publish tick.

use super::context::CellEnv;
use super::control::{LiveAttempt, Phase, RunnerEvent};
use crate::load::live::LiveCounters;
use crate::stats::{Ring, Samples};
use std::time::Duration;
use tokio::time::Instant;

/// Publishes the live view of one attempt at the monitor's tick.
pub struct LivePublisher {
    attempt: LiveAttempt,
    last_tokens: u64,
    last_at: Instant,
    history: Ring<f64>,
    replicas: super::replicas_live::ReplicaTracker,
}

impl LivePublisher {
    /// Starts the view of an attempt of `cell`.
    pub fn new(cell: usize, label: String, requested: u32) -> Self {
        let attempt = LiveAttempt { cell: Some(cell), label, requested, ..LiveAttempt::default() };
        Self { attempt, last_tokens: 0, last_at: Instant::now(), history: Ring::new(240), replicas: Default::default() }
    }

    /// Moves to `phase` (bounded by `len` when known) and tells the runner's listeners.
    pub fn phase(&mut self, env: &CellEnv, phase: Phase, len: Option<Duration>) {
        self.attempt.phase = phase;
        self.attempt.phase_started = Some(Instant::now());
        self.attempt.phase_len = len;
        if let Some(cell) = self.attempt.cell {
            env.emit(RunnerEvent::Phase { cell, phase });
        }
        env.live_tx.send_replace(self.attempt.clone());
    }

    /// Counts a finished request in the view: its error kind, and the replica that served it
    /// (`pod`, already resolved by the caller).
    pub fn tally(&mut self, s: &crate::load::sample::RequestSample, pod: Option<&str>) {
        if let Some((kind, detail)) = s.failure() {
            *self.attempt.errors.entry(kind).or_default() += 1;
            self.attempt.error_examples.insert(kind, detail.to_string());
        }
        if let Some(pod) = pod {
            *self.attempt.served_by.entry(pod.to_string()).or_default() += 1;
        }
    }

    /// The snapshot the panels' deltas count from: the attempt's opening scrape.
    pub fn baseline(&mut self, snap: std::sync::Arc<crate::metrics::window::MetricsSnapshot>) {
        self.replicas.start_at(snap);
    }

    /// The cell's label, as the monitor shows it.
    pub fn label(&self) -> &str {
        &self.attempt.label
    }

    /// Mutable access to the view's tallies (errors, served-by).
    pub fn live_mut(&mut self) -> &mut LiveAttempt {
        &mut self.attempt
    }

    /// Refreshes rates and percentiles from the live counters and publishes.
    pub fn tick(&mut self, env: &CellEnv, live: &LiveCounters) {
        let now = Instant::now();
        let totals = live.totals();
        let dt = now.saturating_duration_since(self.last_at).as_secs_f64();
        if dt > 0.0 {
            self.attempt.tps = (totals.tokens - self.last_tokens) as f64 / dt;
            self.history.push(self.attempt.tps);
        }
        (self.last_tokens, self.last_at) = (totals.tokens, now);
        let mut ttft: Samples = live.ttfts().into_iter().collect();
        self.attempt.ttft_p50_ms = ttft.percentile(50.0);
        self.attempt.ttft_p90_ms = ttft.percentile(90.0);
        self.attempt.itl_now_ms =
            (self.attempt.tps > 0.0 && totals.streaming > 0).then(|| 1e3 * totals.streaming as f64 / self.attempt.tps);
        self.attempt.totals = totals;
        self.attempt.tps_history = self.history.to_vec();
        self.attempt.client_lag_ms = Some(live.lag_recent_ms());
        if let Some(snap) = env.metrics() {
            (self.attempt.replicas, self.attempt.routing) = self.replicas.update(&snap, &self.attempt.served_by);
        }
        env.live_tx.send_replace(self.attempt.clone());
    }

    /// Publishes an idle view (between cells).
    pub fn idle(env: &CellEnv) {
        env.live_tx.send_replace(LiveAttempt::default());
    }
}
