//! The session runner: walks the cells, runs each attempt, obeys commands (pause, skip,
//! re-run, save, stop) and writes the report after every cell.

use super::assemble::{assemble, snapshot};
use super::burst::{BurstCellSpec, run_burst_attempt};
use super::control::{CellId, Command, Phase, RunnerEvent};
use super::decode::{DecodeCellSpec, run_decode_attempt};
use super::env::{CellEnv, LivePublisher};
use super::state::{Attempt, CellSpec, CellStatus, SessionState};
use super::view::SessionSnapshot;
use crate::report::json::SessionReport;
use crate::report::sink::{ReportJob, ReportSink, SaveOutcome};
use std::sync::Arc;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

/// Why an attempt was cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Interrupt {
    Pause,
    Skip,
    Stop,
}

impl Interrupt {
    fn status(self) -> &'static str {
        match self {
            Self::Pause => "paused",
            Self::Skip => "skipped_by_operator",
            Self::Stop => "stopped",
        }
    }
}

/// The mutable half of the runner: everything but the attempts' shared context.
pub struct Control {
    /// Cells, queue and actions.
    pub state: SessionState,
    /// Where the report goes: its writer thread.
    pub sink: ReportSink,
    /// Commands from the operator or a signal.
    pub commands: mpsc::UnboundedReceiver<Command>,
    /// The session snapshot the monitor renders.
    pub snapshot: watch::Sender<Arc<SessionSnapshot>>,
}

/// Everything the runner task owns.
pub struct Runner {
    /// Shared context of the attempts (read-only while a cell runs; also read by the report
    /// writer thread).
    pub env: Arc<CellEnv>,
    /// State, report sink and control channels.
    pub ctl: Control,
}

impl Runner {
    /// Runs every queued cell, then returns the final report (also written to disk, by the
    /// report writer thread).
    pub async fn run(self) -> SessionReport {
        let Runner { env, mut ctl } = self;
        ctl.state.act("start", None);
        ctl.publish(&env);
        while !ctl.state.stopped {
            if ctl.state.paused {
                ctl.wait_while_paused(&env).await;
                continue;
            }
            let Some(id) = ctl.state.next_cell() else { break };
            run_cell(&env, &mut ctl, id).await;
            ctl.save(&env);
        }
        let reason = if ctl.state.stopped { "stopped" } else { "finished" };
        ctl.state.act(reason, None);
        LivePublisher::idle(&env);
        let (report, outcome) = ctl.sink.finish(ctl.report_job(&env)).await;
        env.emit(saved_event(&outcome));
        env.emit(RunnerEvent::Finished);
        ctl.publish(&env);
        report
    }
}

impl Control {
    /// Hands the report as it stands to the writer thread, which assembles and writes it
    /// and tells the listeners; never waits for the write.
    fn save(&self, env: &Arc<CellEnv>) {
        self.sink.submit(self.report_job(env));
    }

    /// A job that assembles the report of the session as it stands now (off this task: the
    /// state is cloned, its attempts are shared).
    fn report_job(&self, env: &Arc<CellEnv>) -> ReportJob {
        let (env, state) = (Arc::clone(env), self.state.clone());
        Box::new(move || assemble(&env, &state))
    }

    fn publish(&self, env: &CellEnv) {
        self.snapshot.send_replace(Arc::new(snapshot(env, &self.state, self.sink.writer())));
    }

    /// Applies a command; returns the interrupt it asks of the running attempt, if any.
    fn command(&mut self, env: &Arc<CellEnv>, cmd: Command, running: Option<CellId>) -> Option<Interrupt> {
        match cmd {
            Command::Pause if running.is_some() => return Some(Interrupt::Pause),
            Command::Pause => {
                self.state.paused = true;
                self.state.act("pause", None);
            }
            Command::Resume if self.state.paused => {
                self.state.paused = false;
                self.state.act("resume", None);
            }
            Command::Resume => {}
            Command::Skip(target) => match target {
                None => return running.map(|_| Interrupt::Skip),
                Some(id) if Some(id) == running => return Some(Interrupt::Skip),
                Some(id) => {
                    if self.state.skip(id) {
                        self.state.act("skip", Some(id));
                    }
                }
            },
            Command::Rerun(id) => {
                if self.state.rerun(id) {
                    self.state.act("rerun", Some(id));
                }
            }
            Command::Save => {
                self.state.act("save", None);
                self.save(env);
            }
            Command::Stop => {
                self.state.stopped = true;
                return running.map(|_| Interrupt::Stop);
            }
        }
        self.publish(env);
        None
    }

    async fn wait_while_paused(&mut self, env: &Arc<CellEnv>) {
        let mut view = LivePublisher::new(usize::MAX, "paused".into(), 0);
        view.view_mut().cell = None;
        view.phase(env, Phase::Paused, None);
        while self.state.paused && !self.state.stopped {
            match self.commands.recv().await {
                Some(cmd) => {
                    self.command(env, cmd, None);
                }
                None => self.state.stopped = true,
            }
        }
    }

    fn command_during(&mut self, env: &Arc<CellEnv>, cmd: Command, id: CellId) -> Option<Interrupt> {
        let i = self.command(env, cmd, Some(id))?;
        let action = match i {
            Interrupt::Pause => "pause",
            Interrupt::Skip => "skip",
            Interrupt::Stop => "stop",
        };
        self.state.act(action, Some(id));
        Some(i)
    }

    fn finish_cell(&mut self, env: &CellEnv, id: CellId, mut result: Attempt, interrupt: Option<Interrupt>) {
        let status = match interrupt {
            None => attempt_status(&result),
            Some(i) => {
                set_attempt_status(&mut result, i.status());
                match i {
                    Interrupt::Pause => {
                        self.state.paused = true;
                        CellStatus::Pending
                    }
                    Interrupt::Skip => CellStatus::SkippedByOperator,
                    Interrupt::Stop => CellStatus::Pending,
                }
            }
        };
        let summary = super::view::attempt_line(&result);
        let cell = &mut self.state.cells[id];
        cell.attempts.push(Arc::new(result));
        cell.status = status;
        if interrupt == Some(Interrupt::Pause) {
            self.state.requeue_front(id);
        }
        self.state.current = None;
        env.emit(RunnerEvent::CellFinished { cell: id, summary });
        self.publish(env);
    }
}

/// The listeners' event for a finished write of the report.
pub fn saved_event(outcome: &SaveOutcome) -> RunnerEvent {
    match &outcome.result {
        Ok(()) => RunnerEvent::Saved(outcome.path.display().to_string()),
        Err(e) => RunnerEvent::Log(format!("cannot write {}: {e}", outcome.path.display())),
    }
}

async fn run_cell(env: &Arc<CellEnv>, ctl: &mut Control, id: CellId) {
    let cell = &mut ctl.state.cells[id];
    cell.status = CellStatus::Running;
    let (spec, label, attempt) = (cell.spec.clone(), cell.label.clone(), cell.attempts.len() as u32 + 1);
    ctl.state.current = Some(id);
    env.emit(RunnerEvent::CellStarted { cell: id, attempt });
    ctl.publish(env);
    let cancel = CancellationToken::new();
    let mut interrupt = None;
    let fut = run_attempt(env, id, &spec, label, attempt, &cancel);
    tokio::pin!(fut);
    let result = loop {
        tokio::select! {
            a = &mut fut => break a,
            Some(cmd) = ctl.commands.recv() => {
                if let Some(i) = ctl.command_during(env, cmd, id) {
                    interrupt.get_or_insert(i);
                    cancel.cancel();
                }
            }
        }
    };
    ctl.finish_cell(env, id, result, interrupt);
}

fn attempt_status(a: &Attempt) -> CellStatus {
    let s = match a {
        Attempt::Decode(d) => d.status.as_str(),
        Attempt::Burst(b) => b.status.as_str(),
        Attempt::Routing(v) => v.get("status").and_then(|s| s.as_str()).unwrap_or("measured"),
    };
    if s == "measured" { CellStatus::Measured } else { CellStatus::Errored }
}

fn set_attempt_status(a: &mut Attempt, status: &str) {
    match a {
        Attempt::Decode(d) => d.status = status.into(),
        Attempt::Burst(b) => b.status = status.into(),
        Attempt::Routing(v) => {
            if let Some(o) = v.as_object_mut() {
                o.insert("status".into(), status.into());
            }
        }
    }
}

async fn run_attempt(
    env: &CellEnv,
    id: CellId,
    spec: &CellSpec,
    label: String,
    attempt: u32,
    cancel: &CancellationToken,
) -> Attempt {
    match spec {
        CellSpec::Decode { ctx, conc } => {
            let s = DecodeCellSpec { cell: id, label, ctx: *ctx, conc: *conc, attempt };
            Attempt::Decode(Box::new(run_decode_attempt(env, &s, cancel).await))
        }
        CellSpec::Burst { ctx, conc } => {
            let s = BurstCellSpec { cell: id, label, ctx: *ctx, conc: *conc, attempt };
            Attempt::Burst(Box::new(run_burst_attempt(env, &s, cancel).await))
        }
        CellSpec::Routing { .. } => {
            let entry = match (&env.routing, env.routing.as_ref().and_then(|r| r.phase(&label))) {
                (Some(r), Some(phase)) => crate::routing::phase::run_phase(env, r, id, &phase, cancel).await,
                _ => serde_json::json!({"phase": label, "status": "errored", "error": "no such routing phase"}),
            };
            Attempt::Routing(Box::new(entry))
        }
    }
}
