//! The `--baseline` overlay: each live and finished cell's deltas against the saved session's
//! same cell (`report::baseline`), coloured by what the sign means (green better, red worse),
//! for the matrix cells, the live panel and the detail view.

use super::super::app::App;
use crate::cell::control::{CellId, Phase};
use crate::report::baseline::{Delta, Pick};
use crate::report::compare::Change;
use crate::session::snapshot::CellSummary;
use crate::session::state::CellStatus;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;

/// Style of a delta by what it means.
pub(crate) fn style(change: Change) -> Style {
    match change {
        Change::Better => Style::new().fg(Color::LightGreen).add_modifier(Modifier::BOLD),
        Change::Worse => Style::new().fg(Color::LightRed).add_modifier(Modifier::BOLD),
        Change::Same | Change::WithinNoise | Change::Unavailable => Style::new().fg(Color::Gray),
    }
}

/// A delta as one coloured span: `+3.2%`.
pub(crate) fn span(d: &Delta) -> Span<'static> {
    Span::styled(d.text(), style(d.change))
}

/// `label +3.2%` spans for every delta, separated by spaces.
pub(crate) fn spans(deltas: &[(Pick, Delta)]) -> Vec<Span<'static>> {
    let mut out = Vec::new();
    for (i, (pick, d)) in deltas.iter().enumerate() {
        let sep = if i == 0 { "" } else { " " };
        out.push(Span::styled(format!("{sep}{} ", pick.name()), super::super::theme::label()));
        out.push(span(d));
    }
    out
}

/// The deltas of a cell's latest finished attempt (none unless it measured); with
/// repetitions, of the mean of its runs, within noise inside the interval of the means.
pub(crate) fn finished(app: &App, c: &CellSummary) -> Vec<(Pick, Delta)> {
    let Some(b) = app.session.baseline.as_deref() else { return Vec::new() };
    let key = c.spec.compare_key();
    c.headline.as_ref().map(|h| h.baseline_deltas_with_runs(&key, b, &c.run_stats)).unwrap_or_default()
}

/// The deltas of the running attempt so far, once it measures (none while warming up).
pub(crate) fn live(app: &App, c: &CellSummary) -> Vec<(Pick, Delta)> {
    let Some(b) = app.session.baseline.as_deref() else { return Vec::new() };
    let l = &app.live;
    if !matches!(l.phase, Phase::Measuring | Phase::Draining) {
        return Vec::new();
    }
    let now = [(Pick::Throughput, Some(l.tps)), (Pick::TtftP50, l.ttft_p50_ms)];
    b.deltas(&c.spec.compare_key(), &now)
}

/// What cell `id` shows against the baseline: live while it runs, else its latest result.
pub(crate) fn cell(app: &App, id: CellId) -> Vec<(Pick, Delta)> {
    let Some(c) = app.session.cells.get(id) else { return Vec::new() };
    match c.status {
        CellStatus::Running if app.live.cell == Some(id) => live(app, c),
        CellStatus::Running => Vec::new(),
        CellStatus::Measured | CellStatus::Pending => finished(app, c),
        _ => Vec::new(),
    }
}

/// The throughput delta a matrix cell shows.
pub(crate) fn matrix_delta(app: &App, id: CellId) -> Option<Delta> {
    cell(app, id).into_iter().find(|(p, _)| *p == Pick::Throughput).map(|(_, d)| d)
}
