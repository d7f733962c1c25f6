//! The set line of a sweep (`run --server-cmd`): which parameter set runs, how long its server
//! took to start, where its log is, and the key that skips the set (`x`).

use super::super::app::App;
use super::super::theme;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use std::time::Duration;

/// The parameter set the monitor's session belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetLine {
    /// Position in the sweep, from 1.
    pub index: usize,
    /// Sets in the sweep.
    pub total: usize,
    /// `max_num_seqs=16`.
    pub params: String,
    /// From the start of its server to `/v1/models` answering.
    pub startup: Duration,
    /// The server's log file.
    pub log: String,
}

fn sep() -> Span<'static> {
    Span::styled(" · ", theme::border())
}

/// `set 2/3 · max_num_seqs=16 · up in 83.2 s · log: … · x skips this set`, whole parts in
/// order of importance within `width` (the log path goes first, then the key hint).
fn line(set: &SetLine, skipping: bool, width: u16) -> Line<'static> {
    let safe = |s: &str| crate::text_safe::line(s).into_owned();
    let mut spans = vec![
        Span::raw(" "),
        Span::styled(format!("set {}/{}", set.index, set.total), theme::title()),
        sep(),
        Span::styled(safe(&set.params), theme::value()),
        sep(),
        Span::styled("up in ", theme::label()),
        Span::styled(format!("{} s", crate::report::sweep::seconds(set.startup.as_secs_f64())), theme::value()),
    ];
    let hint = match skipping {
        true => vec![sep(), Span::styled("skipping this set…", theme::warn())],
        false => vec![sep(), Span::styled(" x ", theme::key()), Span::styled(" skips this set", theme::label())],
    };
    let log = vec![sep(), Span::styled("log: ", theme::label()), Span::styled(safe(&set.log), theme::dim())];
    let wide = |p: &[Span]| p.iter().map(Span::width).sum::<usize>();
    let mut used = wide(&spans);
    for part in [hint, log] {
        if used + wide(&part) <= usize::from(width) {
            used += wide(&part);
            spans.extend(part);
        }
    }
    Line::from(spans)
}

/// Draws the set line, if the session belongs to a sweep.
pub(crate) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    if let Some(set) = &app.set_line {
        buf.set_line(area.x, area.y, &line(set, app.skipping_set(), area.width), area.width);
    }
}
