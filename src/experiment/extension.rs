//! What an experiment from outside the built-in set builds on: its attempt's common figures
//! from its requests, its headline, its report section from its cells and its attempts back
//! from a saved report (`run --resume`). Its own figures are its to compute.

use super::record::{Attempt, CellEntry};
use crate::cell::headline::Headline;
use crate::cell::spec::{CellKey, CellSpec};
use crate::load::sample::RequestSample;
use crate::report::extension::{ExtensionAttempt, ExtensionCell, ExtensionFigure, ExtensionSection};
use crate::report::json::SessionReport;
use crate::report::kind::ExperimentKind;
use crate::report::status::AttemptStatus;
use crate::units::format_size;
use tokio::time::Instant;

/// The common figures of attempt `attempt` from its `samples`, started at `started` (and
/// `started_s` seconds after the session start), with the experiment's own `figures`: measured
/// when a request completed, else errored.
pub fn summarize(
    attempt: u32,
    started: Instant,
    started_s: f64,
    samples: &[RequestSample],
    figures: Vec<ExtensionFigure>,
) -> ExtensionAttempt {
    let end = samples.iter().map(|s| s.ended_at).max().unwrap_or(started);
    let duration_s = end.saturating_duration_since(started).as_secs_f64();
    let errors = crate::load::sample::ErrorTally::of(samples);
    let output_tokens: u64 = samples.iter().map(|s| s.output_tokens).sum();
    let mut ttft = crate::stats::Samples::new();
    samples.iter().filter_map(RequestSample::ttft).for_each(|d| ttft.push(d.as_secs_f64() * 1e3));
    let measured = samples.iter().any(RequestSample::completed);
    ExtensionAttempt {
        attempt,
        status: if measured { AttemptStatus::Measured } else { AttemptStatus::Errored },
        started_s,
        duration_s,
        requests: samples.len() as u64,
        errors: errors.counts,
        error_examples: errors.examples,
        output_tokens,
        output_tps: if duration_s > 0.0 { output_tokens as f64 / duration_s } else { 0.0 },
        ttft_p50_ms: ttft.percentile(50.0),
        figures,
        tables: Default::default(),
        labels: Default::default(),
    }
}

/// The headline the monitor and the log show: output tok/s, TTFT p50, errors.
pub fn headline(a: &ExtensionAttempt) -> Headline {
    Headline {
        tps: a.output_tps,
        requested: a.requests.min(u32::MAX as u64) as u32,
        errors: a.error_count(),
        ttft_p50_ms: a.ttft_p50_ms,
        status: a.status,
        ..Headline::default()
    }
}

/// The section of kind `kind` titled `title` from its `cells` (grid cells, in plan order).
pub fn section(kind: ExperimentKind, title: &str, cells: &[&CellEntry]) -> ExtensionSection {
    let cells = cells.iter().filter_map(|c| cell(c)).collect();
    ExtensionSection { kind: kind.to_string(), title: title.to_string(), cells }
}

fn cell(c: &CellEntry) -> Option<ExtensionCell> {
    let CellKey::Grid { ctx, conc, rate } = c.spec.key else { return None };
    let (status, timeout_reason, skip) = super::decode::section::status_and_reason(&c.status);
    let attempts =
        c.attempts.iter().filter_map(|a| if let Attempt::Extension(e) = &**a { Some((**e).clone()) } else { None });
    Some(ExtensionCell {
        ctx,
        ctx_label: format_size(ctx),
        conc,
        rate: rate.map(|r| r.to_string()),
        label: c.label.clone(),
        status,
        timeout_reason,
        skip,
        attempts: attempts.collect(),
        baseline: Vec::new(),
        runs: None,
    })
}

/// The attempts `report` holds for the cell `spec`, oldest first (`run --resume`).
pub fn recover(report: &SessionReport, spec: &CellSpec) -> Vec<Attempt> {
    let CellKey::Grid { ctx, conc, rate } = &spec.key else { return Vec::new() };
    let rate = rate.map(|r| r.to_string());
    let section = report.extensions.iter().find(|s| s.kind == spec.kind.as_str());
    let cell = section.and_then(|s| s.cells.iter().find(|c| c.ctx == *ctx && c.conc == *conc && c.rate == rate));
    cell.map(|c| c.attempts.iter().map(|a| Attempt::Extension(Box::new(a.clone()))).collect()).unwrap_or_default()
}
