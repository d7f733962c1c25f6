//! The process's exit codes, in one place (README "Exit codes"), and how a finished session
//! maps to one.

use crate::session::snapshot::SessionSnapshot;
use crate::session::state::CellStatus;
use crate::signal::Signal;
use crate::tui::Abandoned;
use std::process::ExitCode;

/// The session finished, every cell measured or skipped, and the report is at its path.
pub const SUCCESS: u8 = 0;
/// An unexpected internal error (e.g. the async runtime could not start).
pub const FAILURE: u8 = 1;
/// `compare` only: a headline figure of NEW regressed beyond the threshold against BASE.
pub const REGRESSION: u8 = 1;
/// Bad command line, in every subcommand: an unknown or invalid flag (clap's own code), a value
/// out of range, an `--out` that cannot be written or would replace a file without
/// `--overwrite`, a `--resume` file that cannot be continued. Nothing was sent.
pub const USAGE: u8 = 2;
/// Preflight failed (target unreachable, no model, unusable plan): no load was sent.
pub const PREFLIGHT: u8 = 3;
/// The session finished but some cells errored (every request of theirs failed), which
/// `run --allow-errors` turns into [`SUCCESS`]; or it halted before its last cell because
/// retrying could not help (the report's `halted` says why), which `--allow-errors` does not
/// excuse: planned cells never ran.
pub const CELLS_ERRORED: u8 = 4;
/// The report could not be written to its path; its last version went to the fallback file
/// named on stderr.
pub const REPORT_NOT_SAVED: u8 = 5;
/// The operator quit the monitor (`q`, `y`) before every cell had an outcome: the running cell
/// recorded, the report has `complete: false` (and `--resume` continues it).
pub const QUIT: u8 = 6;
/// Interrupted by SIGHUP (128 + 1): the running cell recorded, the report has `complete: false`.
pub const HANGUP: u8 = 129;
/// Interrupted by SIGINT or Ctrl-C (128 + 2).
pub const INTERRUPTED: u8 = 130;
/// Interrupted by SIGTERM (128 + 15).
pub const TERMINATED: u8 = 143;

/// How a session ended, as far as its exit code cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SessionEnd {
    /// Stopped by a signal (or Ctrl-C typed in the monitor, as [`Signal::Interrupt`]).
    pub interrupted: Option<Signal>,
    /// Stopped by the operator quitting the monitor (`q`, `y`) mid-session.
    pub quit: bool,
    /// The final report is not at its path.
    pub report_lost: bool,
    /// Cells that errored.
    pub errored_cells: usize,
    /// `--allow-errors`: errored cells do not fail the run.
    pub allow_errors: bool,
    /// The session halted on its own before its last cell (the report's `halted`).
    pub halted: bool,
}

impl SessionEnd {
    /// The exit code: an interruption first (a signal, then the operator's quit), then a report
    /// not saved, then a halt, then errored cells.
    pub fn code(&self) -> u8 {
        match *self {
            Self { interrupted: Some(s), .. } => s.exit_code(),
            Self { quit: true, .. } => QUIT,
            Self { report_lost: true, .. } => REPORT_NOT_SAVED,
            Self { halted: true, .. } => CELLS_ERRORED,
            Self { errored_cells: 1.., allow_errors: false, .. } => CELLS_ERRORED,
            _ => SUCCESS,
        }
    }

    /// As a process exit code.
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(self.code())
    }
}

/// The number of cells of `snap` whose last attempt errored.
pub fn errored_cells(snap: &SessionSnapshot) -> usize {
    snap.cells.iter().filter(|c| c.status == CellStatus::Errored).count()
}

/// The signal that stopped a session the caller saw interrupted: the process's first one, or
/// SIGINT for a Ctrl-C typed in the monitor (raw mode makes it a key, not a signal).
pub fn interruption(interrupted: bool) -> Option<Signal> {
    interrupted.then(|| crate::signal::first_received().unwrap_or(Signal::Interrupt))
}

/// The exit code of a session whose monitor or progress ended in `err`: a second Ctrl-C that
/// left at once ([`Abandoned`]) is an interruption (the first signal's code, or 130 for a typed
/// Ctrl-C); any other error is [`FAILURE`] unless a signal came first.
pub fn after_error(err: &anyhow::Error) -> u8 {
    let stopped_by = match err.is::<Abandoned>() {
        true => interruption(true),
        false => crate::signal::first_received(),
    };
    stopped_by.map_or(FAILURE, Signal::exit_code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interruption_wins_then_the_lost_report_then_errored_cells() {
        let end = |interrupted, report_lost, errored_cells, allow_errors| {
            SessionEnd { interrupted, quit: false, report_lost, errored_cells, allow_errors, halted: false }.code()
        };
        assert_eq!(end(None, false, 0, false), SUCCESS);
        assert_eq!(end(None, false, 2, false), CELLS_ERRORED);
        assert_eq!(end(None, false, 2, true), SUCCESS);
        assert_eq!(end(None, true, 2, true), REPORT_NOT_SAVED);
        assert_eq!(end(Some(Signal::Terminate), true, 2, false), TERMINATED);
        assert_eq!(end(Some(Signal::Hangup), false, 0, false), HANGUP);
        assert_eq!(end(Some(Signal::Interrupt), false, 0, false), INTERRUPTED);
        let quit = |interrupted, report_lost| {
            SessionEnd { interrupted, quit: true, report_lost, errored_cells: 1, allow_errors: false, halted: true }
                .code()
        };
        assert_eq!(quit(None, false), QUIT);
        assert_eq!(quit(None, true), QUIT, "a quit, like a signal, comes before a lost report");
        assert_eq!(quit(Some(Signal::Terminate), false), TERMINATED);
    }

    #[test]
    fn a_halt_fails_the_run_even_with_allow_errors() {
        let halted = |allow_errors, report_lost| {
            SessionEnd { interrupted: None, quit: false, report_lost, errored_cells: 2, allow_errors, halted: true }
                .code()
        };
        assert_eq!(halted(true, false), CELLS_ERRORED, "planned cells never ran");
        assert_eq!(halted(false, false), CELLS_ERRORED);
        assert_eq!(halted(true, true), REPORT_NOT_SAVED);
    }

    #[test]
    fn the_codes_do_not_collide() {
        let codes = [SUCCESS, FAILURE, USAGE, PREFLIGHT, CELLS_ERRORED, REPORT_NOT_SAVED, QUIT, HANGUP, INTERRUPTED];
        let mut seen = std::collections::BTreeSet::new();
        assert!(codes.iter().chain([&TERMINATED]).all(|c| seen.insert(*c)), "{codes:?}");
    }

    #[test]
    fn a_second_ctrl_c_is_an_interruption_and_other_errors_a_failure() {
        // No signal reaches the unit tests' process: a typed Ctrl-C counts as SIGINT.
        assert_eq!(after_error(&Abandoned.into()), INTERRUPTED);
        assert_eq!(after_error(&anyhow::anyhow!("cannot draw")), FAILURE);
    }
}
