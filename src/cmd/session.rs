//! What `run` and the demo share around a session: the `--out` check and preflight under
//! signals, the monitor or headless progress until the end, the final tables, and the exit code
//! (`src/cmd/exit.rs`).

use super::exit::{self, SessionEnd};
use super::headless::Printer;
use super::run::{drive, print_tables};
use crate::session::SessionHandles;
use crate::signal::Signals;
use crate::tui::Ending;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// How the session is shown.
#[derive(Debug, Clone, Default)]
pub(crate) struct Display {
    /// The monitor's `--log-file`.
    pub log_file: Option<PathBuf>,
    /// Plain ASCII tables (`--ascii`).
    pub ascii: bool,
    /// Errored cells do not fail the run (`--allow-errors`).
    pub allow_errors: bool,
}

/// How a headless session ended: there is no quit key, only signals.
fn ending(interrupted: bool) -> Ending {
    if interrupted { Ending::Interrupted } else { Ending::Finished }
}

/// A usage error: its one line on stderr (control characters escaped), exit 2.
pub(crate) fn usage(msg: &str) -> ExitCode {
    crate::err_line!("error: {}", crate::text_safe::line(msg));
    ExitCode::from(exit::USAGE)
}

/// Checks that the report can be written: `--out`, a path that takes a file and replaces none
/// unless it is the `resumed` file or `overwrite` is given (src/report/clobber.rs); or a default
/// name in `dir` (`--result-dir`, else `sessions/`), which never names an existing file.
pub(crate) fn check_out(
    out: Option<&Path>,
    dir: Option<&Path>,
    overwrite: bool,
    resumed: Option<&Path>,
) -> Result<(), String> {
    match out {
        Some(p) => {
            crate::report::fallback::check_writable(p, "--out")?;
            crate::report::clobber::check_report_path(p, "--out", overwrite, resumed)
        }
        None => {
            let dir = dir.unwrap_or(Path::new(crate::report::writer::DEFAULT_DIR));
            crate::report::fallback::check_writable(&dir.join("report.json"), "the default report file")
        }
    }
}

/// Checks `--log-file`, when given, before any load: appendable and not a session report
/// (the session's own `report` file included).
pub(crate) fn check_log_file(log: Option<&Path>, report: Option<&Path>) -> Result<(), String> {
    log.map_or(Ok(()), |l| crate::report::clobber::check_log_file(l, report))
}

/// The headless printer (with `log_file`) when the session runs without the monitor:
/// `--headless`, or stdout is not a terminal. Opened before preflight, so a bad `--log-file`
/// fails before any load is sent.
pub(crate) fn printer(headless: bool, log_file: Option<&Path>) -> anyhow::Result<Option<Printer>> {
    match headless || !std::io::stdout().is_terminal() {
        true => Ok(Some(Printer::stderr(log_file)?)),
        false => Ok(None),
    }
}

/// Waits for preflight (`starting`) unless a signal comes first. A failed preflight prints its
/// one line and gives exit 3; a signal gives its own code; no load was sent either way. The
/// line goes to `log_file` too, in the headless progress format.
pub(crate) async fn preflight(
    starting: impl Future<Output = anyhow::Result<SessionHandles>>,
    signals: &mut Signals,
    log_file: Option<&Path>,
) -> Result<SessionHandles, ExitCode> {
    let (line, code) = tokio::select! {
        started = starting => match started {
            Ok(h) => return Ok(h),
            // A preflight error may quote the server: its control characters are escaped.
            Err(e) => (format!("error: {}", crate::text_safe::line(&format!("{e:#}"))), ExitCode::from(exit::PREFLIGHT)),
        },
        s = signals.recv() => {
            let line = format!("interrupted ({}) during preflight: no load was sent, no report written", s.name());
            (line, ExitCode::from(s.exit_code()))
        }
    };
    crate::err_line!("{line}");
    if let Some(mut log) = log_file.and_then(|p| Printer::new(Box::new(std::io::sink()), Some(p)).ok()) {
        log.line(&line);
    }
    Err(code)
}

/// Runs a started session to its end, in the monitor on a terminal (unless headless) or with
/// progress on stderr after `banner`; prints the final tables; says on stderr when the report
/// is not at its path or cells errored; returns the exit code.
pub(crate) async fn finish(
    handles: SessionHandles,
    mut signals: Signals,
    display: Display,
    printer: Option<Printer>,
    banner: String,
) -> ExitCode {
    let snapshot = handles.snapshot.clone();
    let saves = handles.saves.clone();
    let path = handles.report_path.clone();
    let ended = if let Some(printer) = printer {
        crate::err_line!("{banner}");
        drive(handles, &mut signals, printer).await.map(|(r, interrupted)| (r, ending(interrupted)))
    } else {
        let opts = crate::tui::TuiOptions { log_file: display.log_file.clone(), ..crate::tui::TuiOptions::default() };
        crate::tui::run_tui(handles, opts, &mut signals).await
    };
    let (report, ending) = match ended {
        Ok(done) => done,
        Err(e) if e.is::<crate::tui::Abandoned>() => {
            crate::err_line!("{e}: {}", path.display());
            return ExitCode::from(exit::after_error(&e));
        }
        Err(e) => {
            crate::err_line!("error: {}", crate::text_safe::line(&format!("{e:#}")));
            return ExitCode::from(exit::after_error(&e));
        }
    };
    // The report is saved; tables that cannot reach stdout (a full disk behind `>`) are lost.
    let _ = print_tables(&report, display.ascii);
    let record = saves.get();
    if record.last_failed {
        let err = record.last_error.as_deref().unwrap_or("unknown error");
        match &record.fallback {
            Some(f) => {
                crate::err_line!(
                    "error: cannot write {} ({err}); the report was saved to {}",
                    path.display(),
                    f.display()
                )
            }
            None => {
                crate::err_line!(
                    "error: cannot write {} ({err}), nor its fallback file: the report is lost",
                    path.display()
                )
            }
        }
    }
    let end = SessionEnd {
        interrupted: exit::interruption(ending.interrupted()),
        quit: ending == Ending::Quit,
        report_lost: record.last_failed,
        errored_cells: exit::errored_cells(&snapshot.borrow()),
        allow_errors: display.allow_errors,
        halted: report.halted.is_some(),
    };
    if end.interrupted.is_none() && end.quit {
        let shown = path.display();
        crate::err_line!(
            "quit before the end: {shown} has complete: false; exit {} (--resume {shown} continues it)",
            exit::QUIT
        );
    } else if let (None, Some(why)) = (end.interrupted, &report.halted) {
        let why = crate::text_safe::line(why);
        crate::err_line!("halted before the last cell ({why}): exit {}", exit::CELLS_ERRORED);
    } else if end.interrupted.is_none() && end.errored_cells > 0 && !end.allow_errors {
        crate::err_line!(
            "{} cell(s) errored (every request failed): exit {} (--allow-errors accepts them)",
            end.errored_cells,
            exit::CELLS_ERRORED
        );
    }
    end.exit_code()
}
