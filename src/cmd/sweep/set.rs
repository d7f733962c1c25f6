//! One parameter set of a sweep: pick a port, start its server, wait until it answers (or
//! record why it never did, with its log's last lines), read its settings, run the plan against
//! it as a normal session (`session::start_continuing`, shown by the monitor or the headless
//! printer), then stop the server. Every return path stops or drops the [`Server`], so no
//! server outlives its set.

use super::Sweep;
use super::ready::{TAIL_LINES, free_port, log_tail, server_settings, wait_ready};
use super::secrets::mask;
use super::server::Server;
use super::state::{log_path, mark};
use crate::cli::run::RunArgs;
use crate::config::MetricsEndpoint;
use crate::config::sweep::SweepConfig;
use crate::load::client::ApiClient;
use crate::report::json::SessionReport;
use crate::report::sweep::SetStatus;
use crate::session::SessionHandles;
use crate::signal::{Signal, Signals};
use crate::tui::{Ending, SetLine};
use std::time::{Duration, Instant};

/// Why the sweep stops before its last set.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Why {
    /// A signal (or Ctrl-C typed in the monitor).
    Signal(Signal),
    /// The operator quit the monitor.
    Quit,
    /// The monitor or the progress failed (one line).
    Failure(String),
}

/// What comes after a set.
pub(crate) enum SetEnd {
    /// The next set.
    Next,
    /// Nothing: the sweep stops.
    Stop(Why),
}

/// `args` as set `i` runs them, its server on `port`: the target and metrics pages expanded,
/// no sweep flags left.
pub(crate) fn args_for(args: &RunArgs, sweep: &SweepConfig, i: usize, port: u16) -> RunArgs {
    let values = sweep.values(i, port);
    let mut a = args.clone();
    a.base_url = Some(sweep.base_url.expand(&values));
    a.metrics_url = sweep
        .metrics
        .iter()
        .map(|(name, url)| MetricsEndpoint { name: name.expand(&values), url: url.expand(&values) })
        .collect();
    a.sweep.server_cmd = None;
    a.sweep.server_param.clear();
    a.sweep.server_params = None;
    a
}

/// The page the settings are read from: the first `--metrics-url`, else `<base>/metrics`;
/// none with `--no-metrics`.
fn settings_page(args: &RunArgs, base: &str) -> Option<String> {
    match (args.no_metrics, args.metrics_url.first()) {
        (true, _) => None,
        (false, Some(m)) => Some(m.url.clone()),
        (false, None) => Some(crate::session::preflight::default_metrics(base).url),
    }
}

/// Stops `server`: SIGTERM, SIGKILL after the grace or at once on a signal; how it ended and
/// the signal, if one came.
async fn stop(server: &mut Server, grace: Duration, signals: &mut Signals) -> (String, Option<Signal>) {
    let mut got = None;
    let how = server.stop(grace, async { got = Some(signals.recv().await) }).await;
    (how, got)
}

/// How the session of a set ended, as the sweep records it.
fn outcome(ended: anyhow::Result<(SessionReport, Ending)>) -> (Option<SessionReport>, SetStatus, SetEnd) {
    let signal = || crate::cmd::exit::interruption(true).unwrap_or(Signal::Interrupt);
    match ended {
        Ok((r, Ending::Finished)) => (Some(r), SetStatus::Done, SetEnd::Next),
        Ok((r, Ending::SkippedSet)) => (Some(r), SetStatus::SkippedByOperator, SetEnd::Next),
        Ok((r, Ending::Interrupted)) => (Some(r), SetStatus::Stopped, SetEnd::Stop(Why::Signal(signal()))),
        Ok((r, Ending::Quit)) => (Some(r), SetStatus::Stopped, SetEnd::Stop(Why::Quit)),
        Err(e) if e.is::<crate::tui::Abandoned>() => (None, SetStatus::Stopped, SetEnd::Stop(Why::Signal(signal()))),
        Err(e) => (None, SetStatus::Stopped, SetEnd::Stop(Why::Failure(format!("{e:#}")))),
    }
}

/// A set's server, up and answering.
struct Up {
    server: Server,
    /// The flags the set's session runs with (its target expanded).
    args: RunArgs,
    /// What the monitor's set line says.
    line: SetLine,
}

impl Sweep {
    /// Runs set `i` (from 0) to its end.
    pub(crate) async fn run_set(&mut self, i: usize) -> SetEnd {
        let title = {
            let st = self.shared.lock();
            st.section.title(&st.section.sets[i])
        };
        let Up { mut server, args, line } = match self.bring_up(i, &title).await {
            Ok(up) => up,
            Err(end) => return end,
        };
        let (report, status, mut end) = match self.session(i, args, line).await {
            Ok(done) => done,
            Err(error) => {
                self.say(&format!("{title}: its session could not start: {error}"));
                let warn = format!("{title}: its session could not start: {error}");
                self.shared.set(i, |s| s.error = Some(error));
                self.shared.lock().warnings.push(warn);
                (None, SetStatus::Errored, SetEnd::Next)
            }
        };
        // A second Ctrl-C in the monitor leaves at once: the server gets no grace either.
        let grace = if self.abandoned { Duration::ZERO } else { self.sweep.grace };
        let (how, signal) = stop(&mut server, grace, &mut self.signals).await;
        if let (Some(s), SetEnd::Next) = (signal, &end) {
            end = SetEnd::Stop(Why::Signal(s));
        }
        self.shared.set(i, |s| {
            s.server_exit = Some(how.clone());
            if let Some(r) = report {
                s.report = Some(Box::new(r));
            }
        });
        mark(&self.shared, i, status);
        self.save();
        self.say(&format!("{title}: {}; its server stopped ({how})", status.as_str()));
        end
    }

    /// Starts set `i`'s server on a free port and waits until it answers, then reads what it
    /// resolved; the set's end instead when it did not come up (or a signal came).
    async fn bring_up(&mut self, i: usize, title: &str) -> Result<Up, SetEnd> {
        let port = free_port().map_err(|e| self.failed(i, title, format!("no free loopback port: {e}"), None))?;
        let (args, values) = (args_for(&self.args, &self.sweep, i, port), self.sweep.values(i, port));
        let cmd = self.sweep.server_cmd.expand(&values);
        let shown = mask(&cmd, self.key.as_ref());
        let log = log_path(self.writer.path(), i + 1);
        self.shared.set(i, |s| {
            (s.port, s.command, s.log) = (Some(port), Some(shown.clone()), Some(log.display().to_string()));
        });
        mark(&self.shared, i, SetStatus::Starting);
        self.save();
        self.say(&format!("{title}: starting its server on port {port} (log {}): {shown}", log.display()));
        let started = Instant::now();
        let mut server =
            Server::start(&cmd, &log).map_err(|e| self.failed(i, title, format!("cannot start `sh -c`: {e}"), None))?;
        let base = args.base_url.clone().unwrap_or_default();
        let client = ApiClient::new(self.backend.clone(), &base, self.key.clone());
        let ready = tokio::select! {
            r = wait_ready(&mut server, &client, self.sweep.ready_timeout) => r,
            s = self.signals.recv() => return Err(self.stopped_starting(i, title, &mut server, s).await),
        };
        if let Err(why) = ready {
            let (how, _) = stop(&mut server, self.sweep.grace, &mut self.signals).await;
            return Err(self.failed(i, title, why.describe(), Some(how)));
        }
        let startup = started.elapsed();
        let settings = server_settings(&client, settings_page(&args, &base).as_deref(), &log, self.key.as_ref()).await;
        let up = crate::report::sweep::seconds(startup.as_secs_f64());
        self.say(&format!("{title}: ready in {up} s{}", settings_line(&settings)));
        self.shared.set(i, |s| (s.startup_s, s.server) = (Some(startup.as_secs_f64()), Some(settings)));
        mark(&self.shared, i, SetStatus::Running);
        self.save();
        let (index, total, params) = (i + 1, self.sweep.sets.len(), self.sweep.describe(i));
        let line = SetLine { index, total, params, startup, log: log.display().to_string() };
        Ok(Up { server, args, line })
    }

    /// Runs the session of set `i` against its server (`args`), in the monitor (with `line`)
    /// or headless; the report, the set's status and what comes next. An error is a session
    /// that could not start (preflight), said in one line.
    async fn session(
        &mut self,
        i: usize,
        args: RunArgs,
        line: SetLine,
    ) -> Result<(Option<SessionReport>, SetStatus, SetEnd), String> {
        let (mut cfg, prior) = args.to_session()?;
        cfg.out = Some(self.writer.path().to_path_buf());
        cfg.out_dir = None;
        cfg.hold_after_last = false;
        cfg.report_frame = Some(self.shared.frame(i));
        let handles: SessionHandles = tokio::select! {
            h = crate::session::start_continuing(cfg, prior) => h.map_err(|e| crate::text_safe::line(&format!("{e:#}")).into_owned())?,
            s = self.signals.recv() => {
                self.say(&format!("{}: interrupted during preflight", s.name()));
                return Ok((None, SetStatus::Stopped, SetEnd::Stop(Why::Signal(s))));
            }
        };
        let snapshot = handles.snapshot.clone();
        let log_file = self.args.log_file.clone();
        let ended = match self.monitor {
            false => match crate::cmd::headless::Printer::stderr(log_file.as_deref()) {
                Ok(printer) => super::super::run::drive(handles, &mut self.signals, printer)
                    .await
                    .map(|(r, stopped)| (r, if stopped { Ending::Interrupted } else { Ending::Finished })),
                Err(e) => Err(e),
            },
            true => {
                let opts = crate::tui::TuiOptions { log_file, set_line: Some(line), ..Default::default() };
                crate::tui::run_tui(handles, opts, &mut self.signals).await
            }
        };
        self.errored_cells += crate::cmd::exit::errored_cells(&snapshot.borrow());
        self.abandoned = ended.as_ref().err().is_some_and(|e| e.is::<crate::tui::Abandoned>());
        let (report, status, end) = outcome(ended);
        if let SetEnd::Stop(Why::Failure(e)) = &end {
            self.say(&format!("error: {e}"));
        }
        Ok((report, status, end))
    }

    /// Records set `i` as failed to start (`error`, the server's exit `how`, its log's tail)
    /// and goes on.
    fn failed(&mut self, i: usize, title: &str, error: String, how: Option<String>) -> SetEnd {
        let log = self.shared.lock().section.sets[i].log.clone();
        let tail = log.map(|l| log_tail(std::path::Path::new(&l), TAIL_LINES, self.key.as_ref())).unwrap_or_default();
        self.say(&format!("{title}: failed to start: {error}"));
        for l in tail.iter().skip(tail.len().saturating_sub(5)) {
            self.say(&format!("  | {l}"));
        }
        self.shared.set(i, |s| (s.error, s.log_tail, s.server_exit) = (Some(error.clone()), tail, how));
        self.shared.lock().warnings.push(format!("{title} failed to start: {error}"));
        mark(&self.shared, i, SetStatus::FailedToStart);
        self.save();
        SetEnd::Next
    }

    /// A signal came while set `i`'s server started: the server is stopped, the set recorded
    /// stopped, and the sweep stops.
    async fn stopped_starting(&mut self, i: usize, title: &str, server: &mut Server, s: Signal) -> SetEnd {
        self.say(&format!("{}: stopping {title}'s server and writing the report (again to kill it now)", s.name()));
        let (how, _) = stop(server, self.sweep.grace, &mut self.signals).await;
        self.shared.set(i, |set| set.server_exit = Some(how));
        mark(&self.shared, i, SetStatus::Stopped);
        self.save();
        SetEnd::Stop(Why::Signal(s))
    }
}

/// ` (max_num_seqs 8, num_gpu_blocks 4000, block_size 16)`: the settings read, if any.
fn settings_line(s: &crate::report::sweep::ServerSettings) -> String {
    let parts: Vec<String> =
        [("max_num_seqs", s.max_num_seqs), ("num_gpu_blocks", s.num_gpu_blocks), ("block_size", s.block_size)]
            .iter()
            .filter_map(|(k, v)| v.map(|v| format!("{k} {v}")))
            .collect();
    match parts.is_empty() {
        true => String::new(),
        false => format!(" ({})", parts.join(", ")),
    }
}
