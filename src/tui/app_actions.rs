//! The operator's actions on [`App`]: the quit prompt, Ctrl-C, pause, skip, re-run, the knob
//! and save, each returning the command for the runner, if any.

use super::{Action, App, Mode};
use crate::cell::control::{CellId, Command, Knob};
use crate::session::state::CellStatus;
use crate::tui::fleet::FleetKey;
use crate::tui::grid::Dir;

impl App {
    /// A key in the help: scroll it, or close it.
    pub(super) fn help_key(&mut self, action: Action) {
        let all = super::super::view::help::help_lines(self.session.shard.is_some()).len();
        let last = all.saturating_sub(self.help_rows.get().max(1));
        let page = self.help_rows.get().clamp(1, 100).saturating_sub(1).max(1);
        self.help_scroll = match action {
            Action::Move(Dir::Up) => self.help_scroll.saturating_sub(1),
            Action::Move(Dir::Down) => self.help_scroll + 1,
            Action::Fleet(FleetKey::PageUp) => self.help_scroll.saturating_sub(page),
            Action::Fleet(FleetKey::PageDown) => self.help_scroll + page,
            Action::ToggleHelp | Action::Back | Action::Quit | Action::Enter => {
                self.mode = Mode::Normal;
                0
            }
            _ => self.help_scroll,
        }
        .min(last);
    }

    /// Leaves a finished session: the runner ends without stopping anything, the report
    /// stays complete, and the loop exits once the runner has written it.
    pub(super) fn leave_finished(&mut self) -> Option<Command> {
        self.exit = true;
        Some(Command::Stop)
    }

    pub(super) fn confirm(&mut self, action: Action) -> Option<Command> {
        match action {
            Action::Yes | Action::Enter => {
                self.mode = Mode::Normal;
                if self.runner_done {
                    self.exit = true;
                    return None;
                }
                self.stopping = true;
                Some(Command::Stop)
            }
            Action::No | Action::Back | Action::Quit => {
                self.mode = Mode::Normal;
                None
            }
            _ => None,
        }
    }

    pub(super) fn interrupt(&mut self) -> Option<Command> {
        self.mode = Mode::Normal;
        if self.holding() {
            // Every cell is final: Ctrl-C leaves as `q` does, the report complete.
            return self.leave_finished();
        }
        self.interrupted = true;
        if self.runner_done {
            self.exit = true;
            return None;
        }
        if self.stopping {
            self.abandon = true;
            return None;
        }
        self.stopping = true;
        Some(Command::Stop)
    }

    pub(super) fn move_selection(&mut self, dir: Dir) {
        self.follow = false;
        self.selected = match self.selected {
            Some(s) => Some(self.model.step(s, dir)),
            None => self.model.first(),
        };
    }

    pub(super) fn status_of(&self, id: CellId) -> Option<&CellStatus> {
        self.session.cells.get(id).map(|c| &c.status)
    }

    pub(super) fn session_over(&mut self) -> bool {
        if self.runner_done {
            self.notice = Some("the session is over".into());
        }
        self.runner_done
    }

    /// True in a shard's monitor (`--shard i/N`), where pause, skip, re-run and the knob are
    /// not applied (they would put the shard out of step with the others): said in the key
    /// bar and the log, and nothing is sent.
    pub(super) fn refused_in_shard(&mut self) -> bool {
        let Some(note) = self.session.shard.as_ref().map(|s| s.keys_note()) else { return false };
        self.log(note.clone(), true);
        // In `--log-file` too, as the runner's lines are (tui::event_loop).
        if let Some(l) = self.logs.back() {
            crate::tui::logging::to_file(l.at_s, &l.text);
        }
        self.notice = Some(note);
        true
    }

    pub(super) fn toggle_pause(&mut self) -> Option<Command> {
        if self.session_over() || self.refused_in_shard() {
            return None;
        }
        if self.holding() {
            self.notice = Some("every cell is done: r re-runs the selected cell, q quits".into());
            return None;
        }
        let paused = self.paused();
        self.pause_intent = Some(!paused);
        Some(if paused { Command::Resume } else { Command::Pause })
    }

    pub(super) fn skip(&mut self) -> Option<Command> {
        if self.session_over() || self.refused_in_shard() {
            return None;
        }
        let sel = self.selected?;
        if Some(sel) == self.session.current {
            return Some(Command::Skip(None));
        }
        if self.status_of(sel) == Some(&CellStatus::Pending) {
            return Some(Command::Skip(Some(sel)));
        }
        self.notice = Some("skip: select the running cell or a pending one".into());
        None
    }

    pub(super) fn rerun(&mut self) -> Option<Command> {
        if self.session_over() || self.refused_in_shard() {
            return None;
        }
        let sel = self.selected?;
        match self.status_of(sel) {
            Some(s) if s.is_final() && !matches!(s, CellStatus::Skipped(_)) => Some(Command::Rerun(sel)),
            Some(CellStatus::Skipped(_)) => {
                self.notice = Some("re-run: this cell does not fit in the KV cache".into());
                None
            }
            _ => {
                self.notice = Some("re-run: select a finished cell".into());
                None
            }
        }
    }

    pub(super) fn knob(&mut self, k: Knob) -> Option<Command> {
        if self.session_over() || self.refused_in_shard() {
            return None;
        }
        if self.session.current.is_none() || self.paused() {
            self.notice = Some(format!("{}: no cell is running", k.sign()));
            return None;
        }
        Some(Command::Knob(k))
    }

    /// `x`: stops the session of the sweep's running parameter set; the sweep records the set
    /// skipped, stops its server and goes on with the next one.
    pub(super) fn skip_set(&mut self) -> Option<Command> {
        if self.set_line.is_none() {
            self.notice = Some("x skips a parameter set of a sweep (run --server-cmd)".into());
            return None;
        }
        if self.session_over() {
            return None;
        }
        self.skip_set = true;
        self.stopping = true;
        Some(Command::Stop)
    }

    pub(super) fn save(&mut self) -> Option<Command> {
        if self.runner_done {
            self.notice = Some(format!("report written: {}", self.session.report_path));
            return None;
        }
        Some(Command::Save)
    }
}
