//! `llm-decode-bench run`: the live monitor on a terminal, or headless progress on stderr; the
//! tables of `tests/fixtures/seed_000.txt` on stdout at the end.

use crate::cell::control::{Command, RunnerEvent};
use crate::cli::run::RunArgs;
use crate::report::formats::{RenderSettings, ReportFormat};
use crate::report::json::SessionReport;
use crate::session::snapshot::SessionSnapshot;
use crate::session::{SessionHandles, start};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use tokio::sync::watch;
use tokio::time::Instant;

/// Runs a session: in the live monitor when stdout is a terminal (unless `--headless`),
/// otherwise with progress on stderr; prints the final tables either way.
pub async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let cfg = args.to_config().map_err(anyhow::Error::msg)?;
    let handles = start(cfg).await?;
    let (report, interrupted) = if args.headless || !std::io::stdout().is_terminal() {
        eprintln!("report: {}", handles.report_path.display());
        drive(handles).await?
    } else {
        let opts = crate::tui::TuiOptions { log_file: args.log_file.clone(), ..crate::tui::TuiOptions::default() };
        crate::tui::run_tui(handles, opts).await?
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

/// Prints progress until the session ends; the first Ctrl-C stops it (the report is kept),
/// the second exits at once. Returns the report and whether it was interrupted.
pub async fn drive(mut h: SessionHandles) -> anyhow::Result<(SessionReport, bool)> {
    let started = Instant::now();
    let mut interrupted = false;
    let mut join = h.join;
    loop {
        tokio::select! {
            report = &mut join => return Ok((report?, interrupted)),
            Some(ev) = h.events.recv() => progress(&ev, &h.snapshot, started),
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

fn label(snap: &watch::Receiver<Arc<SessionSnapshot>>, cell: usize) -> String {
    snap.borrow().cells.get(cell).map(|c| c.label.clone()).unwrap_or_else(|| format!("cell {cell}"))
}

fn progress(ev: &RunnerEvent, snap: &watch::Receiver<Arc<SessionSnapshot>>, started: Instant) {
    let t = started.elapsed().as_secs_f64();
    match ev {
        RunnerEvent::CellStarted { cell, attempt } => {
            let again = if *attempt > 1 { format!(" (attempt {attempt})") } else { String::new() };
            eprintln!("[{t:7.1}s] {}{again}: start", label(snap, *cell));
        }
        RunnerEvent::Phase { cell, phase } => eprintln!("[{t:7.1}s] {}: {}", label(snap, *cell), phase.as_str()),
        RunnerEvent::CellFinished { cell, summary } => eprintln!("[{t:7.1}s] {}: {summary}", label(snap, *cell)),
        RunnerEvent::Log(msg) => eprintln!("[{t:7.1}s] {msg}"),
        RunnerEvent::Saved(_) | RunnerEvent::Finished => {}
    }
}
