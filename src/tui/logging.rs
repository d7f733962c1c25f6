//! Logs while the monitor is up: tracing events go to tui-logger, never to the terminal under
//! the TUI; the panel's lines go to `--log-file` in the headless format ([`to_file`]).
//!
//! [`install`] sets a global subscriber once per process: the tui-logger layer is enabled while
//! a [`LogGuard`] lives, and a stderr layer takes over when it is gone. A program that installs
//! its own global subscriber first should add [`tui_layer`] to it and silence its own terminal
//! output while [`tui_active`] is true.

use crate::cell::control::{Command, RunnerEvent};
use crate::session::log_file::LogFile;
use crate::session::snapshot::SessionSnapshot;
use std::path::Path;
use std::sync::Mutex;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, filter_fn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;

/// True while the monitor owns the terminal.
static TUI_ACTIVE: AtomicBool = AtomicBool::new(false);
static LOGGER: Once = Once::new();
static SUBSCRIBER: Once = Once::new();
/// The `--log-file` of the running monitor.
static FILE: Mutex<Option<LogFile>> = Mutex::new(None);

/// Target of the runner's events in the log.
pub const TARGET: &str = "session";

/// True while the monitor owns the terminal: a program-wide stderr log layer should stay quiet.
pub fn tui_active() -> bool {
    TUI_ACTIVE.load(Ordering::Relaxed)
}

/// The tui-logger layer, enabled only while the monitor is up.
pub fn tui_layer<S>() -> impl Layer<S>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    let active = filter_fn(|_| tui_active());
    tui_logger::TuiTracingSubscriberLayer.with_filter(active).with_filter(LevelFilter::INFO)
}

/// Routes logs to the panel (and `log_file`) until the guard is dropped.
#[must_use = "logs go back to stderr when the guard is dropped"]
pub struct LogGuard(());

impl Drop for LogGuard {
    fn drop(&mut self) {
        TUI_ACTIVE.store(false, Ordering::Relaxed);
        *FILE.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        tui_logger::move_events();
    }
}

/// Starts tui-logger, installs the global subscriber if none is set, and opens `log_file`.
pub fn install(log_file: Option<&Path>) -> anyhow::Result<LogGuard> {
    // The file gets the panel's lines in the headless printer's format (session::log_file).
    let file = log_file.map(LogFile::open).transpose()?;
    *FILE.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = file;
    LOGGER.call_once(|| {
        let _ = tui_logger::init_logger(tui_logger::LevelFilter::Info);
        tui_logger::set_default_level(tui_logger::LevelFilter::Info);
    });
    SUBSCRIBER.call_once(|| {
        let stderr = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(filter_fn(|_| !tui_active()))
            .with_filter(LevelFilter::WARN);
        let subscriber = tracing_subscriber::registry().with(tui_layer()).with(stderr);
        // Another global subscriber may already be set; it should then include `tui_layer`.
        let _ = tracing::subscriber::set_global_default(subscriber);
    });
    TUI_ACTIVE.store(true, Ordering::Relaxed);
    Ok(LogGuard(()))
}

/// Appends a panel line to the monitor's `--log-file`, if it has one: `at_s` is the line's
/// time since the session start, as the panel shows it.
pub fn to_file(at_s: f64, line: &str) {
    if let Some(f) = FILE.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_mut() {
        f.line(at_s, line);
    }
}

fn label(session: &SessionSnapshot, cell: usize) -> String {
    session.cells.get(cell).map_or_else(|| format!("cell {cell}"), |c| c.label.clone())
}

/// The log line of a runner event (`None` for events not worth a line), on one line with the
/// control characters of the server text it quotes escaped (`crate::text_safe`): the panel and
/// `--log-file` both get it.
pub fn event_line(ev: &RunnerEvent, session: &SessionSnapshot) -> Option<String> {
    raw_line(ev, session).map(|l| crate::text_safe::line(&l).into_owned())
}

fn raw_line(ev: &RunnerEvent, session: &SessionSnapshot) -> Option<String> {
    Some(match ev {
        RunnerEvent::CellStarted { cell, run: Some(run), .. } => {
            format!("{}: start ({})", label(session, *cell), run.text())
        }
        RunnerEvent::CellStarted { cell, attempt, .. } if *attempt > 1 => {
            format!("{}: start (attempt {attempt})", label(session, *cell))
        }
        RunnerEvent::CellStarted { cell, .. } => format!("{}: start", label(session, *cell)),
        RunnerEvent::Phase { cell, phase } => format!("{}: {}", label(session, *cell), phase.as_str()),
        RunnerEvent::CellFinished { cell, summary } => format!("{}: {summary}", label(session, *cell)),
        RunnerEvent::Log(msg) => msg.clone(),
        RunnerEvent::Saved(path) => format!("report written: {path}"),
        RunnerEvent::Finished => "session finished".into(),
    })
}

/// The log line of an operator's command, as a person reads it: `operator: skip ctx=0 conc=8`,
/// `operator: re-run r1-hot90-prefix-cache` (cells named by their label, the running one when
/// the command names none).
pub fn operator_line(cmd: &Command, session: &SessionSnapshot) -> String {
    let running = || session.current.map_or_else(|| "the running cell".to_string(), |c| label(session, c));
    let what = match cmd {
        Command::Pause => "pause the load".to_string(),
        Command::Resume => "resume the load".to_string(),
        Command::Skip(Some(cell)) => format!("skip {}", label(session, *cell)),
        Command::Skip(None) => format!("skip {}", running()),
        Command::Rerun(cell) => format!("re-run {}", label(session, *cell)),
        Command::Save => "write the report now".to_string(),
        Command::Stop => "stop the session".to_string(),
        Command::Knob(k) => format!("load knob {} on {}", k.sign(), running()),
    };
    format!("operator: {what}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_monitor_writes_its_log_file_in_the_headless_format() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("session.log");
        let guard = super::install(Some(&path)).expect("opens the log file");
        super::to_file(12.34, "ctx=0 conc=1: start");
        drop(guard);
        super::to_file(13.0, "after the monitor: not written");
        let text = std::fs::read_to_string(&path).expect("the log file");
        let (wall, rest) = text.trim_end().split_once(' ').expect("wall clock first");
        assert!(wall.len() >= 20 && wall.ends_with('Z') && wall.contains('T'), "{wall}");
        assert_eq!(rest, "[   12.3s] ctx=0 conc=1: start", "as cmd::headless::Printer writes it");
    }
}
