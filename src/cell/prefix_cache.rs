//! The server's prefix cache over one attempt's own requests, whatever the experiment: the
//! replicas' hit and lookup counters (`metrics::engine`) between a round read before the
//! attempt's first request and one after its last, judged against the most its workload
//! shares (`report::prefix_cache`, docs/reports.md §3).

use super::context::CellEnv;
use crate::metrics::EngineDialect;
use crate::metrics::poller::MetricsSnapshot;
use crate::report::prefix_cache::PrefixCacheCheck;
use std::sync::Arc;
use std::time::Duration;

/// Rounds read after the last request while the lookups still move: llama.cpp counts a
/// request when it ends, and a stream the client cut ends when the server notices
/// (docs/protocol.md §9).
const SETTLE_READS: u32 = 5;
/// Wait between those rounds.
const SETTLE_WAIT: Duration = Duration::from_millis(100);

/// A round to count an attempt's prefix-cache lookups from, read afresh, when a replica may
/// count them: preflight read its engine, or the latest poll shows the counters. None (and no
/// scrape spent past the poller's backoff) for pages that were never usable.
pub(crate) async fn start_round(env: &CellEnv) -> Option<Arc<MetricsSnapshot>> {
    let latest = env.metrics()?;
    let polled = latest.replicas.iter().any(|r| r.sample.as_ref().is_some_and(|s| s.prefix_queries_tokens.is_some()));
    let known = env.facts.replicas.iter().any(|r| r.dialect != EngineDialect::Unknown);
    match polled || known {
        true => env.metrics_now().await,
        false => None,
    }
}

/// Prefix-cache hits and lookups between two rounds, tokens, summed over the replicas that
/// count both; None when none does, or one restarted.
pub(crate) fn prefix_between(start: &MetricsSnapshot, end: &MetricsSnapshot) -> Option<(f64, f64)> {
    let mut total: Option<(f64, f64)> = None;
    for d in end.deltas_since(start) {
        if d.reset {
            return None;
        }
        if let (Some(h), Some(q)) = (d.prefix_hits_tokens, d.prefix_queries_tokens) {
            let (th, tq) = total.unwrap_or((0.0, 0.0));
            total = Some((th + h, tq + q));
        }
    }
    total
}

/// The attempt's check from the `start` round and a fresh one, when the replicas count
/// prefix-cache lookups; `expected` is the most its workload shares.
pub(crate) async fn prefix_cache(
    env: &CellEnv,
    start: Option<&MetricsSnapshot>,
    expected: Option<f64>,
) -> Option<PrefixCacheCheck> {
    let (hits, queries) = prefix_between(start?, &*env.metrics_now().await?)?;
    PrefixCacheCheck::judge(hits, queries, expected)
}

/// [`prefix_cache`] for an attempt whose last requests were cut by the client: rounds are
/// read again while the lookups still grow, so requests a server counts when it notices the
/// cut are in.
pub(crate) async fn prefix_cache_settled(
    env: &CellEnv,
    start: Option<&MetricsSnapshot>,
    expected: Option<f64>,
) -> Option<PrefixCacheCheck> {
    let start = start?;
    let mut last = prefix_between(start, &*env.metrics_now().await?)?;
    for _ in 1..SETTLE_READS {
        tokio::time::sleep(SETTLE_WAIT).await;
        let Some(now) = env.metrics_now().await.and_then(|end| prefix_between(start, &end)) else { break };
        let grew = now.1 > last.1;
        last = now;
        if !grew {
            break;
        }
    }
    PrefixCacheCheck::judge(last.0, last.1, expected)
}
