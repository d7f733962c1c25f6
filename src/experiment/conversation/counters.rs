//! The replicas' scrapes over an attempt, kept as they are published, and the prefix-cache
//! tokens each interval between two of them counted (summed over the replicas read in both;
//! an interval across a replica's restart counts nothing).

use super::turns::Interval;
use crate::cell::context::CellEnv;
use crate::cell::prefix_cache::prefix_between;
use crate::metrics::poller::MetricsSnapshot;
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Keeps every snapshot the poller publishes until stopped.
pub(crate) struct Trail {
    task: Option<JoinHandle<Vec<Arc<MetricsSnapshot>>>>,
    stop: CancellationToken,
}

impl Trail {
    /// Starts keeping `env`'s snapshots (none without a poller).
    pub(crate) fn start(env: &CellEnv) -> Self {
        let stop = CancellationToken::new();
        let task = env.poller.as_ref().map(|p| {
            let mut rx = p.subscribe();
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut kept = vec![rx.borrow_and_update().clone()];
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => break,
                        changed = rx.changed() => match changed {
                            Ok(()) => kept.push(rx.borrow_and_update().clone()),
                            Err(_) => break,
                        },
                    }
                }
                kept
            })
        });
        Self { task, stop }
    }

    /// Stops, adds `last` (a scrape taken after the last request ended) and returns the
    /// intervals between consecutive snapshots, in time order.
    pub(crate) async fn stop(self, last: Option<Arc<MetricsSnapshot>>) -> Vec<Interval> {
        self.stop.cancel();
        let mut kept = match self.task {
            Some(t) => t.await.unwrap_or_default(),
            None => Vec::new(),
        };
        kept.extend(last);
        kept.sort_by_key(|s| s.at);
        kept.dedup_by_key(|s| s.seq);
        intervals(&kept)
    }
}

/// The prefix-cache tokens counted between each two consecutive `snapshots`.
pub(crate) fn intervals(snapshots: &[Arc<MetricsSnapshot>]) -> Vec<Interval> {
    snapshots
        .windows(2)
        .filter_map(|w| {
            let (hits, queries) = prefix_between(&w[0], &w[1])?;
            Some(Interval { from: w[0].at, to: w[1].at, hits, queries })
        })
        .collect()
}
