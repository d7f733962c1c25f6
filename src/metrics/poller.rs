//! The Prometheus poller task: scrapes every replica and the gateway on a fixed schedule and publishes snapshots.
//!
//! Each target's scrape runs as its own task with its own timeout, so a slow replica never holds
//! back the others: a scheduled round publishes as soon as its scrapes are in, or at
//! `min(interval, timeout)` after it started, whichever is first. A target whose scrape is still
//! in flight is not scraped again by the schedule; its result lands in a later snapshot.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::{Id, JoinError, JoinSet};
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use super::dialect::EngineDialect;
use super::page::{self, PageError};
use super::prom::Scrape;
pub use super::window::{GatewayPoint, GatewayView, History, MetricsSnapshot, Point, ReplicaHistory, ReplicaView};
use crate::load::backend::SharedBackend;

#[path = "poller_slot.rs"]
mod slot;
pub use slot::UNUSABLE_BACKOFF_MAX;
use slot::{Done, Outcome, Slot, fold_gateway, fold_replica, scrape};

#[cfg(test)]
#[path = "tests_poller.rs"]
mod tests;
#[cfg(test)]
#[path = "tests_unusable.rs"]
mod tests_unusable;

/// A `/metrics` URL to poll: a replica's or the gateway's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsTarget {
    /// Display name; replica names key the history and views, so keep them unique.
    pub name: String,
    /// Full URL of the metrics page.
    pub url: String,
}

impl MetricsTarget {
    /// A target from a name and URL.
    pub fn new(name: impl Into<String>, url: impl Into<String>) -> MetricsTarget {
        MetricsTarget { name: name.into(), url: url.into() }
    }
}

/// What to poll and how often.
#[derive(Debug, Clone, PartialEq)]
pub struct PollerConfig {
    /// Engine replicas.
    pub replicas: Vec<MetricsTarget>,
    /// The gateway/router, if any.
    pub gateway: Option<MetricsTarget>,
    /// Time between scheduled rounds (clamped to at least 1 ms).
    pub interval: Duration,
    /// Limit on one scrape, request to end of body.
    pub timeout: Duration,
    /// A target without a successful scrape for this long is stale.
    pub stale_after: Duration,
    /// Most history points kept per replica.
    pub history_max_points: usize,
}

impl PollerConfig {
    /// Default round interval.
    pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(250);
    /// Default scrape timeout.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

    /// Defaults: 250 ms interval, 2 s timeout, stale after 3 x interval + timeout.
    pub fn new(replicas: Vec<MetricsTarget>, gateway: Option<MetricsTarget>) -> PollerConfig {
        let (interval, timeout) = (Self::DEFAULT_INTERVAL, Self::DEFAULT_TIMEOUT);
        let stale_after = Self::default_stale_after(interval, timeout);
        PollerConfig {
            replicas,
            gateway,
            interval,
            timeout,
            stale_after,
            history_max_points: History::DEFAULT_MAX_POINTS,
        }
    }

    /// Sets interval and timeout, and `stale_after` to its default for them.
    pub fn with_timing(mut self, interval: Duration, timeout: Duration) -> PollerConfig {
        (self.interval, self.timeout) = (interval, timeout);
        self.stale_after = Self::default_stale_after(interval, timeout);
        self
    }

    /// 3 x interval + timeout.
    pub fn default_stale_after(interval: Duration, timeout: Duration) -> Duration {
        interval.saturating_mul(3).saturating_add(timeout)
    }
}

/// Starts poller tasks.
#[derive(Debug)]
pub struct Poller;

impl Poller {
    /// Spawns the poller on the current tokio runtime (must be called inside one). It runs until
    /// `cancel` fires or the handle is stopped or dropped; the first round starts at once.
    pub fn spawn(backend: SharedBackend, cfg: PollerConfig, cancel: CancellationToken) -> PollerHandle {
        let history = Arc::new(Mutex::new(History::new(cfg.history_max_points, Some(cfg.stale_after))));
        let targets = cfg.replicas.iter().chain(&cfg.gateway);
        let slots = targets.map(|t| Slot::new(&t.url)).collect();
        let empty = MetricsSnapshot { seq: 0, at: Instant::now(), replicas: vec![], gateway: None };
        let (tx, rx) = watch::channel(Arc::new(empty));
        let mut task = PollTask {
            backend,
            interval: cfg.interval.max(Duration::from_millis(1)),
            timeout: cfg.timeout,
            stale_after: cfg.stale_after,
            slots,
            replicas: cfg.replicas.iter().map(replica_view).collect(),
            gateway: cfg.gateway.as_ref().map(gateway_view),
            jobs: JoinSet::new(),
            by_id: HashMap::new(),
            rounds: Vec::new(),
            next_round: 0,
            seq: 0,
            tx,
            history: Arc::clone(&history),
        };
        task.publish();
        let (req_tx, req_rx) = mpsc::channel(16);
        let cancel = cancel.child_token();
        tokio::spawn(task.run(req_rx, cancel.clone()));
        PollerHandle { rx, requests: req_tx, history, cancel }
    }
}

pub(crate) type Reply = oneshot::Sender<Arc<MetricsSnapshot>>;

/// Controls a running poller. Dropping it stops the poller.
#[derive(Debug)]
pub struct PollerHandle {
    rx: watch::Receiver<Arc<MetricsSnapshot>>,
    requests: mpsc::Sender<Reply>,
    history: Arc<Mutex<History>>,
    cancel: CancellationToken,
}

impl PollerHandle {
    /// A handle over another task that publishes as the poller does (the Prometheus-server
    /// reader, [`super::prom_poller`]): it answers `requests` with a fresh snapshot.
    pub(crate) fn from_parts(
        rx: watch::Receiver<Arc<MetricsSnapshot>>,
        requests: mpsc::Sender<Reply>,
        history: Arc<Mutex<History>>,
        cancel: CancellationToken,
    ) -> PollerHandle {
        PollerHandle { rx, requests, history, cancel }
    }

    /// A receiver of every published snapshot (one per round, starting with the empty seq 0).
    pub fn subscribe(&self) -> watch::Receiver<Arc<MetricsSnapshot>> {
        self.rx.clone()
    }

    /// The most recently published snapshot.
    pub fn latest(&self) -> Arc<MetricsSnapshot> {
        Arc::clone(&self.rx.borrow())
    }

    /// Runs an extra round now, scraping every target afresh, and returns its snapshot (also
    /// published). Every scrape in it is sent after this call starts, but a target whose scrape
    /// failed or timed out keeps its older sample: a view with `last_ok >= t`, `t` taken before
    /// the call, was read after it. Takes at most about `timeout`. If the poller has stopped,
    /// returns the latest snapshot.
    pub async fn scrape_now(&self) -> Arc<MetricsSnapshot> {
        let (tx, rx) = oneshot::channel();
        if self.requests.send(tx).await.is_err() {
            return self.latest();
        }
        rx.await.unwrap_or_else(|_| self.latest())
    }

    /// A copy of the history so far.
    pub fn history(&self) -> History {
        lock(&self.history).clone()
    }

    /// The replicas that joined or left so far ([`History::membership`]), without copying the
    /// rest of the history.
    pub fn membership(&self) -> Vec<super::snapshot::MembershipChange> {
        lock(&self.history).membership.clone()
    }

    /// Stops the poller; in-flight scrapes are abandoned and subscribers see the channel close.
    pub fn stop(self) {
        drop(self);
    }
}

impl Drop for PollerHandle {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

pub(crate) fn lock(history: &Mutex<History>) -> MutexGuard<'_, History> {
    history.lock().unwrap_or_else(PoisonError::into_inner)
}

fn replica_view(t: &MetricsTarget) -> ReplicaView {
    ReplicaView { name: t.name.clone(), url: redact_url(&t.url), stale: true, ..ReplicaView::default() }
}

fn gateway_view(t: &MetricsTarget) -> GatewayView {
    GatewayView { name: t.name.clone(), url: redact_url(&t.url), stale: true, ..GatewayView::default() }
}

/// One round of scrapes: published when all are in or at the deadline.
struct Round {
    id: u64,
    deadline: Instant,
    remaining: usize,
    waiters: Vec<Reply>,
}

/// The state owned by the poller task.
struct PollTask {
    backend: SharedBackend,
    interval: Duration,
    timeout: Duration,
    stale_after: Duration,
    slots: Vec<Slot>,
    replicas: Vec<ReplicaView>,
    gateway: Option<GatewayView>,
    jobs: JoinSet<Outcome>,
    /// Task id → (slot index, round id).
    by_id: HashMap<Id, (usize, u64)>,
    rounds: Vec<Round>,
    next_round: u64,
    seq: u64,
    tx: watch::Sender<Arc<MetricsSnapshot>>,
    history: Arc<Mutex<History>>,
}

impl PollTask {
    async fn run(mut self, mut requests: mpsc::Receiver<Reply>, cancel: CancellationToken) {
        let mut ticker = tokio::time::interval(self.interval);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            let deadline = self.rounds.iter().map(|r| r.deadline).min();
            tokio::select! {
                biased;
                () = cancel.cancelled() => break,
                Some(reply) = requests.recv() => self.start_round(Some(reply)),
                Some(done) = self.jobs.join_next_with_id() => self.on_done(done),
                () = sleep_until(deadline) => {
                    let now = Instant::now();
                    self.finish_where(|r| r.deadline <= now);
                }
                _ = ticker.tick() => {
                    // A scheduled round still open is published before the next one starts.
                    self.finish_where(|r| r.waiters.is_empty());
                    self.start_round(None);
                }
            }
        }
    }

    /// Starts a round: a scheduled one (`reply` = None) scrapes the targets with no scrape in
    /// flight; a requested one scrapes them all.
    fn start_round(&mut self, reply: Option<Reply>) {
        let now = Instant::now();
        let id = self.next_round;
        self.next_round += 1;
        let forced = reply.is_some();
        let mut remaining = 0;
        for i in 0..self.slots.len() {
            if forced || self.slots[i].due(now) {
                self.spawn_scrape(i, id);
                remaining += 1;
            }
        }
        // Scrapes end by `timeout` on their own; the margin only guards a requested round.
        let budget = if forced { self.timeout + Duration::from_millis(100) } else { self.timeout.min(self.interval) };
        self.rounds.push(Round { id, deadline: now + budget, remaining, waiters: reply.into_iter().collect() });
        if remaining == 0 {
            self.finish(id);
        }
    }

    fn spawn_scrape(&mut self, slot: usize, round: u64) {
        let s = &mut self.slots[slot];
        let handle = self.jobs.spawn(scrape(self.backend.clone(), s.url.clone(), self.timeout));
        self.by_id.insert(handle.id(), (slot, round));
        s.inflight += 1;
    }

    fn on_done(&mut self, done: Result<(Id, Outcome), JoinError>) {
        let (id, outcome) = match done {
            Ok((id, outcome)) => (id, outcome),
            Err(e) => {
                let now = Instant::now();
                let result = Err(PageError::Failed("scrape task failed".into()));
                (e.id(), Outcome { started: now, finished: now, result })
            }
        };
        let Some((slot, round)) = self.by_id.remove(&id) else { return };
        self.slots[slot].inflight = self.slots[slot].inflight.saturating_sub(1);
        self.apply(slot, outcome);
        if let Some(r) = self.rounds.iter_mut().find(|r| r.id == round) {
            r.remaining = r.remaining.saturating_sub(1);
            if r.remaining == 0 {
                self.finish(round);
            }
        }
    }

    /// Folds a scrape result into its view, unless a newer-started one was applied already.
    fn apply(&mut self, slot: usize, outcome: Outcome) {
        let s = &mut self.slots[slot];
        if s.newest_applied.is_some_and(|newest| outcome.started < newest) {
            return;
        }
        s.newest_applied = Some(outcome.started);
        let (at, latency) = (outcome.started, Some(outcome.finished.saturating_duration_since(outcome.started)));
        let result = match (&outcome.result, self.replicas.get_mut(slot)) {
            (Ok(scrape), Some(r)) if r.dialect == EngineDialect::Unknown => {
                r.dialect = EngineDialect::detect(scrape);
                match r.dialect {
                    EngineDialect::Unknown => Err(page::no_engine_series(scrape)),
                    _ => outcome.result,
                }
            }
            _ => outcome.result,
        };
        match &result {
            Err(PageError::Unusable(_)) => self.slots[slot].back_off(self.interval, outcome.finished),
            _ => self.slots[slot].backoff = None,
        }
        let done = Done { at, latency, result };
        match (self.replicas.get_mut(slot), &mut self.gateway) {
            (Some(r), _) => fold_replica(r, &mut lock(&self.history), done),
            (None, Some(g)) => fold_gateway(g, &mut lock(&self.history), done),
            (None, None) => {}
        }
    }

    /// Ends every open round that `pred` picks.
    fn finish_where(&mut self, pred: impl Fn(&Round) -> bool) {
        let ids: Vec<u64> = self.rounds.iter().filter(|r| pred(r)).map(|r| r.id).collect();
        ids.into_iter().for_each(|id| self.finish(id));
    }

    /// Ends a round: publishes a snapshot and answers its waiters.
    fn finish(&mut self, round: u64) {
        let Some(pos) = self.rounds.iter().position(|r| r.id == round) else { return };
        let round = self.rounds.swap_remove(pos);
        self.seq += 1;
        let snap = self.publish();
        for waiter in round.waiters {
            let _ = waiter.send(Arc::clone(&snap));
        }
    }

    /// Publishes the current views as snapshot `seq`, with staleness as of now.
    fn publish(&mut self) -> Arc<MetricsSnapshot> {
        let at = Instant::now();
        let (base, timeout) = (self.stale_after, self.timeout);
        let mut limits = self.slots.iter().map(|s| s.stale_after(base, timeout));
        let stale = |ok: Option<Instant>, limit: Option<Duration>| {
            ok.is_none_or(|ok| at.saturating_duration_since(ok) > limit.unwrap_or(base))
        };
        self.replicas.iter_mut().for_each(|r| r.stale = stale(r.last_ok, limits.next()));
        if let Some(g) = &mut self.gateway {
            g.stale = stale(g.last_ok, limits.next());
        }
        let snap =
            MetricsSnapshot { seq: self.seq, at, replicas: self.replicas.clone(), gateway: self.gateway.clone() };
        let snap = Arc::new(snap);
        self.tx.send_replace(Arc::clone(&snap));
        snap
    }
}

/// The engine metrics (the dialect's own name prefix, `_created` aside) whose value on this
/// page is NaN or ±Inf; such values are left out of every figure (docs/protocol.md §0.5).
pub(crate) fn nonfinite_metrics(scrape: &Scrape, dialect: EngineDialect) -> Vec<String> {
    let prefix = match dialect {
        EngineDialect::VllmV1 | EngineDialect::VllmV0 => "vllm:",
        EngineDialect::Sglang => "sglang:",
        EngineDialect::LlamaCpp => "llamacpp:",
        EngineDialect::Unknown => return Vec::new(),
    };
    let bad = scrape.all().iter().filter(|s| !s.value.is_finite() && s.name.starts_with(prefix));
    let mut names: Vec<String> = bad.filter(|s| !s.name.ends_with("_created")).map(|s| s.name.clone()).collect();
    names.dedup();
    names
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

pub use crate::net::redact_url;
