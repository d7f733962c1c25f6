//! The Pareto view's data: one point per measured cell of one or more session reports (or of
//! an engine-config sweep's sets, each a source), placed at its aggregate output tok/s and the
//! output tok/s one user sees, and the frontier of those points ([`frontier`]).
//!
//! Throughput per user is 1000 / the cell's median TPOT in ms, the "user tok/s = 1 / TPOT" of
//! docs/reports.md §1.2 (the view is §7), where a request's TPOT is its time per output token after the first:
//! - decode cells: the median per-stream TPOT over the window, `itl_ms.p50` ((last token −
//!   first token) / (tokens − 1) of each stream, cut streams included; its `user_tps`);
//! - serve cells: vLLM's `median_tpot_ms` ((e2el − ttft) / (tokens − 1), completed requests);
//! - burst cells: the median of `tpot_ms` (the same, per completed request of the burst);
//! - extension cells (conversations): the attempt's `tpot_p50_ms` figure; a kind without it
//!   has no point.
//!
//! Aggregate throughput is the cell's output tok/s: decode `aggregate_tps` (window tokens /
//! window), serve `output_throughput`, burst `output_tps` (tokens / makespan), extension
//! `output_tps` (tokens / attempt). A point comes from what a cell's tables show (its latest
//! attempt; with `run --num-runs`, the mean of its latest round of runs) when the cell
//! is measured and both figures are finite and above 0; errored, skipped, stopped and
//! not-run cells, and routing phases (no TPOT), give none.

pub mod frontier;
pub mod labels;

#[cfg(test)]
pub(crate) mod tests;

use super::json::SessionReport;
use super::runs::{Repeated, RunsBlock};
use super::status::{AttemptStatus, CellOutcome};
use std::borrow::Cow;

/// One report the view draws points from, under the label its points carry (a file stem, a
/// session, or a sweep's parameter set such as `max_num_seqs=8`).
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// What the points of this source are labelled with.
    pub label: &'a str,
    /// The report (or a set's nested report).
    pub report: &'a SessionReport,
}

/// The experiment a point's cell belongs to (its marker in the chart).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PointKind {
    /// A sustained-decode cell.
    Decode,
    /// A serve cell.
    Serve,
    /// A burst cell.
    Burst,
    /// A cell of an extension section (the conversation experiment), by kind name.
    Extension(String),
}

impl PointKind {
    /// The kind's name, as the report's sections call it.
    pub fn name(&self) -> &str {
        match self {
            Self::Decode => "decode",
            Self::Serve => "serve",
            Self::Burst => "burst",
            Self::Extension(name) => name,
        }
    }
}

/// One measured cell in the view.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Index of the cell's source in the list given to [`points`].
    pub source: usize,
    /// The cell's experiment.
    pub kind: PointKind,
    /// The cell: `ctx 16k · conc 8`, `ctx 16k · rate 4 · conc 8` (open loop), `ctx 16k ·
    /// burst 8`, serve `in 1k · conc 4 · rate 8`.
    pub cell: String,
    /// Output tok/s one user sees: 1000 / the cell's median TPOT, ms.
    pub per_user_tps: f64,
    /// Output tok/s of the whole cell.
    pub aggregate_tps: f64,
}

impl Point {
    /// Where the point stands: (aggregate tok/s, tok/s per user), both higher-better.
    pub fn xy(&self) -> frontier::Xy {
        (self.aggregate_tps, self.per_user_tps)
    }
}

/// Every point of `sources`, in source order, then decode, serve, burst and extension cells in
/// plan order.
pub fn points(sources: &[Source<'_>]) -> Vec<Point> {
    let mut out = Vec::new();
    for (i, s) in sources.iter().enumerate() {
        let mut add = |kind: PointKind, cell: String, tpot_ms: Option<f64>, aggregate_tps: f64| {
            let per_user_tps = tpot_ms.map_or(f64::NAN, |t| 1000.0 / t);
            let usable = |v: f64| v.is_finite() && v > 0.0;
            if usable(per_user_tps) && usable(aggregate_tps) {
                out.push(Point { source: i, kind, cell, per_user_tps, aggregate_tps });
            }
        };
        decode(s.report, &mut add);
        serve(s.report, &mut add);
        burst(s.report, &mut add);
        extensions(s.report, &mut add);
    }
    out
}

/// What a kind's walk hands over per cell: kind, cell label, median TPOT ms, aggregate tok/s.
type Add<'f> = dyn FnMut(PointKind, String, Option<f64>, f64) + 'f;

/// What a measured cell's tables show, when it measured: the mean of its latest round of runs
/// when it has a `runs` block (`run --num-runs`), else its latest attempt.
fn measured<'a, A: Repeated>(
    status: CellOutcome,
    attempts: &'a [A],
    runs: Option<&RunsBlock>,
    of: impl Fn(&A) -> AttemptStatus,
) -> Option<Cow<'a, A>> {
    let shown = (status == CellOutcome::Measured).then(|| super::runs::shown(attempts, runs)).flatten()?;
    (of(&shown) == AttemptStatus::Measured).then_some(shown)
}

/// `ctx L`, then `rate R` when open loop, then `what N`.
fn cell_label(ctx: &str, rate: Option<String>, what: &str, n: u32) -> String {
    match rate {
        Some(r) => format!("ctx {ctx} · rate {r} · {what} {n}"),
        None => format!("ctx {ctx} · {what} {n}"),
    }
}

fn decode(report: &SessionReport, add: &mut Add<'_>) {
    for cell in report.decode.iter().flat_map(|d| &d.cells) {
        if let Some(a) = measured(cell.status, &cell.attempts, cell.runs.as_ref(), |a| a.status) {
            let label = cell_label(&cell.ctx_label, cell.rate.map(|r| r.to_string()), "conc", cell.conc);
            add(PointKind::Decode, label, a.itl_ms.map(|s| s.p50), a.aggregate_tps);
        }
    }
}

fn serve(report: &SessionReport, add: &mut Add<'_>) {
    for cell in report.serve.iter().flat_map(|s| &s.cells) {
        if let Some(a) = measured(cell.status, &cell.attempts, cell.runs.as_ref(), |a| a.status) {
            let label = format!("in {} · conc {} · rate {}", cell.ctx_label, cell.max_concurrency, cell.request_rate);
            add(PointKind::Serve, label, a.metrics.median_tpot_ms, a.metrics.output_throughput);
        }
    }
}

fn burst(report: &SessionReport, add: &mut Add<'_>) {
    for cell in report.burst.iter().flat_map(|b| &b.cells) {
        if let Some(a) = measured(cell.status, &cell.attempts, cell.runs.as_ref(), |a| a.status) {
            add(
                PointKind::Burst,
                cell_label(&cell.ctx_label, None, "burst", cell.conc),
                a.tpot_ms.map(|s| s.p50),
                a.output_tps,
            );
        }
    }
}

fn extensions(report: &SessionReport, add: &mut Add<'_>) {
    for section in &report.extensions {
        for cell in &section.cells {
            if let Some(a) = measured(cell.status, &cell.attempts, cell.runs.as_ref(), |a| a.status) {
                let tpot = super::extension::figure(&a, TPOT_FIGURE);
                let label = cell_label(&cell.ctx_label, cell.rate.clone(), "conc", cell.conc);
                add(PointKind::Extension(section.kind.clone()), label, tpot, a.output_tps);
            }
        }
    }
}

/// The extension figure that holds an attempt's median TPOT, ms.
pub const TPOT_FIGURE: &str = "tpot_p50_ms";
