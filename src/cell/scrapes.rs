//! Cells whose replicas are read from a Prometheus server (`run --prometheus`): how many
//! scrapes a window's replica figures rest on, and the span its counter deltas cover.

use super::context::CellEnv;
use crate::metrics::poller::MetricsSnapshot;
use crate::metrics::window::WindowStats;

/// Fewest scrapes a window should span for its replica figures to mean something.
pub(crate) const MIN_SCRAPES: f64 = 3.0;

/// Warns (report and log) when a replica's figures in the window of `cell` come from fewer
/// than [`MIN_SCRAPES`] scrapes; only for replicas read from a Prometheus server.
pub(crate) fn note_few_scrapes(env: &CellEnv, cell: &str, ws: &WindowStats) {
    let Some(src) = &env.facts.metrics_source else { return };
    let Some(fewest) = ws.replicas.iter().min_by_key(|r| r.points) else { return };
    if (fewest.points as f64) < MIN_SCRAPES {
        let every = src.scrape_interval_s.map_or_else(|| "unknown".to_string(), |s| format!("{s} s"));
        env.warn(format!(
            "{cell}: its window saw {} Prometheus scrape(s) of replica {} (scrape interval {every}); \
             its replica figures (running, KV usage, counter deltas) rest on too few scrapes",
            fewest.points, fewest.name
        ));
    }
}

/// For replicas read from a Prometheus server, the time between the scrapes behind two
/// snapshots, seconds, averaged over the replicas read in both: the span their counter deltas
/// cover (a window's bounds fall between scrapes). `None` for direct scraping, whose readings
/// are taken at the bounds, or when no replica was scraped in between.
pub(crate) fn counter_span(env: &CellEnv, start: &MetricsSnapshot, end: &MetricsSnapshot) -> Option<f64> {
    env.facts.metrics_source.as_ref()?;
    let spans = end.replicas.iter().filter_map(|b| {
        let a = start.replica(&b.name)?;
        Some(b.last_ok?.saturating_duration_since(a.last_ok?).as_secs_f64())
    });
    let (sum, n) = spans.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0 && sum > 0.0).then(|| sum / n as f64)
}
