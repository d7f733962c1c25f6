//! The observer's side of a sharded session (`run --observe`): the client series every shard
//! serves (`run --metrics-listen`, docs/metrics.md) read back from a Prometheus server, summed
//! over shards by cell with PromQL, and each shard's health.
//!
//! * [`query`]: the PromQL of one poll.
//! * [`answer`]: instant-vector answers of the HTTP API.
//! * [`view`]: one poll's per-cell figures and per-shard view.
//! * [`health`]: shards joining, going stale, coming back, finishing.
//! * [`clock`]: the observer's clock and the give-up countdown (`--observe-give-up`).

pub mod answer;
pub mod clock;
pub mod health;
pub mod query;
pub mod view;

#[cfg(test)]
mod tests;

use std::time::Duration;

use crate::load::backend::Backend;
use crate::metrics::promql::{check_selector, get_json};

pub use health::{Health, HealthEvent};
pub use query::{Ask, Latency, Queries};
pub use view::{CellFigures, View};

/// Most queries of one poll in flight at once: a poll's 18 queries go out in three waves at
/// most, so one observer takes fewer than half of a Prometheus server's default 20 concurrent
/// queries (`--query.max-concurrency`) and leaves room for dashboards.
pub const POLL_CONCURRENCY: usize = 8;

/// A Prometheus server and the matchers of one session's client series.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientSource {
    /// Base URL, no trailing slash.
    pub url: String,
    /// The queries, built from `--client-selector`.
    pub queries: Queries,
}

impl ClientSource {
    /// From `--prometheus URL` and `--client-selector SEL` (matchers, braces optional); the
    /// rate window is set later from the server's scrape interval ([`Self::with_window`]).
    pub fn new(url: &str, selector: &str) -> Result<ClientSource, String> {
        crate::net::check_url(url.trim()).map_err(|e| format!("--prometheus: {e}"))?;
        let sel = check_selector("--client-selector", selector)?;
        if sel.is_empty() {
            return Err(
                "--client-selector is empty: name the session's series, e.g. '{job=\"shards\",session=\"s-1\"}'".into(),
            );
        }
        let url = url.trim().trim_end_matches('/').to_string();
        Ok(ClientSource { url, queries: Queries::new(&sel, query::rate_window_s(15.0)) })
    }

    /// The same source with a rate window fit for `scrape_interval_s`.
    pub fn with_window(mut self, scrape_interval_s: f64) -> ClientSource {
        self.queries.window_s = query::rate_window_s(scrape_interval_s);
        self
    }

    /// One instant query's points.
    pub async fn instant(
        &self,
        backend: &dyn Backend,
        promql: &str,
        timeout: Duration,
    ) -> Result<Vec<answer::Point>, String> {
        let url = reqwest::Url::parse_with_params(&format!("{}/api/v1/query", self.url), [("query", promql)])
            .map_err(|e| format!("bad URL: {e}"))?;
        let body = get_json(backend, url.as_str(), timeout).await?;
        answer::parse_vector(&body).map_err(|e| format!("{promql}: {e}"))
    }

    /// Every query of one poll, [`POLL_CONCURRENCY`] at a time; the first failure fails the poll.
    pub async fn poll(&self, backend: &dyn Backend, timeout: Duration) -> Result<View, String> {
        self.poll_with(backend, timeout, POLL_CONCURRENCY).await
    }

    /// [`Self::poll`] with at most `concurrency` queries in flight (at least 1), answers kept
    /// in the order of [`Queries::all`]; `benches/observe_poll.sh` compares bounds.
    pub async fn poll_with(
        &self,
        backend: &dyn Backend,
        timeout: Duration,
        concurrency: usize,
    ) -> Result<View, String> {
        use futures_util::StreamExt;
        let asks = Queries::all();
        let texts: Vec<String> = asks.iter().map(|&a| self.queries.promql(a)).collect();
        // Made before streaming (not in a `map` adapter over the iterator) so the poll stays `Send`.
        let sent: Vec<_> = texts.iter().map(|q| self.instant(backend, q, timeout)).collect();
        let answers: Vec<_> = futures_util::stream::iter(sent).buffered(concurrency.max(1)).collect().await;
        let answers: Result<Vec<_>, String> =
            asks.into_iter().zip(answers).map(|(a, r)| r.map(|points| (a, points))).collect();
        Ok(View::from_answers(&answers?))
    }
}
