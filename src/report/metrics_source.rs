//! Where a session's replica figures came from when read through a Prometheus server
//! (`metrics_source` of the report, docs/reports.md §3).

use serde::{Deserialize, Serialize};

/// The Prometheus server the replicas' metrics were read from (docs/reports.md §3).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MetricsSource {
    /// `prometheus`.
    pub kind: String,
    /// The server, credentials removed.
    pub url: String,
    /// Label matchers of the replicas' series (empty: every engine series).
    pub selector: String,
    /// The server's scrape interval of the replicas, seconds: no replica figure is finer than
    /// this; `None` when it could not be read.
    pub scrape_interval_s: Option<f64>,
    /// Where the interval came from: `samples` (spacing of the scraped samples) or `config`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scrape_interval_from: Option<String>,
    /// Replicas that joined or left the set during the session, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replica_changes: Vec<ReplicaChange>,
}

/// A replica joining or leaving the set read from a Prometheus server.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReplicaChange {
    /// Seconds since the session start.
    pub t_s: f64,
    /// The replica.
    pub replica: String,
    /// `joined` or `left`.
    pub change: String,
}
