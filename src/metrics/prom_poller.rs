//! The poller over a Prometheus server (`run --prometheus URL`): each round is one instant
//! query ([`PromServer::range_query`]) whose newest samples become the same
//! [`MetricsSnapshot`]s and [`History`] points the direct scraper publishes, behind the same
//! [`PollerHandle`], so every view, verdict and report reads them unchanged.
//!
//! Differences from scraping: a point is stamped with the time the server scraped the replica
//! (not when we asked), a round that finds no newer scrape adds no point, and the replica set
//! follows the server: a name whose series appear joins, one whose series are gone from the
//! last `lookback` seconds leaves (both recorded in [`History::membership`] and told through
//! the `on_change` callback).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use super::dialect::EngineDialect;
use super::engine::EngineSample;
use super::poller::{MetricsTarget, PollerHandle, Reply, lock, nonfinite_metrics};
use super::promql::{ENGINE_METRICS, PromServer, ReplicaRead, group};
use super::snapshot::{History, MembershipChange, MetricsSnapshot, Point, ReplicaView};
use crate::load::backend::SharedBackend;
use crate::net::redact_url;

/// Scrape interval assumed when the server's could not be read, seconds (Prometheus' default).
pub const DEFAULT_SCRAPE_INTERVAL_S: f64 = 15.0;

/// What to read from the server and how often.
#[derive(Debug, Clone, PartialEq)]
pub struct PromPollerConfig {
    /// The server and the selector of the replicas' series.
    pub server: PromServer,
    /// The replicas found before the session; others that appear later join.
    pub initial: Vec<MetricsTarget>,
    /// Time between queries.
    pub interval: Duration,
    /// Limit on one query.
    pub timeout: Duration,
    /// A replica without a newer scrape for this long is stale.
    pub stale_after: Duration,
    /// Range of each query, seconds: a replica without samples in it has left.
    pub lookback_s: u64,
    /// Most history points kept per replica.
    pub history_max_points: usize,
}

impl PromPollerConfig {
    /// Queries every `max(poll, scrape / 4)`, 2 s timeout; looks back 3 scrapes (at least 3 s);
    /// stale after 3 scrapes + the timeout. `scrape_s` unknown: [`DEFAULT_SCRAPE_INTERVAL_S`].
    pub fn new(server: PromServer, initial: Vec<MetricsTarget>, scrape_s: Option<f64>, poll: Duration) -> Self {
        let scrape = crate::units::secs(scrape_s.unwrap_or(DEFAULT_SCRAPE_INTERVAL_S).clamp(0.001, 3600.0));
        let timeout = Duration::from_secs(2);
        PromPollerConfig {
            server,
            initial,
            interval: poll.max(scrape / 4).max(Duration::from_millis(50)),
            timeout,
            stale_after: scrape.saturating_mul(3).saturating_add(timeout),
            lookback_s: (scrape.as_secs_f64() * 3.0).ceil().max(3.0) as u64,
            history_max_points: History::DEFAULT_MAX_POINTS,
        }
    }
}

/// Told one line when a replica joins or leaves.
pub type OnChange = Box<dyn Fn(String) + Send + Sync>;

/// Spawns the reader on the current tokio runtime; it runs until `cancel` fires or the handle
/// is dropped. The first query is sent at once.
pub fn spawn(
    backend: SharedBackend,
    cfg: PromPollerConfig,
    on_change: Option<OnChange>,
    cancel: CancellationToken,
) -> PollerHandle {
    let history = Arc::new(Mutex::new(History::new(cfg.history_max_points, Some(cfg.stale_after))));
    let empty = MetricsSnapshot { seq: 0, at: Instant::now(), replicas: vec![], gateway: None };
    let (tx, rx) = watch::channel(Arc::new(empty));
    let views: Vec<ReplicaView> = cfg.initial.iter().map(|t| view(&t.name, &t.url)).collect();
    let n = views.len();
    let (present, last_unix) = (vec![true; n], vec![f64::MIN; n]);
    let history_ref = Arc::clone(&history);
    let mut task = Task { backend, cfg, views, present, last_unix, seq: 0, tx, history: history_ref, on_change };
    task.publish();
    let (req_tx, req_rx) = mpsc::channel(16);
    let cancel = cancel.child_token();
    tokio::spawn(task.run(req_rx, cancel.clone()));
    PollerHandle::from_parts(rx, req_tx, history, cancel)
}

fn view(name: &str, url: &str) -> ReplicaView {
    ReplicaView { name: name.to_string(), url: redact_url(url), stale: true, ..ReplicaView::default() }
}

/// The view URL of a replica read from `server`: the server and the replica's `instance`.
pub fn replica_url(server: &PromServer, instance: &str) -> String {
    format!("{} instance={instance}", redact_url(&server.url))
}

struct Task {
    backend: SharedBackend,
    cfg: PromPollerConfig,
    views: Vec<ReplicaView>,
    /// Per view: its series were in the last answer (initial replicas start present).
    present: Vec<bool>,
    /// Per view: the newest scrape time applied, unix seconds.
    last_unix: Vec<f64>,
    seq: u64,
    tx: watch::Sender<Arc<MetricsSnapshot>>,
    history: Arc<Mutex<History>>,
    on_change: Option<OnChange>,
}

impl Task {
    async fn run(mut self, mut requests: mpsc::Receiver<Reply>, cancel: CancellationToken) {
        let mut ticker = tokio::time::interval(self.cfg.interval);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                () = cancel.cancelled() => break,
                Some(reply) = requests.recv() => {
                    let snap = self.round().await;
                    let _ = reply.send(snap);
                }
                _ = ticker.tick() => {
                    self.round().await;
                }
            }
        }
    }

    /// One query, applied and published.
    async fn round(&mut self) -> Arc<MetricsSnapshot> {
        let sent = Instant::now();
        let (range, timeout) = (self.cfg.lookback_s, self.cfg.timeout);
        let answer = self.cfg.server.range_query(&*self.backend, ENGINE_METRICS, range, timeout).await;
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
        match answer {
            Ok(series) => self.apply(group(&series), Instant::now(), wall, sent),
            Err(e) => {
                for i in 0..self.views.len() {
                    self.failed(i, &format!("Prometheus query failed: {e}"), sent);
                }
            }
        }
        self.publish()
    }

    fn apply(&mut self, reads: Vec<ReplicaRead>, now: Instant, wall: f64, sent: Instant) {
        let mut seen = BTreeSet::new();
        for r in reads {
            let i = match self.views.iter().position(|v| v.name == r.name) {
                Some(i) => i,
                None => self.add(&r),
            };
            seen.insert(i);
            if !self.present[i] {
                self.present[i] = true;
                self.change(i, true, sent);
            }
            self.read(i, r, now, wall);
        }
        for i in 0..self.views.len() {
            if !seen.contains(&i) {
                if self.present[i] {
                    self.present[i] = false;
                    self.change(i, false, sent);
                }
                let msg = format!("no series on the Prometheus server in the last {} s", self.cfg.lookback_s);
                self.failed(i, &msg, sent);
            }
        }
    }

    fn add(&mut self, r: &ReplicaRead) -> usize {
        self.views.push(view(&r.name, &replica_url(&self.cfg.server, &r.instance)));
        self.present.push(false);
        self.last_unix.push(f64::MIN);
        self.views.len() - 1
    }

    /// Applies the newest scrape of replica `i` if it is newer than the last one applied.
    fn read(&mut self, i: usize, r: ReplicaRead, now: Instant, wall: f64) {
        let v = &mut self.views[i];
        (v.last_error, v.consecutive_failures) = (None, 0);
        if r.at_unix <= self.last_unix[i] {
            return;
        }
        self.last_unix[i] = r.at_unix;
        let age = crate::units::secs((wall - r.at_unix).clamp(0.0, 1e6));
        let mut at = now.checked_sub(age).unwrap_or(now);
        if let Some(prev) = v.last_ok {
            at = at.max(prev);
        }
        let dialect = match v.dialect {
            EngineDialect::Unknown => EngineDialect::detect(&r.scrape),
            d => d,
        };
        let sample = EngineSample::from_scrape(&r.scrape, dialect);
        {
            let mut h = lock(&self.history);
            h.push(&v.name, Point::from_sample(at, &sample));
            h.poll_ok(&v.name, at);
            h.note_nonfinite(&v.name, &nonfinite_metrics(&r.scrape, dialect));
        }
        (v.dialect, v.sample, v.last_ok) = (dialect, Some(sample), Some(at));
    }

    fn failed(&mut self, i: usize, msg: &str, sent: Instant) {
        let v = &mut self.views[i];
        (v.last_error, v.consecutive_failures) = (Some(msg.to_string()), v.consecutive_failures + 1);
        lock(&self.history).poll_failed(&v.name, sent, msg);
    }

    fn change(&mut self, i: usize, joined: bool, at: Instant) {
        let replica = self.views[i].name.clone();
        let line = match joined {
            true => format!("replica {replica} joined (its series appeared on the Prometheus server)"),
            false => format!(
                "replica {replica} left (no series on the Prometheus server in the last {} s)",
                self.cfg.lookback_s
            ),
        };
        lock(&self.history).membership.push(MembershipChange { at, replica, joined });
        if let Some(tell) = &self.on_change {
            tell(line);
        }
    }

    fn publish(&mut self) -> Arc<MetricsSnapshot> {
        let at = Instant::now();
        let stale_after = self.cfg.stale_after;
        let stale = |ok: Option<Instant>| ok.is_none_or(|ok| at.saturating_duration_since(ok) > stale_after);
        self.views.iter_mut().for_each(|v| v.stale = stale(v.last_ok));
        let snap = Arc::new(MetricsSnapshot { seq: self.seq, at, replicas: self.views.clone(), gateway: None });
        self.seq += 1;
        self.tx.send_replace(Arc::clone(&snap));
        snap
    }
}
