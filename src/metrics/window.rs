//! What the poller produces ([`MetricsSnapshot`], bounded [`History`]) and pure statistics over it.
//!
//! `poller` fills these types and re-exports them. In window statistics a [`Point`] holds from its
//! instant until the replica's next point, but never for more than [`History::hold_max`] (a replica
//! that stopped answering stops counting) nor past the window end. Time no point covers is left out
//! of averages rather than counted as zero.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use super::dialect::EngineDialect;
use super::engine::{CounterDeltas, EngineSample};
use super::gateway::{self, CounterDelta, CounterSeries, GatewayDialect};

#[cfg(test)]
#[path = "tests_window.rs"]
mod tests;

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
    /// Counter: generated tokens, tokens.
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
            generation_tokens: s.generation_tokens,
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
        History { replicas, gateway, gateway_dropped: 0, max_points, max_gateway_points, hold_max }
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

/// Statistics of one replica over a window. Averages are time-weighted over the time the
/// replica's points cover; peaks are over the points in effect during the window.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaWindow {
    /// Replica name.
    pub name: String,
    /// Time-weighted mean of running requests.
    pub running_avg: Option<f64>,
    /// Highest running requests.
    pub running_peak: Option<f64>,
    /// Time-weighted mean of waiting requests.
    pub waiting_avg: Option<f64>,
    /// Highest waiting requests.
    pub waiting_peak: Option<f64>,
    /// Time-weighted mean KV-cache usage, fraction 0..1.
    pub kv_usage_avg: Option<f64>,
    /// Highest KV-cache usage, fraction 0..1.
    pub kv_usage_peak: Option<f64>,
    /// Points taken inside `[from, to)` (the point carried in from before `from` not counted).
    pub points: usize,
}

/// Statistics of every replica over a window.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowStats {
    /// Per replica, in history order.
    pub replicas: Vec<ReplicaWindow>,
    /// Time-weighted mean of the cluster-wide sum of running requests (see [`window_stats`]).
    pub running_avg_total: Option<f64>,
    /// Time-weighted mean of the cluster-wide sum of waiting requests.
    pub waiting_avg_total: Option<f64>,
}

/// A stretch of time `[start, end)` (seconds since the window start) holding `value`.
#[derive(Debug, Clone, Copy)]
struct Seg {
    start: f64,
    end: f64,
    value: f64,
}

type Field = fn(&Point) -> Option<f64>;

/// Statistics over `[from, to)`.
///
/// Totals interpolate step-wise rather than aligning poll rounds: each replica's value is a step
/// function (a point holds until the replica's next point, at most [`History::hold_max`]); the
/// total at an instant is the sum over the replicas whose value is defined then, and its average
/// runs over the time at least one replica is defined. This matches
/// [`MetricsSnapshot::running_total`], which sums the non-stale replicas.
pub fn window_stats(history: &History, from: Instant, to: Instant) -> WindowStats {
    let running: Field = |p| p.running;
    let waiting: Field = |p| p.waiting;
    let kv: Field = |p| p.kv_usage;
    let mut running_all = Vec::new();
    let mut waiting_all = Vec::new();
    let mut replicas = Vec::new();
    for r in &history.replicas {
        let segs = |f: Field| segments(&r.points, f, from, to, history.hold_max);
        let (run, wait, kv) = (segs(running), segs(waiting), segs(kv));
        let first = r.points.partition_point(|p| p.at < from);
        let last = r.points.partition_point(|p| p.at < to);
        replicas.push(ReplicaWindow {
            name: r.name.clone(),
            running_avg: average(&run),
            running_peak: peak(&run),
            waiting_avg: average(&wait),
            waiting_peak: peak(&wait),
            kv_usage_avg: average(&kv),
            kv_usage_peak: peak(&kv),
            points: last.saturating_sub(first),
        });
        running_all.push(run);
        waiting_all.push(wait);
    }
    WindowStats {
        replicas,
        running_avg_total: total_average(&running_all),
        waiting_avg_total: total_average(&waiting_all),
    }
}

/// The step segments of `field` clipped to `[from, to)`, including the point in effect at `from`.
fn segments(points: &VecDeque<Point>, field: Field, from: Instant, to: Instant, hold: Option<Duration>) -> Vec<Seg> {
    let mut out = Vec::new();
    if to <= from {
        return out;
    }
    let secs = |t: Instant| t.saturating_duration_since(from).as_secs_f64();
    let start = points.partition_point(|p| p.at <= from).saturating_sub(1);
    for (i, p) in points.iter().enumerate().skip(start) {
        if p.at >= to {
            break;
        }
        let mut end = points.get(i + 1).map_or(to, |next| next.at.min(to));
        if let Some(hold) = hold {
            end = end.min(p.at + hold);
        }
        let seg = Seg { start: secs(p.at.max(from)), end: secs(end), value: f64::NAN };
        match field(p) {
            Some(value) if !value.is_nan() && seg.end > seg.start => out.push(Seg { value, ..seg }),
            _ => {}
        }
    }
    out
}

fn average(segs: &[Seg]) -> Option<f64> {
    let time: f64 = segs.iter().map(|s| s.end - s.start).sum();
    (time > 0.0).then(|| segs.iter().map(|s| s.value * (s.end - s.start)).sum::<f64>() / time)
}

fn peak(segs: &[Seg]) -> Option<f64> {
    segs.iter().map(|s| s.value).reduce(f64::max)
}

/// Time-weighted mean of the sum of several step functions, over the time at least one is defined.
fn total_average(per_replica: &[Vec<Seg>]) -> Option<f64> {
    // (time, value change, coverage change)
    let mut events: Vec<(f64, f64, i64)> = Vec::new();
    for s in per_replica.iter().flatten() {
        events.push((s.start, s.value, 1));
        events.push((s.end, -s.value, -1));
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut sum, mut cover, mut prev) = (0.0, 0i64, 0.0);
    let (mut area, mut time) = (0.0, 0.0);
    for (t, dv, dc) in events {
        if cover > 0 {
            area += sum * (t - prev);
            time += t - prev;
        }
        cover += dc;
        sum = if cover > 0 { sum + dv } else { 0.0 };
        prev = t;
    }
    (time > 0.0).then(|| area / time)
}

/// How much a counter grew over a window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Increase {
    /// Total increase, in the counter's unit.
    pub delta: f64,
    /// Times the counter went down (replica restarts); each adds the later value.
    pub resets: u32,
}

/// Increase of one replica's counter between its points in `[from, to]` (both ends included),
/// summed step by step so a restart mid-window loses only the increments before the restart
/// and after the last point preceding it. `None` with fewer than two readings.
/// `field` picks the counter, e.g. `|p| p.generation_tokens`.
pub fn counter_delta(
    history: &History,
    replica: &str,
    field: impl Fn(&Point) -> Option<f64>,
    from: Instant,
    to: Instant,
) -> Option<Increase> {
    let points = &history.replica(replica)?.points;
    let first = points.partition_point(|p| p.at < from);
    let values = points.iter().skip(first).take_while(|p| p.at <= to).filter_map(field);
    let values = values.filter(|v| !v.is_nan());
    let (mut prev, mut readings, mut out) = (None::<f64>, 0usize, Increase { delta: 0.0, resets: 0 });
    for v in values {
        readings += 1;
        if let Some(p) = prev {
            if v < p {
                out.resets += 1;
                out.delta += v;
            } else {
                out.delta += v - p;
            }
        }
        prev = Some(v);
    }
    (readings >= 2).then_some(out)
}

/// Counter changes of every replica that has a sample in both snapshots, matched by name, in
/// `b`'s order ([`EngineSample::delta`]: a counter that went down counts the later value).
pub fn deltas_between(a: &MetricsSnapshot, b: &MetricsSnapshot) -> Vec<(String, CounterDeltas)> {
    let mut out = Vec::new();
    for later in &b.replicas {
        let earlier = a.replicas.iter().find(|r| r.name == later.name);
        if let (Some(l), Some(e)) = (&later.sample, earlier.and_then(|r| r.sample.as_ref())) {
            out.push((later.name.clone(), l.delta(e)));
        }
    }
    out
}

/// Changed gateway counter series from `a` to `b` ([`gateway::deltas`]); empty without a gateway.
pub fn gateway_deltas(a: &MetricsSnapshot, b: &MetricsSnapshot) -> Vec<CounterDelta> {
    match (&a.gateway, &b.gateway) {
        (Some(a), Some(b)) => gateway::deltas(&a.series, &b.series),
        _ => Vec::new(),
    }
}
