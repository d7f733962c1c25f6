//! `llm-decode-bench run`: the live monitor on a terminal, or headless progress on stderr; the
//! tables of `tests/fixtures/seed_000.txt` on stdout at the end.

use super::headless::{Printer, current, heartbeat_ticks};
use crate::cell::control::Command;
use crate::cli::run::RunArgs;
use crate::report::formats::{RenderSettings, ReportFormat};
use crate::report::json::SessionReport;
use crate::session::{SessionHandles, start};
use std::io::IsTerminal;
use std::process::ExitCode;

/// Runs a session: in the live monitor when stdout is a terminal (unless `--headless`),
/// otherwise with progress on stderr (and `--log-file`); prints the final tables either way.
pub async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let cfg = args.to_config().map_err(anyhow::Error::msg)?;
    let headless = args.headless || !std::io::stdout().is_terminal();
    // The log file is opened before preflight, so a bad path fails before any load is sent.
    let printer = if headless { Some(Printer::stderr(args.log_file.as_deref())?) } else { None };
    let handles = start(cfg).await?;
    let (report, interrupted) = match printer {
        Some(printer) => {
            eprintln!("report: {}", handles.report_path.display());
            drive(handles, printer).await?
        }
        None => {
            let opts = crate::tui::TuiOptions { log_file: args.log_file.clone(), ..crate::tui::TuiOptions::default() };
            crate::tui::run_tui(handles, opts).await?
        }
    };
    print_tables(&report, args.ascii);
    Ok(if interrupted { ExitCode::from(130) } else { ExitCode::SUCCESS })
}

/// Prints the final tables of a report on stdout.
pub fn print_tables(report: &SessionReport, ascii: bool) {
    let dim = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let settings = RenderSettings { ascii, dim_ansi: dim };
    let text = ReportFormat::Text.render(report, settings);
    if !text.is_empty() {
        println!("{text}");
    }
}

/// Prints progress with `out` until the session ends: every event, warnings as they happen, a
/// heartbeat every [`HEARTBEAT`](super::headless::HEARTBEAT). The first Ctrl-C stops the
/// session (the report is kept), the second exits at once. Returns the report and whether it
/// was interrupted.
pub async fn drive(mut h: SessionHandles, mut out: Printer) -> anyhow::Result<(SessionReport, bool)> {
    out.reset_clock();
    let mut interrupted = false;
    let mut join = h.join;
    let mut beat = heartbeat_ticks();
    loop {
        tokio::select! {
            report = &mut join => {
                // Events sent just before the end (the final warnings) are still printed.
                while let Ok(ev) = h.events.try_recv() {
                    out.event(&ev, &current(&h.snapshot));
                }
                return Ok((report?, interrupted));
            }
            Some(ev) = h.events.recv() => out.event(&ev, &current(&h.snapshot)),
            _ = beat.tick() => out.heartbeat(&current(&h.snapshot), &h.live.borrow()),
            _ = tokio::signal::ctrl_c() => {
                if interrupted {
                    eprintln!("interrupted again: exiting; the report holds every finished cell");
                    std::process::exit(130);
                }
                interrupted = true;
                eprintln!("stopping: recording the running cell and writing the report (Ctrl-C again to exit now)");
                let _ = h.commands.send(Command::Stop);
            }
        }
    }
}
