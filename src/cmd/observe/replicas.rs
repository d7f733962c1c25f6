//! The replicas' own metrics for the observer, read once here rather than by every shard:
//! their pages (`--metrics-url`, the session's poller) or the Prometheus server
//! (`--prometheus` with `--replica-selector`, the session's PromQL reader).

use crate::cli::run::RunArgs;
use crate::load::backend::HttpBackend;
use crate::metrics::poller::{MetricsSnapshot, MetricsTarget, Poller, PollerConfig, PollerHandle};
use crate::metrics::prom_poller::{self, PromPollerConfig};
use crate::metrics::promql::PromServer;
use tokio_util::sync::CancellationToken;

/// Starts reading the replicas when a flag names them; `None` when none does.
pub(crate) fn start(args: &RunArgs, scrape_s: f64) -> Result<Option<PollerHandle>, String> {
    let client = crate::net::client_builder().build().map_err(|e| format!("HTTP client: {e}"))?;
    let backend = HttpBackend::shared(client);
    if !args.metrics_url.is_empty() {
        let targets = args.metrics_url.iter().map(|m| MetricsTarget::new(&m.name, &m.url)).collect();
        return Ok(Some(Poller::spawn(backend, PollerConfig::new(targets, None), CancellationToken::new())));
    }
    let (Some(url), Some(sel)) = (&args.prom.prometheus, &args.prom.replica_selector) else { return Ok(None) };
    let cfg = PromPollerConfig::new(PromServer::new(url, sel)?, Vec::new(), Some(scrape_s), args.poll_interval);
    Ok(Some(prom_poller::spawn(backend, cfg, None, CancellationToken::new())))
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{:.0}%", v * 100.0))
}

fn num(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v}"))
}

/// `replicas: sim-a running 4, waiting 0, KV 12%; sim-b ~stale`, or `None` before any replica.
pub(crate) fn line(snap: &MetricsSnapshot) -> Option<String> {
    let one = |r: &crate::metrics::snapshot::ReplicaView| match (&r.sample, r.stale) {
        (Some(s), false) => {
            format!("{} running {}, waiting {}, KV {}", r.name, num(s.running), num(s.waiting), pct(s.kv_usage))
        }
        _ => format!("{} ~stale", r.name),
    };
    let parts: Vec<String> = snap.replicas.iter().map(one).collect();
    (!parts.is_empty()).then(|| format!("replicas: {}", parts.join("; ")))
}
