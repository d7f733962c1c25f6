//! The headless progress printer: every runner event (warnings included, as `warning: …`) as
//! one line on stderr, a heartbeat with the session's progress and ETA at least every
//! [`HEARTBEAT`], and, with `--log-file`, the same lines in that file with a wall-clock stamp.

use crate::cell::control::{LiveAttempt, Phase, RunnerEvent};
use crate::session::progress::short_duration;
use crate::session::snapshot::SessionSnapshot;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// Longest silence of the headless printer while a session runs.
pub const HEARTBEAT: Duration = Duration::from_secs(10);

/// Where headless progress goes: a terminal stream (stderr) and an optional log file.
pub struct Printer {
    out: Box<dyn Write + Send>,
    log: Option<crate::session::log_file::LogFile>,
    started: Instant,
}

impl Printer {
    /// Progress on stderr and, when given, appended to `log_file` (opened now, so a bad path
    /// fails before any load is sent).
    pub fn stderr(log_file: Option<&Path>) -> anyhow::Result<Self> {
        Self::new(Box::new(std::io::stderr()), log_file)
    }

    /// Progress on `out` and, when given, appended to `log_file`.
    pub fn new(out: Box<dyn Write + Send>, log_file: Option<&Path>) -> anyhow::Result<Self> {
        let log = log_file.map(crate::session::log_file::LogFile::open).transpose()?;
        Ok(Self { out, log, started: Instant::now() })
    }

    /// Restarts the clock of the `[  12.3s]` stamps (at the session start).
    pub fn reset_clock(&mut self) {
        self.started = Instant::now();
    }

    /// Prints one line, stamped with the time since the session start; the control
    /// characters of the server text it quotes are escaped (`crate::text_safe`).
    pub fn line(&mut self, msg: &str) {
        let msg = crate::text_safe::line(msg);
        let t = self.started.elapsed().as_secs_f64();
        let _ = writeln!(self.out, "[{t:7.1}s] {msg}");
        if let Some(f) = &mut self.log {
            f.line(t, &msg);
        }
    }

    /// Prints the line of a runner event, if it has one.
    pub fn event(&mut self, ev: &RunnerEvent, snap: &SessionSnapshot) {
        let label = |cell: &usize| snap.cells.get(*cell).map_or_else(|| format!("cell {cell}"), |c| c.label.clone());
        let line = match ev {
            RunnerEvent::CellStarted { cell, run: Some(run), .. } => format!("{} ({}): start", label(cell), run.text()),
            RunnerEvent::CellStarted { cell, attempt, .. } if *attempt > 1 => {
                format!("{} (attempt {attempt}): start", label(cell))
            }
            RunnerEvent::CellStarted { cell, .. } => format!("{}: start", label(cell)),
            RunnerEvent::Phase { cell, phase } => format!("{}: {}", label(cell), phase.as_str()),
            RunnerEvent::CellFinished { cell, summary } => format!("{}: {summary}", label(cell)),
            RunnerEvent::Log(msg) => msg.clone(),
            RunnerEvent::Saved(_) | RunnerEvent::Finished => return,
        };
        self.line(&line);
    }

    /// Prints the heartbeat: `progress: cell 3/12, ETA 4m10s; elapsed 1m20s; <cell> <phase>: …`
    /// (`<cell> (run 2/3) <phase>` with repetitions).
    pub fn heartbeat(&mut self, snap: &SessionSnapshot, live: &LiveAttempt) {
        let now = Instant::now();
        let elapsed = short_duration(now.saturating_duration_since(snap.started));
        let mut line = format!("progress: {}; elapsed {elapsed}", snap.progress(now, live));
        if snap.paused {
            line.push_str("; paused");
        } else if live.cell.is_some() && live.phase != Phase::Idle {
            let t = &live.totals;
            // With repetitions, which run of the cell this is: `ctx=0 conc=4 (run 2/3)`.
            let run = live.cell.and_then(|id| snap.cells.get(id)).and_then(|c| c.run);
            let run = run.map(|r| format!(" ({})", r.text())).unwrap_or_default();
            line.push_str(&format!(
                "; {}{run} {}: {} in flight, {} done, {} failed{}, {} tokens",
                live.label,
                live.phase.as_str(),
                t.in_flight,
                t.completed,
                t.failed,
                live_reasons(live),
                t.tokens
            ));
            if let Some(g) = live.goodput {
                line.push_str(&format!(", good {}/{}", g.good, g.judged));
            }
        }
        self.line(&line);
    }
}

/// ` (bad_request 2: "HTTP 400: …")`: the live error kinds with their latest reasons, most
/// frequent first; empty without errors.
fn live_reasons(live: &LiveAttempt) -> String {
    use crate::cell::headline::{ErrorReason, REASON_CHARS, reasons_text};
    let reasons = ErrorReason::list(&live.errors, &live.error_examples);
    match reasons.is_empty() {
        true => String::new(),
        false => format!(" ({})", reasons_text(&reasons, REASON_CHARS)),
    }
}

/// The heartbeat ticks of a session: the first one [`HEARTBEAT`] from now.
pub fn heartbeat_ticks() -> tokio::time::Interval {
    let mut i = tokio::time::interval_at(Instant::now() + HEARTBEAT, HEARTBEAT);
    i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    i
}

/// The snapshot as it stands (a cheap `Arc` clone).
pub fn current(snap: &watch::Receiver<Arc<SessionSnapshot>>) -> Arc<SessionSnapshot> {
    snap.borrow().clone()
}
