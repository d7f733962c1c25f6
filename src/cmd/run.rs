//! `llm-decode-bench run`: the live monitor on a terminal, or headless progress on stderr; the
//! tables of `tests/fixtures/seed_000.txt` on stdout at the end; the exit code of
//! `src/cmd/exit.rs`.

use super::headless::{Printer, current, heartbeat_ticks};
use super::session;
use crate::cell::control::Command;
use crate::cli::run::RunArgs;
use crate::report::formats::{RenderSettings, ReportFormat};
use crate::report::json::SessionReport;
use crate::session::{SessionHandles, start_continuing};
use crate::signal::{Signal, Signals};
use std::io::IsTerminal;
use std::process::ExitCode;

/// Runs a session: in the live monitor when stdout is a terminal (unless `--headless`),
/// otherwise with progress on stderr (and `--log-file`); prints the final tables either way. Bad flags and an
/// unwritable `--out` exit 2 and a failed preflight 3, before any load is sent.
pub async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    // `--observe` sends no load: it watches a sharded session through Prometheus.
    match args.observing.source(args.prom.prometheus.as_deref()) {
        Err(e) => return Ok(session::usage(&e)),
        Ok(Some(source)) => return super::observe::run(args, source).await,
        Ok(None) => {}
    }
    let host_port = args.vllm.host.is_some() || args.vllm.port.is_some();
    match args.sweep.sweep(args.base_url.as_deref(), host_port, &args.metrics_url, args.resume.is_some()) {
        Err(e) => return Ok(session::usage(&e)),
        Ok(Some(_)) if args.metrics_listen.is_some() => {
            return Ok(session::usage("--metrics-listen does not serve engine-config sweeps (--server-cmd) yet"));
        }
        Ok(Some(sweep)) => return super::sweep::run(args, sweep).await,
        Ok(None) => {}
    }
    let (mut cfg, prior) = match args.to_session() {
        Ok(both) => both,
        Err(e) => return Ok(session::usage(&e)),
    };
    let resumed = prior.resume.as_ref().map(|r| r.path.as_path());
    let checked = session::check_out(cfg.out.as_deref(), cfg.out_dir.as_deref(), args.overwrite, resumed)
        .and_then(|()| session::check_log_file(args.log_file.as_deref(), cfg.out.as_deref()));
    if let Err(e) = checked {
        return Ok(session::usage(&e));
    }
    let streams = cfg.conc.iter().copied().max().unwrap_or(1);
    if let Err(e) = crate::fdlimit::prepare(u64::from(streams)) {
        return Ok(session::usage(&e));
    }
    if let Err(e) = crate::oslimits::check(u64::from(streams), &cfg.source_addrs) {
        return Ok(session::usage(&e));
    }
    let page = match super::metrics_page::start(args.metrics_listen, args.sharding.session_id.is_some(), &mut cfg) {
        Ok(page) => page,
        Err(e) => return Ok(session::usage(&e)),
    };
    // The log file is opened before preflight, so a bad path fails before any load is sent.
    let printer = session::printer(args.headless || args.vllm.disable_tqdm, args.log_file.as_deref())?;
    let drawn = cfg.settings().get("seed").filter(|_| args.seed.is_none()).cloned();
    // In the monitor, finished cells can be re-run until the operator quits.
    cfg.hold_after_last = printer.is_none();
    let mut signals = Signals::new()?;
    let handles = match session::preflight(start_continuing(cfg, prior), &mut signals, args.log_file.as_deref()).await {
        Ok(h) => h,
        Err(code) => return Ok(code),
    };
    let mut banner = format!("report: {}", handles.report_path.display());
    // Headless, the SLO the good counts are judged against is named once, up front.
    if let Some(slo) = handles.snapshot.borrow().slo {
        banner.push_str(&format!("; {}", slo.describe()));
    }
    if let Some(seed) = drawn {
        banner.push_str(&format!("; seed {seed} (drawn for this session: --seed {seed} sends its prompts again)"));
    }
    let display =
        session::Display { log_file: args.log_file.clone(), ascii: args.ascii, allow_errors: args.allow_errors };
    let code = session::finish(handles, signals, display, printer, banner).await;
    super::metrics_page::linger(page.as_deref(), args.metrics_linger).await;
    Ok(code)
}

/// Prints the final tables of a report on stdout (a closed stdout is not an error,
/// `src/stdio.rs`).
pub fn print_tables(report: &SessionReport, ascii: bool) -> std::io::Result<()> {
    let dim = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let settings = RenderSettings { ascii, dim_ansi: dim, width: RenderSettings::terminal_width() };
    let text = ReportFormat::Text.render(report, settings);
    match text.is_empty() {
        true => Ok(()),
        false => crate::out_line!("{text}"),
    }
}

/// Prints progress with `out` until the session ends: every event, warnings as they happen, a
/// heartbeat every [`HEARTBEAT`](super::headless::HEARTBEAT). The first signal (SIGINT, SIGTERM,
/// SIGHUP) stops it (the running cell is recorded, the report kept), the second exits at once
/// with the first one's code. Returns the report and whether it was interrupted.
pub async fn drive(
    mut h: SessionHandles,
    signals: &mut Signals,
    mut out: Printer,
) -> anyhow::Result<(SessionReport, bool)> {
    out.reset_clock();
    let mut first: Option<Signal> = None;
    let mut join = h.join;
    let mut beat = heartbeat_ticks();
    loop {
        tokio::select! {
            report = &mut join => {
                // Events sent just before the end (the final warnings) are still printed.
                while let Ok(ev) = h.events.try_recv() {
                    out.event(&ev, &current(&h.snapshot));
                }
                return Ok((report?, first.is_some()));
            }
            Some(ev) = h.events.recv() => out.event(&ev, &current(&h.snapshot)),
            _ = beat.tick() => out.heartbeat(&current(&h.snapshot), &h.live.borrow()),
            s = signals.recv() => {
                if let Some(f) = first {
                    crate::err_line!("{}: exiting now; the report holds every finished cell", s.name());
                    // No destructor runs past here: a sweep's server is killed now.
                    super::sweep::server::kill_all_now();
                    std::process::exit(i32::from(f.exit_code()));
                }
                first = Some(s);
                crate::err_line!(
                    "{}: stopping: recording the running cell and writing the report (again to exit now)",
                    s.name()
                );
                let _ = h.commands.send(Command::Stop);
            }
        }
    }
}
