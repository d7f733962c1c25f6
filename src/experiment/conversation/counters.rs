//! The prefix-cache tokens the replicas counted between consecutive polls over an attempt,
//! read from the poller's own history (`metrics::snapshot::History`, each point stamped when
//! its scrape was sent). A replica's interval across a restart (a counter that went down)
//! counts nothing.

use super::turns::Interval;
use crate::metrics::snapshot::{History, Point};
use tokio::time::Instant;

/// Every replica's intervals from its last poll at or before `from` to its first at or after
/// `to`, each with the hits and lookups counted in it.
pub(crate) fn intervals(history: &History, from: Instant, to: Instant) -> Vec<Interval> {
    let mut out = Vec::new();
    for r in &history.replicas {
        let first = r.points.iter().rposition(|p| p.at <= from).unwrap_or(0);
        let last = r.points.iter().position(|p| p.at >= to).unwrap_or(r.points.len().saturating_sub(1));
        let kept: Vec<&Point> = r.points.iter().skip(first).take(last.saturating_sub(first) + 1).collect();
        for w in kept.windows(2) {
            let d = |f: fn(&Point) -> Option<f64>| Some(f(w[1])? - f(w[0])?).filter(|d| *d >= 0.0);
            if let (Some(hits), Some(queries)) = (d(|p| p.prefix_hits_tokens), d(|p| p.prefix_queries_tokens)) {
                out.push(Interval { from: w[0].at, to: w[1].at, hits, queries });
            }
        }
    }
    out
}
