//! The session as the monitor and the progress printer see it: an immutable snapshot of every
//! cell with its headline figures.

use super::state::{Attempt, CellSpec, CellStatus};
use crate::cell::control::CellId;
use crate::report::phase::RoutingPhase;
use crate::report::status::AttemptStatus;
use std::collections::BTreeMap;
use tokio::time::Instant;

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

/// One cell in the snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct CellSummary {
    /// Label.
    pub label: String,
    /// What it measures.
    pub spec: CellSpec,
    /// Status.
    pub status: CellStatus,
    /// Attempts so far.
    pub attempts: usize,
    /// Figures of the latest attempt.
    pub headline: Option<Headline>,
    /// The latest attempt itself (distributions, per-replica data), shared, not copied.
    pub latest: Option<std::sync::Arc<Attempt>>,
}

/// The whole session at one moment.
#[derive(Debug, Clone)]
pub struct SessionSnapshot {
    /// Base URL of the load, credentials removed.
    pub target: String,
    /// Model.
    pub model: String,
    /// Engine dialect.
    pub dialect: String,
    /// Plans (`decode`, `routing`).
    pub plan: String,
    /// Session start.
    pub started: Instant,
    /// Cells in plan order.
    pub cells: Vec<CellSummary>,
    /// Running cell.
    pub current: Option<CellId>,
    /// Load paused.
    pub paused: bool,
    /// Session over.
    pub finished: bool,
    /// Report file.
    pub report_path: String,
    /// Actions so far.
    pub actions: usize,
}

/// The headline of an attempt.
pub fn headline(a: &Attempt) -> Headline {
    match a {
        Attempt::Decode(d) => Headline {
            tps: d.aggregate_tps,
            running_avg: d.running_avg,
            requested: d.requested,
            capacity_limited: d.capacity_limited,
            errors: d.error_count,
            ttft_p50_ms: d.ttft_ms.map(|s| s.p50),
            ttft_p95_ms: d.ttft_ms.map(|s| s.p95),
            itl_p50_ms: d.itl_ms.map(|s| s.p50),
            status: d.status,
            ..Headline::default()
        },
        Attempt::Burst(b) => Headline {
            tps: b.output_tps,
            requested: b.requests as u32,
            errors: b.error_count,
            ttft_p50_ms: b.ttft_ms.map(|s| s.p50),
            ttft_p95_ms: b.ttft_ms.map(|s| s.p95),
            status: b.status,
            ..Headline::default()
        },
        Attempt::Routing(v) => routing_headline(v),
    }
}

fn routing_headline(p: &RoutingPhase) -> Headline {
    Headline {
        tps: p.output_tokens_per_second,
        requested: p.planned,
        errors: p.errors,
        ttft_p50_ms: p.ttft.p50.map(|s| s * 1e3),
        ttft_p95_ms: p.ttft.p95.map(|s| s * 1e3),
        good: Some((p.good, p.requests)),
        replica_split: p.replicas.iter().map(|(k, r)| (k.clone(), r.requests.unwrap_or(0))).collect(),
        hit_ratio: p.cache_hit_ratio,
        status: p.status,
        ..Headline::default()
    }
}

fn ms(v: Option<f64>) -> String {
    match v {
        Some(x) if x >= 1000.0 => format!("{:.1}k", x / 1e3),
        Some(x) => format!("{x:.0}"),
        None => "—".into(),
    }
}

/// A one-line summary of an attempt for logs and progress output.
pub fn attempt_line(a: &Attempt) -> String {
    let h = headline(a);
    let running = match (h.running_avg, h.requested) {
        (Some(r), y) => format!(" ({r:.0}/{y}){}", if h.capacity_limited { "*" } else { "" }),
        (None, _) => String::new(),
    };
    let good = h.good.map(|(g, n)| format!(" good {g}/{n}")).unwrap_or_default();
    format!(
        "{}: {:.1} tok/s{running}{good}  TTFT p50 {} ms  ITL p50 {} ms  errors {}",
        h.status,
        h.tps,
        ms(h.ttft_p50_ms),
        ms(h.itl_p50_ms),
        h.errors
    )
}

impl CellSummary {
    /// Summary of one cell entry.
    pub fn of(entry: &super::state::CellEntry) -> Self {
        Self {
            label: entry.label.clone(),
            spec: entry.spec.clone(),
            status: entry.status.clone(),
            attempts: entry.attempts.len(),
            headline: entry.attempts.last().map(|a| headline(a)),
            latest: entry.attempts.last().cloned(),
        }
    }
}
