//! Replicas: one row per replica: running, waiting, KV usage gauge, prefix hit ratio and
//! preemptions in this cell, requests routed here (and their `share`), a tok/s sparkline and the
//! current tok/s. A replica whose polls fail is marked `~` and shows `stale 12s` (time since its
//! last good poll) instead of its gauges; after the session, the last cell's rows as it ended
//! (marked final), or `ended` when no cell ran. Names on one host
//! are shown by port (`:8001`); a name too wide is cut in the middle (`10.0.…:8001`), keeping
//! its start and its port. On a narrow panel the KV bar goes before the share column.

use super::super::app::App;
use super::super::theme;
use super::fleet;
use super::widgets::{bar, count, distinct_names, fit_left, fit_middle, framed, panel, pct, sparkline};
use crate::cell::control::ReplicaLive;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use std::borrow::Cow;

/// The replicas to show: the running cell's view, the latest metrics round between cells, and
/// after the session the last cell's view as it ended ([`App::shown_live`]).
pub(crate) fn rows(app: &App) -> Cow<'_, [ReplicaLive]> {
    let (live, last) = app.shown_live();
    if !live.replicas.is_empty() && (last || !app.session.finished) {
        return Cow::Borrowed(&live.replicas);
    }
    let Some(m) = &app.metrics else { return Cow::Owned(Vec::new()) };
    let rows = m
        .replicas
        .iter()
        .map(|r| {
            let s = r.sample.as_ref();
            ReplicaLive {
                name: r.name.clone(),
                running: s.and_then(|s| s.running),
                waiting: s.and_then(|s| s.waiting),
                kv_usage: s.and_then(|s| s.kv_usage),
                stale: r.stale,
                ..ReplicaLive::default()
            }
        })
        .collect();
    Cow::Owned(rows)
}

/// Height the panel would like, borders included (a fleet adds its summary line).
pub(crate) fn height(app: &App) -> u16 {
    let n = rows(app).len();
    (n as u16 + 3 + u16::from(n >= super::fleet::FLEET_AT)).max(4)
}

/// Width of the current tok/s after the sparkline.
const TPS_W: usize = 6;
/// Width of the share-of-requests column (`share` over `28%`).
const SHARE_W: usize = 6;

struct Cols {
    name: usize,
    kv: usize,
    share: bool,
    spark: usize,
}

/// What a row shows instead of the live figures, if anything.
#[derive(Clone, Copy)]
enum RowState {
    Live,
    /// Polls failing; time since the last good one (`None`: never answered).
    Stale(Option<u64>),
    /// The session is over.
    Ended,
}

fn state_of(app: &App, r: &ReplicaLive) -> RowState {
    if app.session.finished && !app.shown_live().1 {
        return RowState::Ended;
    }
    if !r.stale {
        return RowState::Live;
    }
    let m = app.metrics.as_ref();
    let last_ok = m.and_then(|m| m.replica(&r.name)).and_then(|v| v.last_ok);
    RowState::Stale(m.zip(last_ok).map(|(m, ok)| m.at.max(app.now).saturating_duration_since(ok).as_secs()))
}

/// Widest replica name column (names wider are cut in the middle, keeping the port).
const NAME_MAX: usize = 24;
/// run 4, wait 5, KV % 5, hit 5, pre 4, reqs 6: the columns every width keeps.
const FIGURES_W: usize = 4 + 5 + 5 + 5 + 4 + 6;

/// The columns that fit `width`, by priority: the name (whole when it can be), the figures,
/// the share of requests when several replicas split them, then the KV bar, then the tok/s
/// sparkline.
fn columns(names: &[String], width: usize) -> Cols {
    let want = names.iter().map(|n| n.chars().count() + 1).max().unwrap_or(7).clamp(7, NAME_MAX);
    let share = names.len() > 1;
    let share_w = if share { SHARE_W } else { 0 };
    let name = want.min(width.saturating_sub(FIGURES_W + share_w).max(7));
    let mut left = width.saturating_sub(name + FIGURES_W + share_w);
    let kv = if left >= 4 { (left - 1).min(10) } else { 0 };
    left = left.saturating_sub(if kv > 0 { kv + 1 } else { 0 });
    let spark = left.saturating_sub(1 + TPS_W);
    Cols { name, kv, share: share && width >= name + FIGURES_W + SHARE_W, spark: if spark >= 4 { spark } else { 0 } }
}

fn header(c: &Cols) -> Line<'static> {
    let bar = if c.kv > 0 { format!(" {:<kv$}", "KV", kv = c.kv) } else { String::new() };
    let kv_pct = if c.kv > 0 { "" } else { "KV" };
    let mut s = format!(
        "{:<name$}{:>4}{:>5}{bar}{:>5}{:>5}{:>4}{:>6}",
        "replica",
        "run",
        "wait",
        kv_pct,
        "hit",
        "pre",
        "reqs",
        name = c.name,
    );
    if c.share {
        s.push_str(&format!("{:>SHARE_W$}", "share"));
    }
    if c.spark > 0 {
        s.push_str(&format!(" {:<w$}{:>TPS_W$}", "tok/s", "now", w = c.spark));
    }
    Line::styled(s, theme::dim())
}

/// The run, wait, KV and KV % columns of a row: the figures, or what replaces them.
fn gauges(r: &ReplicaLive, state: RowState, c: &Cols) -> Vec<Span<'static>> {
    let w = 4 + 5 + if c.kv > 0 { 1 + c.kv } else { 0 } + 5;
    let note = match state {
        RowState::Live => None,
        RowState::Stale(Some(age)) => Some(format!("   stale {age}s")),
        RowState::Stale(None) => Some("   stale, no poll yet".to_string()),
        RowState::Ended => Some("   ended".to_string()),
    };
    if let Some(note) = note {
        return vec![Span::styled(format!("{:<w$}", fit_left(&note, w)), theme::warn())];
    }
    let kv = r.kv_usage.unwrap_or(0.0);
    let figures = format!("{:>4}{:>5}", count(r.running), count(r.waiting));
    match c.kv {
        // No room for the bar: the percentage carries the gauge's colour.
        0 => vec![Span::raw(figures), Span::styled(format!("{:>5}", pct(r.kv_usage)), theme::gauge(kv))],
        w => vec![
            Span::raw(format!("{figures} ")),
            Span::styled(bar(kv, w), theme::gauge(kv)),
            Span::raw(format!("{:>5}", pct(r.kv_usage))),
        ],
    }
}

fn row(r: &ReplicaLive, name: &str, state: RowState, c: &Cols, total_reqs: u64) -> Line<'static> {
    let mark = if r.stale { "~" } else { "" };
    let name = format!("{:<w$}", fit_middle(&format!("{name}{mark}"), c.name - 1), w = c.name);
    let name_style = if r.stale { theme::warn() } else { theme::value() };
    let mut spans = vec![Span::styled(name, name_style)];
    spans.extend(gauges(r, state, c));
    spans.push(Span::raw(format!("{:>5}{:>4}", pct(r.hit_ratio), count(r.preemptions))));
    spans.push(Span::styled(format!("{:>6}", r.requests), theme::value()));
    if c.share {
        let share = if total_reqs > 0 { r.requests as f64 / total_reqs as f64 } else { 0.0 };
        let style = if share > 0.6 { theme::hot() } else { theme::label() };
        spans.push(Span::styled(format!("{:>SHARE_W$}", pct((total_reqs > 0).then_some(share))), style));
    }
    if c.spark > 0 {
        spans.push(Span::raw(" "));
        spans.push(Span::styled(sparkline(&r.tps_history, c.spark, None), theme::spark()));
        let now = matches!(state, RowState::Live).then(|| r.tps_history.last().copied()).flatten();
        spans.push(Span::styled(format!("{:>TPS_W$}", count(now)), theme::value()));
    }
    let line = Line::from(spans);
    if r.stale { line.patch_style(theme::dim().add_modifier(Modifier::ITALIC)) } else { line }
}

/// Draws the replicas panel.
pub(crate) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let rows = rows(app);
    let (live, last) = app.shown_live();
    let title = match (app.session.finished, last, live.replicas.is_empty()) {
        (true, true, false) => format!("Replicas (final: {})", live.label),
        (true, _, _) => "Replicas (session ended)".into(),
        (false, _, true) => "Replicas (latest poll)".into(),
        (false, _, false) => "Replicas (this cell)".into(),
    };
    let by_load = if app.fleet.order == super::super::fleet::Order::Load { " by load" } else { "" };
    let inner = framed(panel(format!("{title}{by_load}")), area, buf);
    if rows.is_empty() {
        let msg = if app.metrics.is_none() { "no metrics polled" } else { "waiting for the first poll" };
        buf.set_line(inner.x, inner.y, &Line::styled(msg, theme::dim()), inner.width);
        return;
    }
    let names = distinct_names(&rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>());
    if fleet::needs_condensing(rows.len(), inner) {
        return fleet::render_condensed(app, &rows, &names, inner, buf);
    }
    let c = columns(&names, usize::from(inner.width));
    let total: u64 = rows.iter().map(|r| r.requests).sum();
    let mut y = inner.y;
    if rows.len() >= fleet::FLEET_AT {
        buf.set_line(inner.x, y, &fleet::summary(&rows, &names), inner.width);
        y += 1;
    }
    buf.set_line(inner.x, y, &header(&c), inner.width);
    for (k, i) in fleet::order(app, &rows).into_iter().enumerate() {
        let r = &rows[i];
        buf.set_line(inner.x, y + 1 + k as u16, &row(r, &names[i], state_of(app, r), &c, total), inner.width);
    }
}
