//! The observer's JSON report (`run --observe --out FILE`): what it saw, per cell the series of
//! summed tok/s over time, and every change of a shard's health. Written atomically
//! (src/report/atomic.rs) when the observer ends.

use std::collections::BTreeMap;
use std::path::Path;

use crate::metrics::observe::health::ShardState;
use crate::metrics::observe::{HealthEvent, View};

/// One poll's figures of one cell.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct CellPoint {
    /// The server's evaluation time, seconds since the epoch.
    pub at_unix: f64,
    /// Output tokens per second summed over shards (rate over `rate_window_s`).
    pub tok_s: Option<f64>,
    /// Streams running, summed over shards.
    pub running: f64,
    /// Shards running an attempt of the cell.
    pub active_shards: f64,
    /// Requests sent so far, summed.
    pub started: f64,
    /// Requests completed so far, summed.
    pub completed: f64,
    /// TTFT p50 / p99 over the rate window from the summed buckets, seconds.
    pub ttft_p50_s: Option<f64>,
    /// See `ttft_p50_s`.
    pub ttft_p99_s: Option<f64>,
}

/// A cell's counts summed over shards, as last seen (a cell whose series vanish keeps them).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub(crate) struct CellTotals {
    /// Output tokens received.
    pub output_tokens: f64,
    /// Requests sent.
    pub started: f64,
    /// Requests the server finished.
    pub completed: f64,
    /// Failed requests by kind.
    pub errors: BTreeMap<String, f64>,
}

/// A shard's health change and when the observer saw it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct EventAt {
    /// Observer time, seconds since the epoch.
    pub at_unix: f64,
    /// What changed.
    #[serde(flatten)]
    pub event: HealthEvent,
}

/// Version of the observer's file format, bumped on any incompatible change.
pub(crate) const OBSERVER_SCHEMA_VERSION: u32 = 1;

/// The whole report.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct ObserverReport {
    /// File format version ([`OBSERVER_SCHEMA_VERSION`]; assets/observer-report.schema.json).
    pub schema_version: u32,
    /// Always `observer`: tells this file from a session report.
    pub kind: &'static str,
    /// The tool's version.
    pub version: String,
    /// The Prometheus server (credentials redacted).
    pub prometheus: String,
    /// The client series' matchers.
    pub client_selector: String,
    /// The server's scrape interval, seconds (read from its configuration, else assumed 15).
    pub scrape_interval_s: f64,
    /// Range of the `rate(...)` and quantile queries, seconds.
    pub rate_window_s: u64,
    /// `--observe-give-up`: a shard stale this long no longer held the observer open,
    /// seconds; `null` with 0 (a stale shard held it until the timeout or a signal).
    pub give_up_s: Option<f64>,
    /// First and last poll, seconds since the epoch.
    pub started_unix: f64,
    /// See `started_unix`.
    pub ended_unix: f64,
    /// Why it ended: `all_shards_done`, `timeout`, `quit` (the monitor's `q`), `input_closed`,
    /// `poll_task_ended`, or a signal name (`SIGINT`, `SIGTERM`, `SIGHUP`).
    pub ended_by: String,
    /// Per cell label, one point per poll while the cell was active.
    pub cells: BTreeMap<String, Vec<CellPoint>>,
    /// Per cell label, the counts summed over shards at the last poll that showed the cell.
    pub totals: BTreeMap<String, CellTotals>,
    /// Every shard's last state.
    pub shards: BTreeMap<String, ShardState>,
    /// Shards' health changes, in order.
    pub events: Vec<EventAt>,
    /// Polls that failed, with the error (at most the first 100).
    pub poll_errors: Vec<String>,
}

impl ObserverReport {
    /// Adds the points of every active cell of `view`.
    pub(crate) fn take(&mut self, view: &View) {
        use crate::metrics::observe::Latency::Ttft;
        for (cell, c) in &view.cells {
            let errors = c.errors.clone();
            self.totals.insert(
                cell.clone(),
                CellTotals { output_tokens: c.tokens, started: c.started, completed: c.completed, errors },
            );
        }
        for (cell, c) in view.cells.iter().filter(|(_, c)| c.is_active()) {
            self.cells.entry(cell.clone()).or_default().push(CellPoint {
                at_unix: view.at_unix,
                tok_s: c.tok_s,
                running: c.running,
                active_shards: c.active_shards,
                started: c.started,
                completed: c.completed,
                ttft_p50_s: c.quantile(Ttft, 0.5),
                ttft_p99_s: c.quantile(Ttft, 0.99),
            });
        }
    }

    /// Writes the report to `path` atomically.
    pub(crate) fn write(&self, path: &Path) -> std::io::Result<()> {
        let text = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        crate::report::atomic::write_atomic(path, &text)
    }
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod schema_tests;
