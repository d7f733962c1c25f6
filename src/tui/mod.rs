//! The live full-screen monitor of a session (`llm-decode-bench run` on a terminal).
//!
//! Event in, action for intent, command out: terminal events become [`app::Action`]s
//! ([`keymap`]), [`app::App::update`] is synchronous and returns [`Command`]s for the runner,
//! and the views draw the latest immutable snapshots at a bounded frame rate
//! ([`event_loop::run_loop`]). [`run_tui`] owns the real terminal through a [`TerminalGuard`].

pub mod app;
pub(crate) mod event_loop;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod fleet;
pub(crate) mod grid;
pub(crate) mod keymap;
pub mod logging;
pub mod observer;
pub mod observer_app;
pub(crate) mod terminal;
pub(crate) mod theme;
pub(crate) mod view;

#[cfg(test)]
mod tests_escapes;

pub use app::{Action, App, Mode, RunState};
pub use event_loop::{Abandoned, ChannelInput, Ending, LoopOptions, run_loop, run_set_loop};
pub use grid::Dir;
pub use terminal::{CrosstermTerminal, TerminalControl, TerminalGuard};
pub use view::sweep::SetLine;

use crate::cell::control::Command;
use crate::report::json::SessionReport;
use crate::session::SessionHandles;
use crate::signal::Signals;
use crossterm::event::{Event, EventStream, KeyCode, KeyEvent, KeyModifiers};
use futures_util::stream::{self, Stream, StreamExt};
use std::path::PathBuf;

/// Options of the monitor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TuiOptions {
    /// Also write log lines to this file (`--log-file`).
    pub log_file: Option<PathBuf>,
    /// Most frames per second for data updates (default 20, at most 30).
    pub fps: u16,
    /// The parameter set of a sweep the session belongs to (`run --server-cmd`): shown under
    /// the header, `x` skips it, and the monitor leaves once the set's session ends.
    pub set_line: Option<SetLine>,
}

impl Default for TuiOptions {
    fn default() -> Self {
        Self { log_file: None, fps: 20, set_line: None }
    }
}

/// Key events from the terminal, with SIGINT, SIGTERM and SIGHUP delivered as Ctrl-C (raw mode
/// turns a typed Ctrl-C into a key; a signal from elsewhere must stop the session the same way,
/// and `crate::signal::first_received` keeps which one it was for the exit code).
fn terminal_input(signals: &mut Signals) -> impl Stream<Item = Event> + Unpin + '_ {
    let keys = EventStream::new().filter_map(|r| std::future::ready(r.ok()));
    let signalled = stream::unfold(signals, |signals| async {
        signals.recv().await;
        Some((Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)), signals))
    });
    stream::select(keys, Box::pin(signalled))
}

/// Runs the monitor over a started session until the operator quits and the runner has written
/// the report. Returns the final report and how the session ended: finished, interrupted
/// (Ctrl-C or one of `signals`) or quit by the operator ([`Ending`]).
///
/// Owns the terminal for its whole life: raw mode, alternate screen and a hidden cursor, restored
/// on every exit path (errors and panics included). Logs go to the log panel and `log_file`.
pub async fn run_tui(
    handles: SessionHandles,
    opts: TuiOptions,
    signals: &mut Signals,
) -> anyhow::Result<(SessionReport, Ending)> {
    let commands = handles.commands.clone();
    let logs = logging::install(opts.log_file.as_deref())?;
    let guard = TerminalGuard::enter(CrosstermTerminal)?;
    let backend = ratatui::backend::CrosstermBackend::new(std::io::stdout());
    let result = match ratatui::Terminal::new(backend) {
        Ok(mut terminal) => {
            let lopts = LoopOptions { fps: opts.fps, log_widget: true };
            run_set_loop(&mut terminal, handles, terminal_input(signals), lopts, opts.set_line).await
        }
        Err(e) => Err(e.into()),
    };
    if result.is_err() {
        // The runner keeps the load going otherwise; the report holds what finished.
        let _ = commands.send(Command::Stop);
    }
    drop(guard);
    drop(logs);
    result
}
