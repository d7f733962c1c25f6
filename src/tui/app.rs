//! The monitor's state and its one synchronous transition: [`Action`]s in, [`Command`]s out.
//!
//! The event loop feeds the latest snapshots in with the `set_*` methods, turns keys into
//! actions ([`super::keymap`]) and sends whatever [`App::update`] returns to the runner.

use super::grid::{Dir, MatrixModel};
use crate::cell::control::{CellId, Command, Knob, LiveAttempt, RunnerEvent};
use crate::metrics::poller::MetricsSnapshot;
use crate::session::snapshot::SessionSnapshot;
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::time::Instant;

/// Log lines the app keeps for its own log panel.
pub const LOG_LINES: usize = 500;

/// What the screen shows on top of the dashboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The dashboard.
    Normal,
    /// The key help.
    Help,
    /// The selected cell's detail.
    Detail,
    /// "Stop the session?" waiting for y/n.
    ConfirmQuit,
}

/// What the operator asked for; keys map to these in [`super::keymap`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Move the selection.
    Move(Dir),
    /// `p`: pause the load, or resume it.
    TogglePause,
    /// `s`: skip the running cell or the selected pending one.
    Skip,
    /// `r`: run the selected finished cell again.
    Rerun,
    /// `w`: write the report now.
    Save,
    /// `q`: quit (asks first while the session runs).
    Quit,
    /// `y`: confirm.
    Yes,
    /// `n`: decline.
    No,
    /// `f`: let the selection follow the running cell again.
    Follow,
    /// `?`: open or close the help.
    ToggleHelp,
    /// `Enter`: open or close the selected cell's detail; confirms a question.
    Enter,
    /// `Esc`: close whatever is open.
    Back,
    /// Ctrl-C: stop without asking; a second one leaves at once.
    Interrupt,
    /// `+`: turn the running decode cell's load up one step.
    KnobUp,
    /// `-`: turn it down one step.
    KnobDown,
    /// PgDn / PgUp / `o`: scroll or reorder the replica rows.
    Fleet(super::fleet::FleetKey),
    /// `x`: skip the running parameter set of a sweep (`run --server-cmd`).
    SkipSet,
}

/// The session as the header names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    /// Cells are running.
    Running,
    /// The operator paused the load.
    Paused,
    /// The runner finished; the report is final.
    Done,
    /// Stop was sent; waiting for the runner to write the report.
    Stopping,
}

impl RunState {
    /// Upper-case badge text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "RUNNING",
            Self::Paused => "PAUSED",
            Self::Done => "DONE",
            Self::Stopping => "STOPPING…",
        }
    }
}

/// One line of the app's own log.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    /// Seconds since the session start.
    pub at_s: f64,
    /// A warning rather than information.
    pub warn: bool,
    /// The message.
    pub text: String,
}

/// Everything the monitor shows and remembers.
pub struct App {
    /// The loop's clock; views measure elapsed times against it, never against the wall.
    pub now: Instant,
    /// The latest session snapshot.
    pub session: Arc<SessionSnapshot>,
    /// The running cell's latest live view.
    pub live: LiveAttempt,
    /// The last live view of a cell, kept when the runner goes idle ([`App::shown_live`]).
    pub last_live: Option<LiveAttempt>,
    /// The latest metrics round, when polling.
    pub metrics: Option<Arc<MetricsSnapshot>>,
    /// What is drawn on top of the dashboard.
    pub mode: Mode,
    /// The selected cell.
    pub selected: Option<CellId>,
    /// The selection follows the running cell until the operator moves it.
    pub follow: bool,
    /// Layout of the matrix.
    pub model: MatrixModel,
    /// Recent log lines, oldest first.
    pub logs: VecDeque<LogLine>,
    /// Feedback on the last key, shown in the key bar until the next key.
    pub notice: Option<String>,
    /// The tui-logger widget state; `None` draws [`App::logs`] instead (tests, benches).
    pub log_widget: Option<tui_logger::TuiWidgetState>,
    /// When the runner finished (freezes the session clock).
    pub finished_at: Option<Instant>,
    /// Scroll and order of the replica rows (many replicas).
    pub fleet: super::fleet::FleetView,
    /// First help line shown (↑↓ PgUp PgDn in the help).
    pub help_scroll: usize,
    /// Help lines the last frame had room for (set while drawing, bounds the scroll).
    pub help_rows: std::cell::Cell<usize>,
    /// The parameter set this session belongs to, in a sweep (`run --server-cmd`).
    pub set_line: Option<super::view::sweep::SetLine>,
    skip_set: bool,
    pause_intent: Option<bool>,
    stopping: bool,
    interrupted: bool,
    abandon: bool,
    exit: bool,
    runner_done: bool,
}

impl App {
    /// An app showing `session`, with the clock at `now`.
    pub fn new(session: Arc<SessionSnapshot>, now: Instant) -> Self {
        let model = MatrixModel::build_for(&session.cells, session.slo.as_ref());
        let selected = session.current.or_else(|| model.first());
        Self {
            now,
            session,
            live: LiveAttempt::default(),
            last_live: None,
            metrics: None,
            mode: Mode::Normal,
            selected,
            follow: true,
            model,
            logs: VecDeque::new(),
            notice: None,
            log_widget: None,
            finished_at: None,
            fleet: Default::default(),
            help_scroll: 0,
            help_rows: std::cell::Cell::new(usize::MAX),
            set_line: None,
            skip_set: false,
            pause_intent: None,
            stopping: false,
            interrupted: false,
            abandon: false,
            exit: false,
            runner_done: false,
        }
    }

    /// Takes a new session snapshot.
    pub fn set_session(&mut self, session: Arc<SessionSnapshot>) {
        if self.model.cells != session.cells.len() {
            self.model = MatrixModel::build_for(&session.cells, session.slo.as_ref());
        }
        if self.pause_intent == Some(session.paused) {
            self.pause_intent = None;
        }
        if self.follow && session.current.is_some() {
            self.selected = session.current;
        }
        if self.selected.is_none_or(|s| s >= session.cells.len()) {
            self.selected = session.current.or_else(|| self.model.first());
        }
        self.session = session;
        // The session clock stops while every cell is final, and runs again with a re-run.
        if self.holding() {
            self.finished_at.get_or_insert(self.now);
        } else if !self.runner_done {
            self.finished_at = None;
        }
    }

    /// Takes a new live view; the last one of a running cell stays in [`App::last_live`].
    pub fn set_live(&mut self, live: LiveAttempt) {
        if self.live.cell.is_some() && live.cell.is_none() {
            self.last_live = Some(std::mem::take(&mut self.live));
        }
        self.live = live;
    }

    /// The live view the panels show: the running cell's, or once the session is over (every
    /// cell final) the last cell's, as it ended; `final` tells the panels to say so.
    pub fn shown_live(&self) -> (&LiveAttempt, bool) {
        match (&self.last_live, self.session.finished && self.live.cell.is_none()) {
            (Some(last), true) => (last, true),
            _ => (&self.live, false),
        }
    }

    /// Takes a new metrics round.
    pub fn set_metrics(&mut self, metrics: Arc<MetricsSnapshot>) {
        self.metrics = Some(metrics);
    }

    /// Adds a log line at the current clock.
    pub fn log(&mut self, text: String, warn: bool) {
        let at_s = self.now.saturating_duration_since(self.session.started).as_secs_f64();
        if self.logs.len() >= LOG_LINES {
            self.logs.pop_front();
        }
        self.logs.push_back(LogLine { at_s, warn, text });
    }

    /// Records a runner event in the log; returns the line for other sinks (None: not logged).
    pub fn on_runner_event(&mut self, ev: &RunnerEvent) -> Option<String> {
        let line = super::logging::event_line(ev, &self.session)?;
        let warn = matches!(ev, RunnerEvent::Log(m) if m.starts_with("warning: ") || m.contains("cannot") || m.contains("unavailable"));
        self.log(line.clone(), warn);
        Some(line)
    }

    /// The runner has ended (its report is in hand).
    pub fn runner_finished(&mut self) {
        self.runner_done = true;
        self.finished_at.get_or_insert(self.now);
        if self.mode == Mode::ConfirmQuit {
            self.mode = Mode::Normal;
        }
    }

    /// Every cell is final and the runner waits for re-runs until the operator quits
    /// ([`crate::config::RunConfig::hold_after_last`]).
    pub fn holding(&self) -> bool {
        !self.runner_done && !self.stopping && self.session.finished && self.session.current.is_none()
    }

    /// The session state for the header.
    pub fn run_state(&self) -> RunState {
        if self.runner_done || self.holding() {
            RunState::Done
        } else if self.stopping {
            RunState::Stopping
        } else if self.paused() {
            RunState::Paused
        } else {
            RunState::Running
        }
    }

    /// Paused, counting a pause or resume sent but not yet reflected in the snapshot.
    pub fn paused(&self) -> bool {
        self.pause_intent.unwrap_or(self.session.paused)
    }

    /// The loop should end: quit confirmed and the runner done, or a second Ctrl-C.
    pub fn should_exit(&self) -> bool {
        self.abandon || (self.runner_done && (self.exit || self.stopping))
    }

    /// A second Ctrl-C asked to leave without waiting for the runner.
    pub fn abandoned(&self) -> bool {
        self.abandon
    }

    /// The session was interrupted with Ctrl-C.
    pub fn interrupted(&self) -> bool {
        self.interrupted
    }

    /// The operator quit (`q`, `y`) while the session ran, without a Ctrl-C.
    pub fn quit_mid_session(&self) -> bool {
        self.stopping && !self.interrupted
    }

    /// The runner has finished.
    pub fn runner_done(&self) -> bool {
        self.runner_done
    }

    /// The operator skipped the sweep's running parameter set (`x`); the session is stopping.
    pub fn skipping_set(&self) -> bool {
        self.skip_set
    }

    /// Applies an action; returns the command for the runner, if any.
    pub fn update(&mut self, action: Action) -> Option<Command> {
        self.notice = None;
        if action == Action::Interrupt {
            return self.interrupt();
        }
        if self.stopping {
            self.notice = Some("stopping: waiting for the runner to write the report (Ctrl-C leaves now)".into());
            return None;
        }
        match self.mode {
            Mode::ConfirmQuit => self.confirm(action),
            Mode::Help => {
                self.help_key(action);
                None
            }
            Mode::Normal | Mode::Detail => self.dashboard(action),
        }
    }

    fn dashboard(&mut self, action: Action) -> Option<Command> {
        match action {
            Action::Move(dir) => self.move_selection(dir),
            Action::Follow => {
                self.follow = true;
                self.selected = self.session.current.or(self.selected);
            }
            Action::ToggleHelp => self.mode = Mode::Help,
            Action::Enter if self.mode == Mode::Detail => self.mode = Mode::Normal,
            Action::Enter if self.selected.is_some() => self.mode = Mode::Detail,
            Action::Back => self.mode = Mode::Normal,
            Action::Quit if self.runner_done => self.exit = true,
            Action::Quit if self.holding() => return self.leave_finished(),
            Action::Quit => self.mode = Mode::ConfirmQuit,
            Action::TogglePause => return self.toggle_pause(),
            Action::Skip => return self.skip(),
            Action::Rerun => return self.rerun(),
            Action::Save => return self.save(),
            Action::KnobUp => return self.knob(Knob::Up),
            Action::KnobDown => return self.knob(Knob::Down),
            Action::Fleet(key) => self.fleet.apply(key),
            Action::SkipSet => return self.skip_set(),
            Action::Enter | Action::Yes | Action::No | Action::Interrupt => {}
        }
        None
    }
}

// The operator's actions: the quit prompt, Ctrl-C, pause, skip, re-run, knob, save.
#[path = "app_actions.rs"]
mod actions;

#[cfg(test)]
#[path = "tests_app.rs"]
mod tests;
