//! Help: every key and the matrix notation.

use super::super::app::App;
use super::super::theme;
use super::widgets::{lines, panel, popup};
use ratatui::buffer::Buffer;
use ratatui::layout::{Margin, Rect};
use ratatui::text::{Line, Span};

/// Keys and what they do.
pub(crate) const KEYS: [(&str, &str); 15] = [
    ("p", "pause the load now (the attempt is kept as paused) / resume"),
    ("s", "skip the running cell, or the selected pending cell"),
    ("r", "re-run the selected finished cell next (attempts are kept)"),
    ("w", "write the report now"),
    ("+ / -", "turn the running decode cell's load up / down a step (--knob-step)"),
    ("←↓↑→ hjkl", "select a cell"),
    ("f", "let the selection follow the running cell again"),
    ("PgDn PgUp", "next / previous page of replicas (many replicas)"),
    ("o", "order replicas by name / by load (busiest first)"),
    ("Enter", "open / close the selected cell's detail"),
    ("q", "stop the session, write the report and quit (asks first)"),
    ("Ctrl-C", "the same without asking; twice leaves at once"),
    ("?", "open / close this help"),
    ("Esc", "close help or detail"),
    ("", "every action goes into the report with its time"),
];

/// Matrix notation.
pub(crate) const NOTATION: [(&str, &str); 10] = [
    ("146.7", "aggregate tok/s of the window (routing: good/requests tok/s)"),
    ("(X/Y)*", "avg running / requested; * capacity-limited or warmup timed out"),
    ("0.0 (Ne)", "N requests errored"),
    ("∅", "skipped: does not fit in the KV cache (deficit in the report)"),
    ("»", "not run: past its row's knee (--stop-at-knee)"),
    ("⌃", "the row's knee: tok/s stopped rising while TTFT or the queue rose"),
    ("skip", "skipped by the operator"),
    ("·", "pending; ↻ queued again (previous result shown)"),
    ("▶", "running (yellow: warming, cyan: measuring)"),
    ("~", "stale replica metrics"),
];

fn rows_of(items: &[(&'static str, &'static str)]) -> impl Iterator<Item = Line<'static>> {
    items.iter().map(|(k, what)| {
        Line::from(vec![Span::styled(format!("{k:>10} "), theme::value()), Span::styled(*what, theme::label())])
    })
}

/// The help lines for `rows` lines of room: keys, a blank line, the notation; without the
/// blank line when short, and a last `+N more lines` when still short.
fn help_lines(rows: usize) -> Vec<Line<'static>> {
    let mut out: Vec<Line<'static>> = rows_of(&KEYS).collect();
    let full = KEYS.len() + 1 + NOTATION.len();
    if full <= rows {
        out.push(Line::default());
    }
    out.extend(rows_of(&NOTATION));
    if out.len() > rows {
        let keep = rows.saturating_sub(1);
        let more = format!("+{} more lines: a taller terminal shows them", out.len() - keep);
        out.truncate(keep);
        out.push(Line::styled(more, theme::dim()));
    }
    out
}

/// Draws the help popup over `area` (the whole screen: the help needs every line of it).
pub(crate) fn render(_app: &App, area: Rect, buf: &mut Buffer) {
    let h = (KEYS.len() + NOTATION.len() + 4) as u16;
    let inner = popup(area, 92, h, panel("Help: keys and notation"), buf);
    let inner = inner.inner(Margin::new(1, 0));
    lines(inner, buf, &help_lines(usize::from(inner.height)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_help_says_what_it_leaves_out() {
        let text = |l: &Line<'_>| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>();
        assert_eq!(help_lines(60).len(), KEYS.len() + 1 + NOTATION.len());
        assert_eq!(help_lines(KEYS.len() + NOTATION.len()).len(), KEYS.len() + NOTATION.len(), "blank line dropped");
        let short = help_lines(10);
        assert_eq!(short.len(), 10);
        // The blank line between keys and notation goes first.
        let more = format!("+{} more lines", KEYS.len() + NOTATION.len() - 9);
        assert!(text(&short[9]).starts_with(&more), "{}", text(&short[9]));
    }
}
