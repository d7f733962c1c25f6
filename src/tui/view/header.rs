//! Header: target, model, engine dialect, plan, session clock, state, progress (cell i of N,
//! ETA: `session::progress`), report path, warnings, the `--baseline` file overlaid.

use super::super::app::{App, RunState};
use super::super::theme;
use super::widgets::clock;
use crate::cell::control::Phase;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

/// Client event-loop lag above this is shown as a warning, ms.
pub(crate) const LAG_WARN_MS: f64 = 50.0;

fn sep() -> Span<'static> {
    Span::styled(" │ ", theme::border())
}

/// Warnings worth the operator's eye: client lag, stale metrics.
pub(crate) fn warnings(app: &App) -> Vec<String> {
    let mut w = Vec::new();
    if let Some(lag) = app.live.client_lag_ms.filter(|l| *l > LAG_WARN_MS) {
        w.push(format!("client lag {lag:.0} ms"));
    }
    let stale = match &app.metrics {
        Some(m) => m.replicas.iter().filter(|r| r.stale).count(),
        None => app.live.replicas.iter().filter(|r| r.stale).count(),
    };
    if stale > 0 {
        w.push(format!("{stale} replica metrics stale"));
    }
    w
}

/// Server text (the model id, the engine) with its control characters escaped.
fn safe(s: &str) -> String {
    crate::text_safe::line(s).into_owned()
}

fn first_line(app: &App, width: u16) -> Line<'static> {
    let s = &app.session;
    let mut spans = Vec::new();
    if width >= 120 {
        spans.push(Span::styled(" llm-decode-bench", theme::title().add_modifier(Modifier::ITALIC)));
        spans.push(sep());
    } else {
        spans.push(Span::raw(" "));
    }
    spans.extend([
        Span::styled("target ", theme::label()),
        Span::styled(safe(&s.target), theme::value()),
        sep(),
        Span::styled("model ", theme::label()),
        Span::styled(safe(&s.model), theme::value()),
        sep(),
        Span::styled(if width >= 120 { "engine " } else { "" }, theme::label()),
        Span::styled(safe(&s.dialect), theme::value()),
        sep(),
        Span::styled("plan ", theme::label()),
        Span::styled(s.plan.clone(), theme::value()),
    ]);
    Line::from(spans)
}

/// The second line's parts, most important first: state and clock, the running cell,
/// warnings, progress, then the report path and the baseline.
fn second_line_parts(app: &App) -> Vec<Vec<Span<'static>>> {
    let state = app.run_state();
    let end = app.finished_at.unwrap_or(app.now);
    let elapsed = end.saturating_duration_since(app.session.started);
    let mut parts = vec![vec![
        Span::raw(" "),
        Span::styled(format!(" {} ", state.as_str()), theme::badge(state.as_str())),
        Span::raw(" "),
        Span::styled(clock(elapsed), theme::value()),
    ]];
    if state != RunState::Done && app.live.phase != Phase::Idle && app.live.cell.is_some() {
        parts.push(vec![
            sep(),
            Span::styled(format!("{} ", app.live.label), theme::value()),
            Span::styled(app.live.phase.as_str(), theme::cell(super::matrix::phase_state(app.live.phase))),
        ]);
    }
    for w in warnings(app) {
        parts.push(vec![sep(), Span::styled(format!("⚠ {w}"), theme::warn())]);
    }
    if state != RunState::Done {
        parts.push(vec![sep(), Span::styled(app.session.progress(app.now, &app.live).to_string(), theme::value())]);
    }
    parts.push(vec![
        sep(),
        Span::styled("report ", theme::label()),
        Span::styled(app.session.report_path.clone(), Style::new()),
    ]);
    if let Some(b) = &app.session.baseline {
        parts.push(vec![
            sep(),
            Span::styled("Δ vs baseline ", theme::label()),
            Span::styled(b.path.clone(), theme::value()),
        ]);
    }
    parts
}

/// The second line in `width` columns: whole parts in order of importance, so a narrow
/// terminal loses the report path before the progress, never half a figure; a first part
/// wider than the line is cut as any line is.
fn second_line(app: &App, width: u16) -> Line<'static> {
    let width = usize::from(width);
    let mut spans = Vec::new();
    let mut used = 0;
    for (i, part) in second_line_parts(app).into_iter().enumerate() {
        let w: usize = part.iter().map(Span::width).sum();
        if i > 0 && used + w > width {
            break;
        }
        used += w;
        spans.extend(part);
    }
    Line::from(spans)
}

/// Draws the two header lines.
pub(crate) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    buf.set_line(area.x, area.y, &first_line(app, area.width), area.width);
    if area.height > 1 {
        buf.set_line(area.x, area.y + 1, &second_line(app, area.width), area.width);
    }
}
