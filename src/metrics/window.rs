//! Pure statistics over what the poller recorded: per-replica time-weighted averages and peaks
//! over a window, counter increases across restarts, and counter changes between two snapshots.
//!
//! The types are in `snapshot` (re-exported here). In window statistics a [`Point`] holds from its
//! instant until the replica's next point, but never for more than [`History::hold_max`] (a replica
//! that stopped answering stops counting) nor past the window end. Time no point covers is left out
//! of averages rather than counted as zero.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

pub use super::snapshot::{GatewayPoint, GatewayView, History, MetricsSnapshot, Point, ReplicaHistory, ReplicaView};

#[cfg(test)]
#[path = "tests_window.rs"]
mod tests;

/// Statistics of one replica over a window. Averages are time-weighted over the time the
/// replica's points cover; peaks are over the points in effect during the window.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ReplicaWindow {
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
pub(crate) struct WindowStats {
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
pub(crate) fn window_stats(history: &History, from: Instant, to: Instant) -> WindowStats {
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
