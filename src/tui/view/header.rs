//! Header: target, model, engine dialect, plan, session clock, state, progress (cell i of N,
//! ETA: `session::progress`), report path, warnings, the `--baseline` file overlaid; in a
//! sharded run (`--shard i/N`) which shard, its session and `--start-at`, and its clock.

use super::super::app::{App, RunState};
use super::super::theme;
use super::widgets::clock;
use crate::cell::control::Phase;
use crate::session::shard_view::ShardView;
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

/// Which shard and session, beside the state, and the clock warning when there is one (it
/// tells how far this shard's windows may be from the others'): `shard 1/4 · session
/// s-5f3ac1d2e4b6 │ ⚠ clock off 1.5 ms` (a long `--session-id` clipped).
fn shard_spans(shard: &ShardView) -> Vec<Span<'static>> {
    let mut spans = vec![
        sep(),
        Span::styled(format!("shard {}/{}", shard.index, shard.count), theme::title()),
        Span::styled(" · session ", theme::label()),
        Span::styled(crate::text_safe::clipped(&shard.session_id, 24), theme::value()),
    ];
    if let Some(w) = &shard.clock_warning {
        spans.extend([sep(), Span::styled(format!("⚠ {w}"), theme::warn())]);
    }
    spans
}

/// A shard's `--start-at`: `start 10:31:05 UTC`.
fn start_part(shard: &ShardView) -> Option<Vec<Span<'static>>> {
    let at = crate::session::shard_view::clock_utc(shard.start_at?);
    Some(vec![sep(), Span::styled("start ", theme::label()), Span::styled(format!("{at} UTC"), theme::value())])
}

/// Server text (the model id, the engine) with its control characters escaped.
fn safe(s: &str) -> String {
    crate::text_safe::line(s).into_owned()
}

/// The first line in `width` columns: the target always, then whole parts by importance
/// (plan, model, engine), shown in their usual order, so 80 columns drop the engine rather
/// than cut the plan mid-word.
fn first_line(app: &App, width: u16) -> Line<'static> {
    let s = &app.session;
    let lead = match width >= 120 {
        true => vec![Span::styled(" llm-decode-bench", theme::title().add_modifier(Modifier::ITALIC)), sep()],
        false => vec![Span::raw(" ")],
    };
    let part = |label: &'static str, value: String| {
        vec![sep(), Span::styled(label, theme::label()), Span::styled(value, theme::value())]
    };
    let target = vec![Span::styled("target ", theme::label()), Span::styled(safe(&s.target), theme::value())];
    // Display order: model, engine, plan; importance: plan, model, engine.
    let parts = [
        part("model ", safe(&s.model)),
        part(if width >= 120 { "engine " } else { "" }, safe(&s.dialect)),
        part("plan ", s.plan.clone()),
    ];
    let wide = |p: &[Span]| p.iter().map(Span::width).sum::<usize>();
    let mut used = wide(&lead) + wide(&target);
    let mut shown = [false; 3];
    for i in [2, 0, 1] {
        if used + wide(&parts[i]) <= usize::from(width) {
            used += wide(&parts[i]);
            shown[i] = true;
        }
    }
    let mut spans = lead;
    spans.extend(target);
    for (p, _) in parts.into_iter().zip(shown).filter(|(_, on)| *on) {
        spans.extend(p);
    }
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
    let shard = app.session.shard.as_ref();
    parts[0].extend(shard.into_iter().flat_map(shard_spans));
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
    parts.extend(shard.and_then(start_part));
    // A baseline changes how every figure on screen reads; the report path is also in the log.
    if let Some(b) = &app.session.baseline {
        parts.push(vec![
            sep(),
            Span::styled("Δ vs baseline ", theme::label()),
            Span::styled(b.path.clone(), theme::value()),
        ]);
    }
    parts.push(vec![
        sep(),
        Span::styled("report ", theme::label()),
        Span::styled(app.session.report_path.clone(), Style::new()),
    ]);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn text(line: &Line) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn a_narrow_first_line_drops_whole_parts_engine_first() {
        let mut app = crate::tui::fixtures::measuring();
        let mut s = (*app.session).clone();
        (s.target, s.plan) = ("http://127.0.0.1:17101".into(), "decode,routing".into());
        app.set_session(Arc::new(s));
        let wide = text(&first_line(&app, 160));
        assert!(wide.contains("engine ") && wide.ends_with("plan decode,routing"), "{wide}");
        let narrow = text(&first_line(&app, 80));
        assert!(narrow.chars().count() <= 80, "{narrow}");
        assert!(narrow.ends_with("plan decode,routing") && narrow.contains("model "), "{narrow}");
        let tight = text(&first_line(&app, 56));
        assert!(tight.ends_with("plan decode,routing") && !tight.contains("model"), "{tight}");
    }
}
