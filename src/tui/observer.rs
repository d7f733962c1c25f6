//! The observer's monitor (`run --observe` on a terminal): the session monitor's own panels
//! (src/tui/view/: header, matrix, live panel, replicas, log, help) drawn from the figures
//! summed over shards through the adapter of [`super::observer_app`], under a shard strip
//! (health per shard, the give-up countdown of stale ones) and the note that keys are not
//! sent to the shards. The screen only draws: the observer's data task polls.

use std::collections::BTreeMap;
use std::sync::Arc;

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};

use super::app::{Action, App, Mode};
use super::observer_app::{ObservedCell, ObservedSession, snapshot};
use super::theme;
use crate::cell::control::LiveAttempt;
use crate::metrics::observe::View;
use crate::metrics::observe::clock::give_up_note;
use crate::metrics::observe::health::ShardState;
use crate::metrics::poller::MetricsSnapshot;
use tokio::time::Instant;

/// Polls of summed tok/s kept per cell (the live panel's sparkline, an ended cell's median).
const HISTORY: usize = 240;

/// The note the screen always shows under the shard strip.
pub const NOT_SENT: &str = "observer: sends nothing to the shards; pause, skip and knob do not cross shards";

/// Everything the observer's screen shows.
pub struct ObserverScreen {
    /// The session monitor's state, fed from the observer's polls.
    pub app: App,
    /// The header's facts.
    pub session: ObservedSession,
    /// Every cell seen, in the order first seen.
    pub cells: Vec<ObservedCell>,
    /// Every shard seen, as of the last poll.
    pub shards: BTreeMap<String, ShardState>,
    /// Stale shards and the seconds before the observer gives up on each.
    pub countdown: Vec<(String, f64)>,
    /// Every shard has finished (the header says DONE).
    pub finished: bool,
}

/// Where a cell first seen in a poll goes among the others of that poll: grid cells by kind,
/// ctx and load (the plan's own order), then the rest by label.
fn plan_order(c: &ObservedCell) -> (bool, &'static str, u64, u32, String) {
    match &c.spec.key {
        crate::cell::spec::CellKey::Grid { ctx, conc, .. } => {
            (false, c.spec.kind.as_str(), *ctx, *conc, c.label.clone())
        }
        crate::cell::spec::CellKey::Phase { .. } => (true, "", 0, 0, c.label.clone()),
    }
}

impl ObserverScreen {
    /// Nothing seen yet.
    pub fn new(session: ObservedSession) -> ObserverScreen {
        let app = App::new(Arc::new(snapshot(&session, &[], false)), session.started);
        ObserverScreen {
            app,
            session,
            cells: Vec::new(),
            shards: BTreeMap::new(),
            countdown: Vec::new(),
            finished: false,
        }
    }

    /// Takes one poll's view and the shards' states after it, at `now`.
    pub fn take(&mut self, view: &View, shards: &BTreeMap<String, ShardState>, now: Instant) {
        let mut new: Vec<ObservedCell> = (view.cells.keys())
            .filter(|l| !self.cells.iter().any(|c| &c.label == *l))
            .map(|l| ObservedCell::new(l))
            .collect();
        new.sort_by_key(plan_order);
        self.cells.extend(new);
        for c in &mut self.cells {
            match view.cells.get(&c.label) {
                Some(f) => c.figures = f.clone(),
                // Its series are gone (every shard that ran it went away): no longer running.
                None => c.figures.active_shards = 0.0,
            }
            if c.figures.is_active() {
                c.active_since.get_or_insert(now);
                c.history.push(c.figures.tok_s.unwrap_or(0.0).max(0.0));
                if c.history.len() > HISTORY {
                    c.history.remove(0);
                }
            } else {
                c.active_since = None;
            }
        }
        self.shards.clone_from(shards);
        self.finished = !shards.is_empty() && shards.values().all(|s| s.finished);
        self.refresh(now);
    }

    /// Sets the clock and hands the panels a fresh snapshot and live view.
    pub fn refresh(&mut self, now: Instant) {
        self.app.now = now;
        let snap = snapshot(&self.session, &self.cells, self.finished);
        let live = snap.current.map_or_else(LiveAttempt::default, |i| self.cells[i].live(i));
        self.app.set_session(Arc::new(snap));
        self.app.set_live(live);
    }

    /// Takes the replicas' latest reading (scraped once, by the observer).
    pub fn set_replicas(&mut self, m: Arc<MetricsSnapshot>) {
        self.app.set_metrics(m);
    }

    /// Adds a line to the log panel.
    pub fn note(&mut self, line: String, warn: bool) {
        self.app.log(line, warn);
    }

    /// What a key does; `Some(reason)` ends the observer. Keys that act on a session in its
    /// own monitor (pause, skip, re-run, save, knob, skip set) answer with [`not_sent_note`];
    /// moving, detail and help work as there.
    pub fn key(&mut self, action: Action) -> Option<String> {
        self.app.notice = None;
        let refused = match action {
            Action::Quit => return Some("quit".into()),
            Action::Interrupt => return Some("SIGINT".into()),
            Action::TogglePause => "p",
            Action::Skip => "s",
            Action::Rerun => "r",
            Action::Save => "w",
            Action::KnobUp => "+",
            Action::KnobDown => "-",
            Action::SkipSet => "x",
            other => {
                // The observer holds no runner: whatever command comes back goes nowhere.
                let _ = self.app.update(other);
                return None;
            }
        };
        self.app.notice = Some(not_sent_note(refused));
        None
    }
}

/// The note shown for a control key the observer does not send.
pub fn not_sent_note(key: &str) -> String {
    format!("`{key}` not sent: the observer does not control the shards; use a shard's own monitor")
}

/// The shard strip: each shard's health, then the give-up countdown of the stale ones.
fn strip(s: &ObserverScreen) -> Line<'static> {
    let mut spans = vec![Span::styled(" shards ", theme::label())];
    for (name, st) in &s.shards {
        let (text, style) = match (st.finished, st.stale) {
            (true, _) => (format!(" {name} done "), theme::dim()),
            (_, true) => (format!(" {name} ~stale "), theme::error()),
            _ => (format!(" {name} up "), theme::value()),
        };
        spans.push(Span::styled(text, style));
    }
    if s.shards.is_empty() {
        spans.push(Span::styled("none seen yet", theme::dim()));
    }
    for (shard, left) in &s.countdown {
        spans.push(Span::styled(" │ ", theme::border()));
        spans.push(Span::styled(give_up_note(shard, *left), theme::warn()));
    }
    Line::from(spans)
}

/// The observer's key bar over the monitor's: the keys that do something here.
fn keybar(app: &App, area: Rect, buf: &mut Buffer) {
    let mut spans = Vec::new();
    if let Some(n) = &app.notice {
        spans.push(Span::styled(format!("» {n}  "), theme::warn()));
    }
    let keys = [("←↓↑→", "move"), ("⏎", "detail"), ("q", "quit"), ("?", "help")];
    for (k, what) in keys {
        spans.push(Span::styled(format!(" {k} "), theme::key()));
        spans.push(Span::styled(format!(" {what} "), theme::label()));
    }
    buf.set_line(area.x, area.y, &Line::from(" ".repeat(usize::from(area.width))), area.width);
    buf.set_line(area.x, area.y, &Line::from(spans), area.width);
}

/// Draws the whole screen: strip, note, then the session monitor in the rest.
pub fn draw(f: &mut Frame, s: &ObserverScreen) {
    let [strip_row, note_row, body] =
        Layout::vertical([Constraint::Length(1), Constraint::Length(1), Constraint::Min(0)]).areas(f.area());
    let buf = f.buffer_mut();
    buf.set_line(strip_row.x, strip_row.y, &strip(s), strip_row.width);
    buf.set_line(note_row.x, note_row.y, &Line::styled(NOT_SENT, theme::warn()), note_row.width);
    f.render_widget(&s.app, body);
    let big = body.width >= super::view::MIN_WIDTH && body.height >= super::view::MIN_HEIGHT;
    if big && s.app.mode != Mode::Help && body.height > 0 {
        keybar(&s.app, Rect { y: body.bottom() - 1, height: 1, ..body }, f.buffer_mut());
    }
}

#[cfg(test)]
#[path = "observer_tests.rs"]
mod tests;
