//! `run --observe --prometheus URL --client-selector SEL`: watch a sharded session through a
//! Prometheus server instead of sending load (src/cmd/observe/).

use crate::metrics::observe::ClientSource;
use crate::units::parse_duration;
use clap::Args;
use std::time::Duration;

/// Flags of the observer.
#[derive(Debug, Clone, Default, Args)]
pub struct ObserveFlags {
    /// Send no load: watch a sharded session through --prometheus, its per-cell figures summed
    /// over shards (PromQL) and each shard's health, from the client series its shards serve
    /// with --metrics-listen (selected by --client-selector). Ends when every shard reported
    /// session_finished or has been stale for 60 s, at --observe-timeout, or on a signal
    #[arg(
        long,
        conflicts_with_all = [
            "base_url", "host", "port", "plan", "ctx", "conc", "window", "metrics_listen", "shard", "shards",
            "session_id", "start_at", "resume", "server_cmd", "num_runs", "source_addrs", "run_burst",
            "stop_at_knee", "slo_search", "num_conversations", "model", "max_tokens", "seed", "no_metrics",
        ]
    )]
    pub observe: bool,
    /// With --observe: label matchers of the session's client series on the --prometheus
    /// server, e.g. '{job="shards",session="s-1"}' (braces optional)
    #[arg(long, value_name = "MATCHERS", requires = "observe")]
    pub client_selector: Option<String>,
    /// With --observe: stop observing after this long even if shards still run (default: no bound)
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "observe")]
    pub observe_timeout: Option<Duration>,
}

impl ObserveFlags {
    /// The client series' source when `--observe` is given; a one-line error when its
    /// companions are missing or malformed.
    pub fn source(&self, prometheus: Option<&str>) -> Result<Option<ClientSource>, String> {
        if !self.observe {
            return Ok(None);
        }
        let (Some(url), Some(sel)) = (prometheus, self.client_selector.as_deref()) else {
            return Err(
                "--observe needs --prometheus URL (the server scraping the shards) and --client-selector MATCHERS (their series)"
                    .into(),
            );
        };
        ClientSource::new(url, sel).map(Some)
    }
}
