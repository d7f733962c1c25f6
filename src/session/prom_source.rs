//! Sessions whose replicas come from a Prometheus server (`run --prometheus`): finding them
//! before any load, starting the reader, the report's `metrics_source`, and the warnings a
//! session starts with about the server's scrape interval (a cell's own: `cell::scrapes`).

use crate::cell::context::CellEnv;
use crate::cell::facts::ReplicaFacts;
use crate::cell::scrapes::MIN_SCRAPES;
use crate::config::RunConfig;
use crate::load::backend::{Backend, SharedBackend};
use crate::metrics::engine::EngineSample;
use crate::metrics::poller::{MetricsTarget, PollerHandle};
use crate::metrics::prom_poller::{self, OnChange, PromPollerConfig};
use crate::metrics::promql::{ENGINE_METRICS, PromServer, RUNNING_METRICS, group, median_spacing};
use crate::net::redact_url;
use crate::report::json::{MetricsSource, ReplicaChange};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Limit on each preflight query.
const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(10);
/// How far back preflight looks for samples to measure the scrape interval, seconds.
const SPACING_RANGE_S: u64 = 120;

/// What preflight found on the server: the replicas and how the report describes the source.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// The replicas with series now, by name.
    pub replicas: Vec<ReplicaFacts>,
    /// The report's `metrics_source` (no replica changes yet).
    pub source: MetricsSource,
}

/// Finds the replicas the selector matches and the scrape interval. A server that does not
/// answer, refuses the query or has no matching series is an error here, before any load.
pub(crate) async fn discover(backend: &dyn Backend, server: &PromServer) -> anyhow::Result<Found> {
    let url = redact_url(&server.url);
    let fail = |e: String| anyhow::anyhow!("--prometheus {url}: {e}");
    let running =
        server.range_query(backend, RUNNING_METRICS, SPACING_RANGE_S, PREFLIGHT_TIMEOUT).await.map_err(fail)?;
    let (mut interval, mut from) = (median_spacing(&running), "samples");
    if interval.is_none() {
        (interval, from) = (server.configured_interval(backend, PREFLIGHT_TIMEOUT).await, "config");
    }
    let interval = interval.map(|s| (s * 1000.0).round() / 1000.0);
    let lookback = PromPollerConfig::new(server.clone(), Vec::new(), interval, Duration::ZERO).lookback_s;
    let all = server.range_query(backend, ENGINE_METRICS, lookback, PREFLIGHT_TIMEOUT).await.map_err(fail)?;
    let reads = group(&all);
    if reads.is_empty() {
        let sel = &server.selector;
        anyhow::bail!(
            "--prometheus {url}: no engine series match {{{sel}}} in the last {lookback} s (looked for {}); \
             check --replica-selector and that the server scrapes the engines",
            RUNNING_METRICS.join(", ")
        );
    }
    let replicas = reads
        .iter()
        .map(|r| {
            let s = EngineSample::detect(&r.scrape);
            ReplicaFacts {
                name: r.name.clone(),
                url: prom_poller::replica_url(server, &r.instance),
                dialect: s.dialect,
                kv_capacity: s.kv_capacity_tokens.filter(|c| c.is_finite() && *c > 0.0).map(|c| c as u64),
                error: None,
            }
        })
        .collect();
    let source = MetricsSource {
        kind: "prometheus".into(),
        url,
        selector: server.selector.clone(),
        scrape_interval_s: interval,
        scrape_interval_from: interval.map(|_| from.to_string()),
        replica_changes: Vec::new(),
    };
    Ok(Found { replicas, source })
}

/// The warnings a session starts with: an unknown scrape interval, or a window spanning fewer
/// than [`MIN_SCRAPES`] scrapes.
pub(crate) fn start_warnings(cfg: &RunConfig, source: &MetricsSource) -> Vec<String> {
    let Some(scrape) = source.scrape_interval_s else {
        let assumed = prom_poller::DEFAULT_SCRAPE_INTERVAL_S;
        return vec![format!(
            "the Prometheus server's scrape interval could not be read; {assumed} s assumed (stale after 3 scrapes)"
        )];
    };
    let window = cfg.window.as_secs_f64();
    if window >= MIN_SCRAPES * scrape {
        return Vec::new();
    }
    vec![format!(
        "--window {window} s spans fewer than {MIN_SCRAPES} scrapes of the Prometheus server (every {scrape} s): \
         replica figures of each cell rest on {} scrape(s) at most; a --window of {} s or more gives them {MIN_SCRAPES}",
        (window / scrape).floor().max(0.0),
        (MIN_SCRAPES * scrape).ceil()
    )]
}

/// Starts the reader over the replicas preflight found; `on_change` hears joins and leaves.
pub(crate) fn spawn(
    cfg: &RunConfig,
    server: &PromServer,
    backend: &SharedBackend,
    found: &[ReplicaFacts],
    source: &MetricsSource,
    on_change: OnChange,
) -> PollerHandle {
    let initial = found.iter().map(|r| MetricsTarget::new(&r.name, &r.url)).collect();
    let pc = PromPollerConfig::new(server.clone(), initial, source.scrape_interval_s, cfg.poll_interval);
    prom_poller::spawn(backend.clone(), pc, Some(on_change), CancellationToken::new())
}

/// The report's `metrics_source`: preflight's, with the replica changes seen so far.
pub(crate) fn metrics_source(env: &CellEnv) -> Option<MetricsSource> {
    let mut src = env.facts.metrics_source.clone()?;
    if let Some(p) = &env.poller {
        let change = |joined: bool| if joined { "joined" } else { "left" }.to_string();
        let changes = p.membership().into_iter();
        let changes =
            changes.map(|c| ReplicaChange { t_s: env.since_start(c.at), replica: c.replica, change: change(c.joined) });
        src.replica_changes = changes.collect();
    }
    Some(src)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(scrape: Option<f64>) -> MetricsSource {
        let (kind, url, selector) = ("prometheus".into(), "http://p".into(), String::new());
        MetricsSource {
            kind,
            url,
            selector,
            scrape_interval_s: scrape,
            scrape_interval_from: None,
            replica_changes: vec![],
        }
    }

    #[test]
    fn a_window_under_three_scrapes_is_warned_about() {
        let cfg = RunConfig { window: Duration::from_secs(30), ..RunConfig::defaults("http://h") };
        assert!(start_warnings(&cfg, &source(Some(10.0))).is_empty());
        let w = start_warnings(&cfg, &source(Some(15.0)));
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("rest on 2 scrape(s) at most") && w[0].contains("45 s or more"), "{}", w[0]);
        assert!(start_warnings(&cfg, &source(None))[0].contains("15 s assumed"));
    }
}
