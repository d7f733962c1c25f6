//! `run --prometheus URL --replica-selector SEL`: the replicas read from a Prometheus server.

use crate::config::MetricsEndpoint;
use crate::metrics::promql::PromServer;
use clap::Args;

/// Flags that take the replicas from a Prometheus server instead of their own pages.
#[derive(Debug, Clone, Default, Args)]
pub struct PrometheusArgs {
    /// Read the replicas from this Prometheus server (e.g. http://prometheus:9090) instead of
    /// scraping their pages: the replica set is every `pod` (else `instance`) with engine series
    /// matching --replica-selector, polled by PromQL queries every max(--poll-interval, scrape
    /// interval / 4).
    #[arg(long, value_name = "URL")]
    pub prometheus: Option<String>,
    /// Label matchers of the replicas' series on the --prometheus server, e.g. 'job="vllm"' or
    /// 'namespace="prod",job=~"vllm.*"' (default: every engine series the server has).
    #[arg(long, value_name = "MATCHERS", requires = "prometheus")]
    pub replica_selector: Option<String>,
}

impl PrometheusArgs {
    /// The server to read, if any; `--prometheus` excludes `--replica` and `--no-metrics`.
    pub fn server(&self, replicas: &[MetricsEndpoint], no_metrics: bool) -> Result<Option<PromServer>, String> {
        let Some(url) = &self.prometheus else { return Ok(None) };
        if !replicas.is_empty() {
            return Err(
                "--prometheus and --replica/--metrics-url are exclusive: the replicas come from one or the other"
                    .into(),
            );
        }
        if no_metrics {
            return Err("--prometheus and --no-metrics are exclusive".into());
        }
        PromServer::new(url, self.replica_selector.as_deref().unwrap_or("")).map(Some)
    }
}
