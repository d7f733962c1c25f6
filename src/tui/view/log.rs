//! Log panel: the tui-logger widget in a live session, or the app's own lines (tests, benches).
//! Both wrap long messages at spaces, continuation lines indented under the message
//! ([`wrap_entry`]); only a word wider than the panel is cut.

use super::super::app::App;
use super::super::theme;
use super::widgets::{framed, panel};
use crate::report::text::wrap;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;
use tui_logger::{ExtLogRecord, LogFormatter, TuiLoggerWidget};

/// Width of the app's own line prefix (`[  123.4s] `).
const OWN_PREFIX: usize = 11;
/// Width of the live widget's line prefix (`12:34:56 I `).
const LIVE_PREFIX: usize = 11;

/// Stands for a space that must not break (a figure and its unit); one column wide.
const GLUE: char = '\u{E000}';
/// Units kept on the line of the figure before them.
const UNITS: [&str; 4] = ["ms", "s", "tok/s", "tok"];

/// `msg` with the space between a figure (or `—`) and its unit replaced by [`GLUE`].
fn glue_units(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut prev_is_figure = false;
    for (i, word) in msg.split(' ').enumerate() {
        if i > 0 {
            out.push(if prev_is_figure && UNITS.contains(&word) { GLUE } else { ' ' });
        }
        out.push_str(word);
        prev_is_figure = word.ends_with(|c: char| c.is_ascii_digit() || c == '—');
    }
    out
}

/// Wraps `msg` at spaces into lines of at most `width` columns, the first after a prefix of
/// `indent` columns, the rest indented by as much. A figure keeps its unit (`58 ms`); words
/// wider than the room left are cut.
pub(crate) fn wrap_entry(msg: &str, indent: usize, width: usize) -> Vec<String> {
    let room = width.saturating_sub(indent).max(1);
    let mut out: Vec<String> =
        wrap(&glue_units(msg), room).into_iter().map(|l| l.trim_end().replace(GLUE, " ")).collect();
    if out.is_empty() {
        out.push(String::new());
    }
    out
}

/// Formats tui-logger records as `HH:MM:SS L message`, word-wrapped by [`wrap_entry`].
struct WordWrap;

impl LogFormatter for WordWrap {
    fn min_width(&self) -> u16 {
        LIVE_PREFIX as u16 + 8
    }

    fn format(&self, width: usize, evt: &ExtLogRecord) -> Vec<Line<'_>> {
        let (style, abbr) = match evt.level.as_str() {
            "ERROR" => (theme::error(), "E"),
            "WARN" => (theme::warn(), "W"),
            "INFO" => (theme::label(), "I"),
            other => (theme::dim(), &other[..1]),
        };
        let prefix = format!("{} {abbr} ", evt.timestamp.strftime("%H:%M:%S"));
        entry_lines(Span::styled(prefix, theme::dim()), evt.msg(), style, LIVE_PREFIX, width)
    }
}

/// The lines of one entry: `prefix` then the wrapped message in `style`.
fn entry_lines(prefix: Span<'static>, msg: &str, style: Style, indent: usize, width: usize) -> Vec<Line<'static>> {
    let pad = " ".repeat(indent);
    wrap_entry(msg, indent, width)
        .into_iter()
        .enumerate()
        .map(|(i, text)| {
            let head = if i == 0 { prefix.clone() } else { Span::raw(pad.clone()) };
            Line::from(vec![head, Span::styled(text, style)])
        })
        .collect()
}

/// Draws the log panel.
pub(crate) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    if area.height < 3 {
        return;
    }
    if let Some(state) = &app.log_widget {
        TuiLoggerWidget::default().block(panel("Log")).formatter(Box::new(WordWrap)).state(state).render(area, buf);
        return;
    }
    let inner = framed(panel("Log"), area, buf);
    let (rows, width) = (usize::from(inner.height), usize::from(inner.width));
    // Wrap from the newest line back while whole entries fit (the newest one always shows).
    let mut shown: Vec<Line<'static>> = Vec::new();
    for l in app.logs.iter().rev() {
        let style = if l.warn { theme::warn() } else { theme::label() };
        let prefix = Span::styled(format!("[{:7.1}s] ", l.at_s), theme::dim());
        let mut lines = entry_lines(prefix, &l.text, style, OWN_PREFIX, width);
        if !shown.is_empty() && shown.len() + lines.len() > rows {
            break;
        }
        lines.reverse();
        shown.extend(lines);
    }
    let skip = shown.len().saturating_sub(rows);
    for (i, line) in shown.iter().rev().skip(skip).enumerate() {
        buf.set_line(inner.x, inner.y + i as u16, line, inner.width);
    }
}

#[cfg(test)]
mod tests {
    use super::wrap_entry;

    #[test]
    fn wraps_at_spaces_with_a_hanging_indent() {
        let msg = "ctx=0 conc=1: measured: 146.7 tok/s  TTFT p50 82 ms  TPOT p50 7 ms  errors 0";
        let lines = wrap_entry(msg, 11, 40);
        assert_eq!(lines, ["ctx=0 conc=1: measured:", "146.7 tok/s  TTFT p50 82 ms", "TPOT p50 7 ms  errors 0"]);
        assert!(lines.iter().all(|l| l.chars().count() <= 29));
        let paused = wrap_entry("ctx=16k conc=4: paused: 0.0 tok/s  ITL p50 — ms  errors 0", 11, 53);
        assert_eq!(paused, ["ctx=16k conc=4: paused: 0.0 tok/s  ITL p50", "— ms  errors 0"]);
    }

    #[test]
    fn cuts_only_a_word_wider_than_the_panel() {
        let lines = wrap_entry("see /a/very/long/path/without/spaces ok", 4, 14);
        assert_eq!(lines, ["see", "/a/very/lo", "ng/path/wi", "thout/spac", "es ok"]);
        assert_eq!(wrap_entry("", 11, 40), [""]);
    }
}
