//! Turns: a running conversation cell's sessions (ended of all) and, per turn index, requests
//! done and failed, the history sent (`hist`: mean prompt tokens), median TTFT (`TTFT50`, ms)
//! and the share of prompt tokens served from the cache where usage says. Shown in place of the routing panels while a
//! conversation cell runs.

use super::super::app::App;
use super::super::theme;
use super::widgets::{fit, framed, panel};
use crate::cell::control::ConversationLive;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

/// One row of the table: turn, done, failed, history (mean prompt tokens), TTFT p50 ms, cached.
fn row(cells: [&str; 6]) -> String {
    let [turn, done, fail, hist, ttft, cached] = cells;
    format!("{turn:>4} {done:>5} {fail:>4} {hist:>6} {ttft:>7} {cached:>6}")
}

/// Header of the table, its columns as wide as the rows'.
fn head() -> String {
    row(["turn", "done", "fail", "hist", "TTFT50", "cached"])
}

/// The running cell's conversation view, if it has one; after the session, the last one's.
pub(crate) fn live(app: &App) -> Option<&ConversationLive> {
    app.shown_live().0.conversation.as_ref()
}

/// The panel's title: `Turns (final)` once the session ended (the Replicas panel beside it
/// names the cell).
fn title(app: &App) -> &'static str {
    match app.shown_live() {
        (_, true) => "Turns (final)",
        _ => "Turns",
    }
}

/// Rows the panel would like, borders included.
pub(crate) fn height(app: &App) -> u16 {
    live(app).map_or(0, |c| c.turns.len() as u16 + 4).max(5)
}

/// Width the panel would like, borders included.
pub(crate) const WIDTH: u16 = 40;

fn ms(v: Option<f64>) -> String {
    match v {
        Some(v) if v < 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.0}"),
        None => "—".into(),
    }
}

/// The panel's lines for `c`: its sessions line, the header, one row per turn (the last rows
/// left out when they do not fit `rows`).
pub(crate) fn lines(c: &ConversationLive, rows: usize, width: usize) -> Vec<Line<'static>> {
    let mut out = vec![
        Line::from(fit(&format!("sessions {}/{} ended", c.sessions_done, c.sessions), width)),
        Line::styled(fit(&head(), width), theme::dim()),
    ];
    for t in c.turns.iter().take(rows.saturating_sub(2)) {
        let history = t.prompt_tokens_mean.map_or_else(|| "—".into(), |p| format!("{p:.0}"));
        let cached = t.cached_ratio.map_or_else(|| "—".into(), |r| format!("{:.0}%", r * 100.0));
        let (turn, done, failed, ttft) =
            (t.turn.to_string(), t.done.to_string(), t.failed.to_string(), ms(t.ttft_p50_ms));
        out.push(Line::from(fit(&row([&turn, &done, &failed, &history, &ttft, &cached]), width)));
    }
    out
}

/// Draws the panel.
pub(crate) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let inner = framed(panel(title(app)), area, buf);
    let Some(c) = live(app) else {
        let msg = "no conversation running";
        buf.set_line(inner.x, inner.y, &Line::styled(msg, theme::dim()), inner.width);
        return;
    };
    for (i, line) in lines(c, usize::from(inner.height), usize::from(inner.width)).iter().enumerate() {
        buf.set_line(inner.x, inner.y + i as u16, line, inner.width);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::control::TurnLive;

    #[test]
    fn a_row_per_turn_under_the_sessions_line() {
        let t = |turn, done, p, ttft, cached| TurnLive {
            turn,
            done,
            failed: 0,
            prompt_tokens_mean: p,
            ttft_p50_ms: ttft,
            cached_ratio: cached,
        };
        let c = ConversationLive {
            sessions: 16,
            sessions_done: 3,
            turns: vec![t(1, 16, Some(172.4), Some(45.2), None), t(2, 9, Some(369.0), Some(4.25), Some(0.448))],
        };
        let text: Vec<String> = lines(&c, 10, 44).iter().map(|l| l.to_string()).collect();
        assert_eq!(text[0], "sessions 3/16 ended");
        assert_eq!(text[1], "turn  done fail   hist  TTFT50 cached");
        assert_eq!(text[2], "   1    16    0    172      45      —");
        assert_eq!(text[3], "   2     9    0    369     4.2    45%");
        assert_eq!(lines(&c, 3, 44).len(), 3, "rows that do not fit are left out");
    }
}
