//! The server's own count of a serve cell's output tokens: the engines' generated-token
//! counters read before the first request and after the last one ended, against the tokens
//! the client counted. Every request of a cell ends inside it, so the request-end counters of
//! SGLang and llama.cpp serve here as well as vLLM's (docs/reports.md §5). The same two
//! rounds give the attempt's prefix-cache hits, judged warm or not (`cell::prefix_cache`,
//! docs/reports.md §3).

use crate::cell::context::CellEnv;
use crate::load::sample::RequestSample;
use crate::metrics::poller::MetricsSnapshot;
pub(crate) use crate::report::serve::ServerTokenCheck;
use std::sync::Arc;
use std::time::Duration;

/// Re-reads after the last request while the server's count is still short of the client's:
/// an engine may count a request a moment after its last event.
const SETTLE_READS: u32 = 5;
/// Wait between those re-reads.
const SETTLE_WAIT: Duration = Duration::from_millis(100);

/// Generated tokens between two rounds, summed over the replicas read in both; None when no
/// replica was, or one restarted (its counter went down).
pub(crate) fn generated_between(start: &MetricsSnapshot, end: &MetricsSnapshot) -> Option<f64> {
    let mut total: Option<f64> = None;
    for d in end.deltas_since(start) {
        if d.reset {
            return None;
        }
        if let Some(g) = d.generation_tokens {
            total = Some(total.unwrap_or(0.0) + g);
        }
    }
    total
}

/// Reads the end round (re-reading a few times while the server is short) and compares.
pub(crate) async fn check(
    env: &CellEnv,
    start: Option<Arc<MetricsSnapshot>>,
    samples: &[RequestSample],
) -> Option<ServerTokenCheck> {
    let counter = env.facts.dialect().generated_tokens_counter()?;
    let start = start?;
    let client: u64 = samples.iter().map(|s| s.output_tokens).sum();
    let mut server = None;
    for read in 0..SETTLE_READS {
        if read > 0 {
            tokio::time::sleep(SETTLE_WAIT).await;
        }
        server = generated_between(&start, &*env.metrics_now().await?);
        if server.is_some_and(|s| s >= client as f64) {
            break;
        }
    }
    let server = server?;
    Some(ServerTokenCheck {
        counter: counter.to_string(),
        server_output_tokens: server,
        client_output_tokens: client,
        equal: (server - client as f64).abs() < 0.5,
    })
}
