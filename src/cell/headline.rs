//! The headline figures of an attempt, whatever its experiment, and the one-line summary the
//! log and the progress printer show.

use crate::report::status::AttemptStatus;
use crate::report::text::format::fmt_latency_ms;
use std::collections::BTreeMap;

/// Headline figures of a cell's latest attempt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Headline {
    /// Aggregate (decode) or output (burst, routing) tok/s.
    pub tps: f64,
    /// Average running requests (Prometheus).
    pub running_avg: Option<f64>,
    /// Requested streams.
    pub requested: u32,
    /// Capacity-limited or warmup timed out.
    pub capacity_limited: bool,
    /// Failed requests.
    pub errors: u64,
    /// TTFT p50, ms.
    pub ttft_p50_ms: Option<f64>,
    /// TTFT p95, ms.
    pub ttft_p95_ms: Option<f64>,
    /// ITL p50, ms.
    pub itl_p50_ms: Option<f64>,
    /// (good, requests) under the SLO (routing phases).
    pub good: Option<(u64, u64)>,
    /// Requests per replica (routing phases).
    pub replica_split: BTreeMap<String, u64>,
    /// Prefix-cache hit ratio (routing phases).
    pub hit_ratio: Option<f64>,
    /// How the attempt ended.
    pub status: AttemptStatus,
}

/// A one-line summary of an attempt for logs and progress output.
pub fn attempt_line(h: &Headline) -> String {
    let running = match (h.running_avg, h.requested) {
        (Some(r), y) => format!(" ({r:.0}/{y}){}", if h.capacity_limited { "*" } else { "" }),
        (None, _) => String::new(),
    };
    let good = h.good.map(|(g, n)| format!(" good {g}/{n}")).unwrap_or_default();
    format!(
        "{}: {:.1} tok/s{running}{good}  TTFT p50 {} ms  ITL p50 {} ms  errors {}",
        h.status,
        h.tps,
        fmt_latency_ms(h.ttft_p50_ms),
        fmt_latency_ms(h.itl_p50_ms),
        h.errors
    )
}
