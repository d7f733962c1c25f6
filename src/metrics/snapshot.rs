//! What the poller publishes: per-round snapshots of every replica and the gateway, and the
//! bounded history of polled points.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use tokio::time::Instant;

use super::dialect::EngineDialect;
use super::engine::EngineSample;
use super::gateway::{CounterSeries, GatewayDialect};

/// The state of one replica as of a snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplicaView {
    /// Replica name.
    pub name: String,
    /// Metrics URL, without userinfo.
    pub url: String,
    /// Dialect, fixed by the first good scrape that recognised one.
    pub dialect: EngineDialect,
    /// The last good sample (kept through failures).
    pub sample: Option<EngineSample>,
    /// When the request of the last good scrape was sent: its page shows the state at or after this.
    pub last_ok: Option<Instant>,
    /// Why the most recent scrape failed, one line; `None` if it succeeded.
    pub last_error: Option<String>,
    /// Failed scrapes since the last good one.
    pub consecutive_failures: u32,
    /// No good scrape within `stale_after` (or none yet); helpers leave stale replicas out.
    pub stale: bool,
    /// Duration of the last good scrape, request to parsed page.
    pub scrape_latency: Option<Duration>,
    /// Why the page of the last answered scrape holds no engine figures (not a metrics page,
    /// no engine series, over the size caps); None when it has them. The replica is up.
    pub unusable: Option<String>,
}

/// The state of the gateway as of a snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GatewayView {
    /// Gateway name.
    pub name: String,
    /// Metrics URL, without userinfo.
    pub url: String,
    /// Dialect, fixed by the first good scrape that recognised one.
    pub dialect: GatewayDialect,
    /// Counter series of the last good scrape.
    pub series: Vec<CounterSeries>,
    /// When the request of the last good scrape was sent: its page shows the state at or after this.
    pub last_ok: Option<Instant>,
    /// Why the most recent scrape failed, one line; `None` if it succeeded.
    pub last_error: Option<String>,
    /// Failed scrapes since the last good one.
    pub consecutive_failures: u32,
    /// No good scrape within `stale_after` (or none yet).
    pub stale: bool,
    /// Duration of the last good scrape, request to parsed page.
    pub scrape_latency: Option<Duration>,
}

/// Everything the poller knows after one round.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsSnapshot {
    /// Round number; 0 is the empty snapshot published at start.
    pub seq: u64,
    /// When the snapshot was assembled.
    pub at: Instant,
    /// Per replica, in configuration order.
    pub replicas: Vec<ReplicaView>,
    /// The gateway, if configured.
    pub gateway: Option<GatewayView>,
}

impl MetricsSnapshot {
    /// Counter changes since `start` of every replica read in both rounds, in this round's
    /// order (a replica missing from either is left out).
    pub fn deltas_since<'a>(&'a self, start: &'a MetricsSnapshot) -> impl Iterator<Item = super::CounterDeltas> + 'a {
        self.replicas.iter().filter_map(move |b| {
            let a = start.replicas.iter().find(|r| r.name == b.name)?.sample.as_ref()?;
            Some(b.sample.as_ref()?.delta(a))
        })
    }

    /// Running requests summed over non-stale replicas that report it; `None` if none does.
    pub fn running_total(&self) -> Option<f64> {
        self.fresh_sum(|s| s.running)
    }

    /// Waiting requests summed over non-stale replicas that report it; `None` if none does.
    pub fn waiting_total(&self) -> Option<f64> {
        self.fresh_sum(|s| s.waiting)
    }

    /// Highest KV-cache usage (fraction 0..1) among non-stale replicas that report it.
    pub fn kv_usage_max(&self) -> Option<f64> {
        self.fresh(|s| s.kv_usage).reduce(f64::max)
    }

    /// The view of a replica by name.
    pub fn replica(&self, name: &str) -> Option<&ReplicaView> {
        self.replicas.iter().find(|r| r.name == name)
    }

    fn fresh(&self, f: impl Fn(&EngineSample) -> Option<f64>) -> impl Iterator<Item = f64> {
        let samples = self.replicas.iter().filter(|r| !r.stale).filter_map(|r| r.sample.as_ref());
        samples.filter_map(f).filter(|v| !v.is_nan())
    }

    fn fresh_sum(&self, f: impl Fn(&EngineSample) -> Option<f64>) -> Option<f64> {
        self.fresh(f).fold(None, |acc, v| Some(acc.unwrap_or(0.0) + v))
    }
}

/// One successful scrape of one replica, reduced to the numbers window statistics need.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// When the scrape's request was sent.
    pub at: Instant,
    /// Requests in the running batch.
    pub running: Option<f64>,
    /// Requests in the waiting queue.
    pub waiting: Option<f64>,
    /// KV-cache usage, fraction 0..1.
    pub kv_usage: Option<f64>,
    /// Counter: generated tokens, tokens, from the series that moves as they are generated
    /// ([`EngineSample::live_generation_tokens`]); None where the engine has none.
    pub generation_tokens: Option<f64>,
    /// Counter: prompt tokens, tokens.
    pub prompt_tokens: Option<f64>,
    /// Counter: prefix-cache lookups, tokens.
    pub prefix_queries_tokens: Option<f64>,
    /// Counter: prefix-cache hits, tokens.
    pub prefix_hits_tokens: Option<f64>,
    /// Counter: preemptions / retractions.
    pub preemptions: Option<f64>,
    /// Counter: requests finished (not aborted).
    pub requests_finished: Option<f64>,
}

impl Point {
    /// The history point of a sample whose scrape was sent at `at`.
    pub fn from_sample(at: Instant, s: &EngineSample) -> Point {
        Point {
            at,
            running: s.running,
            waiting: s.waiting,
            kv_usage: s.kv_usage,
            generation_tokens: s.live_generation_tokens,
            prompt_tokens: s.prompt_tokens,
            prefix_queries_tokens: s.prefix_queries_tokens,
            prefix_hits_tokens: s.prefix_hits_tokens,
            preemptions: s.preemptions,
            requests_finished: s.requests_finished,
        }
    }
}

/// The points of one replica, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaHistory {
    /// Replica name.
    pub name: String,
    /// Points in time order, at most [`History::max_points`].
    pub points: VecDeque<Point>,
    /// Oldest points dropped to stay within the bound.
    pub dropped: u64,
}

/// The gateway's counter series after a round in which one of them changed.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayPoint {
    /// When the scrape's request was sent.
    pub at: Instant,
    /// Every counter series of the page.
    pub series: Vec<CounterSeries>,
}

/// A stretch of time in which a replica's polls failed: from the first failed poll's request to
/// the next good one's (`None` while it still fails).
#[derive(Debug, Clone, PartialEq)]
pub struct Outage {
    /// When the first failed poll was sent.
    pub from: Instant,
    /// When the next good poll was sent; `None` while polls still fail.
    pub to: Option<Instant>,
    /// Why the first poll of the outage failed, one line.
    pub error: String,
}

/// Bounded poll history of every replica and of the gateway.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    /// Per replica, in first-push order.
    pub replicas: Vec<ReplicaHistory>,
    /// Gateway rounds whose series differed from the previous kept one, oldest first.
    pub gateway: VecDeque<GatewayPoint>,
    /// Oldest gateway points dropped to stay within the bound.
    pub gateway_dropped: u64,
    /// Most points kept per replica.
    pub max_points: usize,
    /// Most gateway points kept (a busy gateway's counters change every round).
    pub max_gateway_points: usize,
    /// Longest a point counts as current when no later point follows; `None` = until the next one.
    pub hold_max: Option<Duration>,
    /// Per replica, the stretches its polls failed, oldest first (a replica never failing has none).
    pub outages: BTreeMap<String, Vec<Outage>>,
    /// Per replica and metric name: good polls in which a metric the tool reads was NaN or ±Inf
    /// (the value is left out of every figure).
    pub nonfinite: BTreeMap<String, BTreeMap<String, u64>>,
    /// Per replica: the polls whose page was unusable, and why the first one was.
    pub unusable: BTreeMap<String, (u64, String)>,
    /// Replicas that joined or left the set while polling (replicas from a Prometheus server
    /// only; a fixed set has none), oldest first.
    pub membership: Vec<MembershipChange>,
}

/// A replica joining or leaving the polled set.
#[derive(Debug, Clone, PartialEq)]
pub struct MembershipChange {
    /// When the poll that saw the change was sent.
    pub at: Instant,
    /// The replica.
    pub replica: String,
    /// True when it joined, false when it left.
    pub joined: bool,
}

impl History {
    /// Default bound on points per replica.
    pub const DEFAULT_MAX_POINTS: usize = 100_000;
    /// Default bound on gateway points.
    pub const DEFAULT_MAX_GATEWAY_POINTS: usize = 10_000;

    /// An empty history keeping at most `max_points` (at least 1) points per replica and
    /// `min(max_points, DEFAULT_MAX_GATEWAY_POINTS)` gateway points.
    pub fn new(max_points: usize, hold_max: Option<Duration>) -> History {
        let max_points = max_points.max(1);
        let max_gateway_points = max_points.min(Self::DEFAULT_MAX_GATEWAY_POINTS);
        let (replicas, gateway) = (Vec::new(), VecDeque::new());
        let (outages, nonfinite) = (BTreeMap::new(), BTreeMap::new());
        let membership = Vec::new();
        History {
            unusable: BTreeMap::new(),
            replicas,
            gateway,
            gateway_dropped: 0,
            max_points,
            max_gateway_points,
            hold_max,
            outages,
            nonfinite,
            membership,
        }
    }

    /// Records a failed poll of `replica` sent at `at`: opens an outage unless one is open.
    pub fn poll_failed(&mut self, replica: &str, at: Instant, error: &str) {
        let list = self.outages.entry(replica.to_string()).or_default();
        if list.last().is_none_or(|o| o.to.is_some()) {
            list.push(Outage { from: at, to: None, error: error.to_string() });
        }
    }

    /// Records a good poll of `replica` sent at `at`: closes its open outage, if any.
    pub fn poll_ok(&mut self, replica: &str, at: Instant) {
        if let Some(open) = self.outages.get_mut(replica).and_then(|l| l.last_mut()).filter(|o| o.to.is_none()) {
            open.to = Some(at.max(open.from));
        }
    }

    /// Counts one good poll of `replica` in which each of `metrics` was NaN or ±Inf.
    pub fn note_nonfinite(&mut self, replica: &str, metrics: &[String]) {
        if metrics.is_empty() {
            return;
        }
        let counts = self.nonfinite.entry(replica.to_string()).or_default();
        metrics.iter().for_each(|m| *counts.entry(m.clone()).or_default() += 1);
    }

    /// Counts one answered poll of `replica` whose page was unusable, for `why`.
    pub fn note_unusable(&mut self, replica: &str, why: &str) {
        self.unusable.entry(replica.to_string()).or_insert_with(|| (0, why.to_string())).0 += 1;
    }

    /// The history of one replica.
    pub fn replica(&self, name: &str) -> Option<&ReplicaHistory> {
        self.replicas.iter().find(|r| r.name == name)
    }

    /// Appends a point, dropping the oldest beyond the bound. A point older than the replica's
    /// last one is refused (`false`).
    pub fn push(&mut self, replica: &str, point: Point) -> bool {
        let idx = match self.replicas.iter().position(|r| r.name == replica) {
            Some(i) => i,
            None => {
                let name = replica.to_string();
                self.replicas.push(ReplicaHistory { name, points: VecDeque::new(), dropped: 0 });
                self.replicas.len() - 1
            }
        };
        let r = &mut self.replicas[idx];
        if r.points.back().is_some_and(|last| last.at > point.at) {
            return false;
        }
        if r.points.len() >= self.max_points {
            r.points.pop_front();
            r.dropped += 1;
        }
        r.points.push_back(point);
        true
    }

    /// Appends the gateway's series if they differ from the last kept ones (NaN equals NaN);
    /// `true` if kept.
    pub fn push_gateway(&mut self, at: Instant, series: &[CounterSeries]) -> bool {
        if self.gateway.back().is_some_and(|last| last.at > at || same_series(&last.series, series)) {
            return false;
        }
        if self.gateway.len() >= self.max_gateway_points {
            self.gateway.pop_front();
            self.gateway_dropped += 1;
        }
        self.gateway.push_back(GatewayPoint { at, series: series.to_vec() });
        true
    }
}

fn same_series(a: &[CounterSeries], b: &[CounterSeries]) -> bool {
    let same_value = |x: f64, y: f64| x == y || (x.is_nan() && y.is_nan());
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| x.name == y.name && x.labels == y.labels && same_value(x.value, y.value))
}
