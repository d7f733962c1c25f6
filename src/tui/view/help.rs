//! Help: every key and the matrix notation.

use super::super::app::App;
use super::super::theme;
use super::widgets::{lines, panel, popup};
use ratatui::buffer::Buffer;
use ratatui::layout::{Margin, Rect};
use ratatui::text::{Line, Span};

/// Keys and what they do.
pub const KEYS: [(&str, &str); 12] = [
    ("p", "pause the load now (the attempt is kept as paused) / resume"),
    ("s", "skip the running cell, or the selected pending cell"),
    ("r", "re-run the selected finished cell next (attempts are kept)"),
    ("w", "write the report now"),
    ("←↓↑→ hjkl", "select a cell"),
    ("f", "let the selection follow the running cell again"),
    ("Enter", "open / close the selected cell's detail"),
    ("q", "stop the session, write the report and quit (asks first)"),
    ("Ctrl-C", "the same without asking; twice leaves at once"),
    ("?", "open / close this help"),
    ("Esc", "close help or detail"),
    ("", "every action goes into the report with its time"),
];

/// Matrix notation.
pub const NOTATION: [(&str, &str); 8] = [
    ("146.7", "aggregate tok/s of the window (routing: good/requests tok/s)"),
    ("(X/Y)*", "avg running / requested; * capacity-limited or warmup timed out"),
    ("0.0 (Ne)", "N requests errored"),
    ("∅", "skipped: does not fit in the KV cache (deficit in the report)"),
    ("skip", "skipped by the operator"),
    ("·", "pending; ↻ queued again (previous result shown)"),
    ("▶", "running (yellow: warming, cyan: measuring)"),
    ("~", "stale replica metrics"),
];

fn rows(items: &[(&'static str, &'static str)]) -> impl Iterator<Item = Line<'static>> {
    items.iter().map(|(k, what)| {
        Line::from(vec![Span::styled(format!("{k:>10} "), theme::value()), Span::styled(*what, theme::label())])
    })
}

/// Draws the help popup over `area`.
pub fn render(_app: &App, area: Rect, buf: &mut Buffer) {
    let h = (KEYS.len() + NOTATION.len() + 4) as u16;
    let inner = popup(area, 92, h, panel("Help: keys and notation"), buf);
    let mut out: Vec<Line<'static>> = rows(&KEYS).collect();
    out.push(Line::default());
    out.extend(rows(&NOTATION));
    lines(inner.inner(Margin::new(1, 0)), buf, &out);
}
