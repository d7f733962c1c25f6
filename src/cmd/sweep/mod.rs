//! `run --server-cmd`: the engine-config sweep (issue 25 part 1). For each parameter set, in
//! order: start the server (`server`), wait until it answers and read what it resolved
//! (`ready`), run the plan against it as a normal session, stop it (`set`); one report for the
//! whole sweep (`state`), every set's session nested in it. Exit codes (`src/cmd/exit.rs`): a
//! set whose server did not start, or whose session could not, counts as an errored cell (4,
//! accepted by `--allow-errors`); a signal, the operator's quit and a lost report as for a
//! session.

pub(crate) mod ready;
pub(crate) mod secrets;
pub(crate) mod server;
mod set;
mod state;

use super::exit::{self, SessionEnd};
use super::headless::Printer;
use super::session;
use crate::cli::run::RunArgs;
use crate::config::sweep::SweepConfig;
use crate::load::backend::{HttpBackend, SharedBackend};
use crate::load::request::ApiKey;
use crate::report::sweep::{SweepSection, SweepSet};
use crate::report::writer::ReportWriter;
use crate::signal::Signals;
use set::{SetEnd, Why};
use state::Shared;
use std::process::ExitCode;
use std::sync::Arc;

/// A sweep under way.
pub(crate) struct Sweep {
    /// The flags, sweep flags included.
    args: RunArgs,
    /// The checked sweep.
    sweep: SweepConfig,
    /// The record of every set, behind a lock.
    shared: Shared,
    /// The report file.
    writer: ReportWriter,
    /// SIGINT, SIGTERM and SIGHUP, for the whole sweep.
    signals: Signals,
    /// Sets run in the monitor (else headless).
    monitor: bool,
    /// The session's API key (never printed or saved).
    key: Option<ApiKey>,
    /// The transport of the readiness checks.
    backend: SharedBackend,
    /// The sweep's own progress lines (stderr and `--log-file`).
    out: Printer,
    /// Errored cells over every set.
    errored_cells: usize,
    /// The last write of the report failed (what was said).
    lost: Option<String>,
    /// The operator left the monitor at once (a second Ctrl-C): no grace for the server.
    abandoned: bool,
}

impl Sweep {
    /// One progress line.
    fn say(&mut self, line: &str) {
        self.out.line(&format!("sweep: {line}"));
    }

    /// Writes the report as it stands.
    fn save(&mut self) {
        self.lost = state::save(&self.shared, &self.writer).err();
    }
}

/// The sweep's section before any set runs: every set pending.
fn section(sweep: &SweepConfig, key: Option<&ApiKey>) -> SweepSection {
    SweepSection {
        params: sweep.names.clone(),
        server_cmd: secrets::mask(sweep.server_cmd.raw(), key),
        base_url: crate::load::client::redact_url(sweep.base_url.raw()),
        ready_timeout_s: sweep.ready_timeout.as_secs_f64(),
        grace_s: sweep.grace.as_secs_f64(),
        sets: sweep.sets.iter().enumerate().map(|(i, s)| SweepSet::pending(i + 1, s.clone())).collect(),
    }
}

/// Runs the sweep `sweep` of `args`: checks every flag as the first set will run them (exit 2
/// before any server starts), then each set in turn; prints every set's tables and the sets
/// side by side at the end.
pub(crate) async fn run(args: RunArgs, sweep: SweepConfig) -> anyhow::Result<ExitCode> {
    // One seed for every set (drawn now when not given), so the sets send the same prompts.
    let _ = args.session_seed();
    let (cfg, prior) = match set::args_for(&args, &sweep, 0, 1).to_session() {
        Ok(both) => both,
        Err(e) => return Ok(session::usage(&e)),
    };
    let drawn = cfg.settings().get("seed").filter(|_| args.seed.is_none()).cloned();
    let checked = session::check_out(cfg.out.as_deref(), cfg.out_dir.as_deref(), args.overwrite, None)
        .and_then(|()| session::check_log_file(args.log_file.as_deref(), cfg.out.as_deref()));
    if let Err(e) = checked {
        return Ok(session::usage(&e));
    }
    let streams = u64::from(cfg.conc.iter().copied().max().unwrap_or(1));
    let limits = crate::fdlimit::prepare(streams).and_then(|()| crate::oslimits::check(streams, &cfg.source_addrs));
    if let Err(e) = limits {
        return Ok(session::usage(&e));
    }
    let writer = match (&cfg.out, &cfg.out_dir) {
        (None, Some(dir)) => ReportWriter::in_dir(dir, std::time::SystemTime::now()),
        _ => ReportWriter::new(cfg.out.clone()),
    };
    let monitor = session::printer(args.headless || args.vllm.disable_tqdm, None)?.is_none();
    let backend: SharedBackend =
        Arc::new(HttpBackend::from_builder(crate::net::client_builder)?.with_sources(&cfg.source_addrs));
    let shared = Shared::new(section(&sweep, cfg.api_key.as_ref()), &cfg, &prior);
    let mut sw = Sweep {
        out: Printer::stderr(args.log_file.as_deref())?,
        signals: Signals::new()?,
        key: cfg.api_key.clone(),
        args,
        sweep,
        shared,
        writer,
        monitor,
        backend,
        errored_cells: 0,
        lost: None,
        abandoned: false,
    };
    sw.save();
    let n = sw.sweep.sets.len();
    let names = match sw.sweep.names.is_empty() {
        true => "without parameters".to_string(),
        false => format!("of {}", sw.sweep.names.join(", ")),
    };
    let mut banner = format!("{n} set(s) {names}; report: {}", sw.writer.path().display());
    // The seed every set's seeded plan uses, when it was drawn here (as a single run says it).
    if let Some(seed) = drawn {
        banner.push_str(&format!("; seed {seed} (drawn for this sweep: --seed {seed} sends its prompts again)"));
    }
    sw.say(&banner);
    let mut why = None;
    for i in 0..n {
        if let SetEnd::Stop(w) = sw.run_set(i).await {
            why = Some(w);
            break;
        }
    }
    Ok(finish(sw, why))
}

/// Writes the final report, prints it, says what failed, and gives the exit code.
fn finish(mut sw: Sweep, why: Option<Why>) -> ExitCode {
    sw.shared.lock().stopped = why.is_some();
    sw.save();
    let report = sw.shared.report();
    let _ = super::run::print_tables(&report, sw.args.ascii);
    if let Some(lost) = &sw.lost {
        crate::err_line!("error: {lost}");
    }
    let (failed, halted) = {
        let st = sw.shared.lock();
        (st.failed_sets(), st.halted())
    };
    let end = SessionEnd {
        interrupted: match &why {
            Some(Why::Signal(s)) => Some(*s),
            _ => None,
        },
        quit: why == Some(Why::Quit),
        report_lost: sw.lost.is_some(),
        errored_cells: sw.errored_cells + failed,
        allow_errors: sw.args.allow_errors,
        halted,
    };
    let path = sw.writer.path().display().to_string();
    match &why {
        Some(Why::Failure(e)) => {
            crate::err_line!("error: {}; the report is at {path}", crate::text_safe::line(e));
            return ExitCode::from(exit::FAILURE);
        }
        Some(Why::Quit) => {
            crate::err_line!("quit before the last set: {path} has complete: false; exit {}", exit::QUIT)
        }
        Some(Why::Signal(s)) => crate::err_line!("{}: the sweep stopped; {path} has every finished set", s.name()),
        None if halted => crate::err_line!("a set's session halted before its last cell: exit {}", exit::CELLS_ERRORED),
        None if end.errored_cells > 0 && !end.allow_errors => crate::err_line!(
            "{failed} set(s) failed and {} cell(s) errored: exit {} (--allow-errors accepts them)",
            sw.errored_cells,
            exit::CELLS_ERRORED
        ),
        None => {}
    }
    end.exit_code()
}
