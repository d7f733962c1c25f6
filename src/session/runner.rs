//! The session runner: walks the cells, runs each attempt, obeys commands (pause, skip,
//! re-run, save, stop) and writes the report at the start and after every cell.

use super::assemble::{assemble, snapshot};
use super::snapshot::SessionSnapshot;
use super::state::{Attempt, CellStatus, SessionState};
use crate::cell::context::CellEnv;
use crate::cell::control::{CellId, Command, Knob, KnobInbox, Phase, RunnerEvent};
use crate::cell::halt::FailureStreak;
use crate::cell::headline::attempt_line_against;
use crate::cell::publisher::LivePublisher;
use crate::experiment::{CellRun, Experiments};
use crate::report::json::SessionReport;
use crate::report::sink::{ReportJob, ReportSink, SaveOutcome};
use crate::report::status::AttemptStatus;
use std::sync::Arc;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

#[path = "runner_slots.rs"]
mod slots;

/// Why an attempt was cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Interrupt {
    Pause,
    Skip,
    Stop,
}

impl Interrupt {
    fn status(self) -> AttemptStatus {
        match self {
            Self::Pause => AttemptStatus::Paused,
            Self::Skip => AttemptStatus::SkippedByOperator,
            Self::Stop => AttemptStatus::Stopped,
        }
    }
}

/// The mutable half of the runner: everything but the attempts' shared context.
pub(crate) struct Control {
    /// Cells, queue and actions.
    pub state: SessionState,
    /// The earlier sessions it continues and is compared with.
    pub prior: Arc<super::prior::Prior>,
    /// Where the report goes: its writer thread.
    pub sink: ReportSink,
    /// Commands from the operator or a signal.
    pub commands: mpsc::UnboundedReceiver<Command>,
    /// The session snapshot the monitor renders.
    pub snapshot: watch::Sender<Arc<SessionSnapshot>>,
    /// The cell timeline of `--start-at` (`super::timeline`), None without it.
    pub timeline: Option<super::timeline::Timeline>,
}

/// Everything the runner task owns.
pub(crate) struct Runner {
    /// Shared context of the attempts (read-only while a cell runs; also read by the report
    /// writer thread).
    pub env: Arc<CellEnv>,
    /// The experiments of the plan; every cell belongs to one.
    pub experiments: Experiments,
    /// State, report sink and control channels.
    pub ctl: Control,
}

impl Runner {
    /// Runs every queued cell, then returns the final report (also written to disk, by the
    /// report writer thread).
    pub(crate) async fn run(self) -> SessionReport {
        let Runner { env, experiments, mut ctl } = self;
        ctl.state.act("start", None);
        // Cells the plan skipped (no KV fit) are said once, as the runner says its own skips.
        for c in &ctl.state.cells {
            match &c.status {
                CellStatus::Skipped(reason) => env.emit(RunnerEvent::Log(format!("{}: skipped, {reason}", c.label))),
                // On `--metrics-listen`'s page at zero before its first request.
                _ => env.cfg.exposition.iter().for_each(|e| e.announce(&c.label)),
            }
        }
        ctl.publish(&env);
        // Written before any load, so that even a killed process leaves a report.
        ctl.save(&env, &experiments);
        let mut streak = FailureStreak::default();
        loop {
            ctl.run_queue(&env, &experiments, &mut streak).await;
            if ctl.state.stopped || !env.cfg.hold_after_last {
                break;
            }
            // Every cell is final: the report is complete on disk while the operator looks
            // at it, and a re-run (`r`) queues its cell again.
            ctl.state.act("finished", None);
            env.emit(RunnerEvent::Log("every cell is done and the report written: r re-runs a cell, q quits".into()));
            LivePublisher::idle(&env);
            ctl.save(&env, &experiments);
            ctl.publish(&env);
            if !ctl.wait_while_done(&env, &experiments).await {
                break;
            }
        }
        if ctl.state.stopped || !env.cfg.hold_after_last {
            let reason = if ctl.state.stopped { "stopped" } else { "finished" };
            ctl.state.act(reason, None);
        }
        LivePublisher::idle(&env);
        let (report, outcome) = ctl.sink.finish(ctl.report_job(&env, &experiments)).await;
        env.emit(saved_event(&outcome));
        env.emit(RunnerEvent::Finished);
        ctl.publish(&env);
        report
    }
}

impl Control {
    /// Runs the queued cells until the queue is empty or the session stops.
    async fn run_queue(&mut self, env: &Arc<CellEnv>, ex: &Experiments, streak: &mut FailureStreak) {
        while !self.state.stopped {
            if self.state.paused {
                self.wait_while_paused(env, ex).await;
                continue;
            }
            let Some(id) = self.state.next_cell() else { return };
            let slot = match self.await_slot(env, ex, id).await {
                slots::SlotWait::Interrupted => continue,
                slots::SlotWait::Off => None,
                slots::SlotWait::Start(s) => Some(s),
            };
            if let Some(attempt) = run_cell(env, ex, self, id, slot.as_ref().and_then(|s| s.opens_at)).await {
                if let Some(s) = &slot {
                    self.record_slot(env, id, s, &attempt);
                }
                super::streak::halt_on_streak(env, streak, &attempt, &self.state.cells[id]);
            }
            if env.halt.is_raised() && !self.state.stopped {
                self.state.stopped = true;
                self.state.act("halt", Some(id));
            }
            self.save(env, ex);
        }
    }

    /// With every cell final ([`crate::config::RunConfig::hold_after_last`]): applies commands
    /// until one queues a cell (true) or the operator leaves (false). Stop here ends a finished
    /// session, so the report stays complete.
    async fn wait_while_done(&mut self, env: &Arc<CellEnv>, ex: &Experiments) -> bool {
        loop {
            match self.commands.recv().await {
                None | Some(Command::Stop) => return false,
                Some(cmd) => {
                    self.command(env, ex, cmd, None);
                }
            }
            if self.state.stopped {
                return false;
            }
            if self.state.has_queued() {
                return true;
            }
        }
    }

    /// Hands the report as it stands to the writer thread, which assembles and writes it
    /// and tells the listeners; never waits for the write.
    fn save(&self, env: &Arc<CellEnv>, experiments: &Experiments) {
        self.sink.submit(self.report_job(env, experiments));
    }

    /// A job that assembles the report of the session as it stands now (off this task: the
    /// state is cloned, its attempts are shared).
    fn report_job(&self, env: &Arc<CellEnv>, experiments: &Experiments) -> ReportJob {
        let (env, experiments, state) = (Arc::clone(env), experiments.clone(), self.state.clone());
        let prior = Arc::clone(&self.prior);
        Box::new(move || {
            let report = assemble(&env, &prior, &experiments, &state);
            env.announce(&report.warnings);
            report
        })
    }

    fn publish(&self, env: &CellEnv) {
        self.snapshot.send_replace(Arc::new(snapshot(env, &self.prior, &self.state, self.sink.writer())));
    }

    /// Applies a command; returns the interrupt it asks of the running attempt, if any.
    fn command(
        &mut self,
        env: &Arc<CellEnv>,
        ex: &Experiments,
        cmd: Command,
        running: Option<CellId>,
    ) -> Option<Interrupt> {
        // A shard applies nothing that would move it off the session's timeline.
        if super::shard_view::refuse(env, &cmd) {
            return None;
        }
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
                self.save(env, ex);
            }
            Command::Stop => {
                self.state.stopped = true;
                return running.map(|_| Interrupt::Stop);
            }
            // Reaches a running attempt through its inbox (see `knob`); between cells there
            // is no load to turn.
            Command::Knob(k) => env.emit(RunnerEvent::Log(format!("knob {}: no cell is running", k.sign()))),
        }
        self.publish(env);
        None
    }

    async fn wait_while_paused(&mut self, env: &Arc<CellEnv>, ex: &Experiments) {
        let mut view = LivePublisher::new(usize::MAX, "paused".into(), 0);
        view.live_mut().cell = None;
        view.phase(env, Phase::Paused, None);
        while self.state.paused && !self.state.stopped {
            match self.commands.recv().await {
                Some(cmd) => {
                    self.command(env, ex, cmd, None);
                }
                None => self.state.stopped = true,
            }
        }
    }

    fn command_during(&mut self, env: &Arc<CellEnv>, ex: &Experiments, cmd: Command, id: CellId) -> Option<Interrupt> {
        let i = self.command(env, ex, cmd, Some(id))?;
        let action = match i {
            Interrupt::Pause => "pause",
            Interrupt::Skip => "skip",
            Interrupt::Stop => "stop",
        };
        self.state.act(action, Some(id));
        Some(i)
    }

    /// Hands a knob step to the running attempt and records it; says so when the attempt has
    /// no knob (routing and burst cells) or no longer listens.
    fn knob(&mut self, env: &CellEnv, tx: &mpsc::UnboundedSender<Knob>, inbox: &KnobInbox, k: Knob, id: CellId) {
        let label = &self.state.cells[id].label;
        if !inbox.taken() || tx.send(k).is_err() {
            env.emit(RunnerEvent::Log(format!("knob {}: {label} has no load knob", k.sign())));
            return;
        }
        self.state.act(&format!("knob {}", k.sign()), Some(id));
        self.publish(env);
    }

    /// Records the attempt's outcome; returns it as the cell keeps it. With repetitions a run
    /// that finished while its round lacks runs queues the cell first again (its runs go back
    /// to back), unless the session halted.
    fn finish_cell(
        &mut self,
        env: &CellEnv,
        id: CellId,
        mut result: Attempt,
        interrupt: Option<Interrupt>,
    ) -> Arc<Attempt> {
        if let Some(i) = interrupt {
            result.set_status(i.status());
        }
        let cell = &mut self.state.cells[id];
        let key = cell.spec.compare_key();
        let summary = attempt_line_against(&result.headline(), &key, self.prior.baseline.as_deref());
        let result = Arc::new(result);
        cell.attempts.push(result.clone());
        let again = interrupt.is_none() && cell.wants_runs() && !env.halt.is_raised();
        cell.status = match interrupt {
            None if again => CellStatus::Pending,
            None => cell.round_status(),
            Some(Interrupt::Pause | Interrupt::Stop) => CellStatus::Pending,
            // With repetitions the runs the round has keep their figures.
            Some(Interrupt::Skip) if cell.runs > 1 => match cell.round_status() {
                CellStatus::Measured => CellStatus::Measured,
                _ => CellStatus::SkippedByOperator,
            },
            Some(Interrupt::Skip) => CellStatus::SkippedByOperator,
        };
        let run = cell.run_progress().filter(|_| interrupt.is_none());
        let summary = match run {
            Some(p) => format!("{summary} (run {}/{})", p.done.min(p.planned), p.planned),
            None => summary,
        };
        let round_line = run.filter(|_| !again).and_then(|_| super::runs_log::round_line(cell));
        if interrupt == Some(Interrupt::Pause) {
            self.state.paused = true;
        }
        if interrupt == Some(Interrupt::Pause) || again {
            self.state.requeue_front(id);
        }
        self.state.current = None;
        self.state.timing.finish(tokio::time::Instant::now(), interrupt.is_none());
        env.emit(RunnerEvent::CellFinished { cell: id, summary });
        round_line.into_iter().for_each(|l| env.emit(RunnerEvent::Log(l)));
        self.publish(env);
        result
    }
}

/// The listeners' event for a finished write of the report.
pub(crate) fn saved_event(outcome: &SaveOutcome) -> RunnerEvent {
    match &outcome.result {
        Ok(()) => RunnerEvent::Saved(outcome.path.display().to_string()),
        Err(e) => {
            let instead = match &outcome.fallback {
                Some(Ok(p)) => format!("; saved to {} instead", p.display()),
                Some(Err(f)) => format!("; the fallback file failed too: {f}"),
                None => String::new(),
            };
            RunnerEvent::Log(format!("cannot write {}: {e}{instead}", outcome.path.display()))
        }
    }
}

/// Runs one attempt of cell `id` (unless its experiment skips it), its window opening at
/// `opens_at` when the timeline says; the attempt recorded.
async fn run_cell(
    env: &Arc<CellEnv>,
    experiments: &Experiments,
    ctl: &mut Control,
    id: CellId,
    opens_at: Option<tokio::time::Instant>,
) -> Option<Arc<Attempt>> {
    let cell = &ctl.state.cells[id];
    let (spec, label, attempt) = (cell.spec.clone(), cell.label.clone(), cell.attempts.len() as u32 + 1);
    let experiment = experiments.iter().find(|e| e.owns(&spec));
    let skip = experiment.and_then(|e| {
        let own: Vec<_> = ctl.state.cells.iter().filter(|c| e.owns(&c.spec)).collect();
        e.skip_now(env, &spec).or_else(|| e.skip_given(env, &spec, &own))
    });
    if let Some(reason) = skip {
        env.emit(RunnerEvent::Log(format!("{label}: skipped, {reason}")));
        ctl.state.cells[id].status = CellStatus::Skipped(reason);
        ctl.publish(env);
        return None;
    }
    ctl.state.cells[id].status = CellStatus::Running;
    ctl.state.current = Some(id);
    ctl.state.timing.start(id, tokio::time::Instant::now());
    let run = ctl.state.cells[id].run_progress();
    env.emit(RunnerEvent::CellStarted { cell: id, attempt, run });
    ctl.publish(env);
    let Some(experiment) = experiment else {
        // Every planned cell comes from an experiment of the plan (session/plan.rs).
        ctl.state.cells[id].status = CellStatus::Errored;
        ctl.state.current = None;
        env.emit(RunnerEvent::Log(format!("{label}: no experiment runs this cell")));
        return None;
    };
    let cancel = CancellationToken::new();
    let mut interrupt = None;
    let mut halted = false;
    let (knob_tx, inbox) = KnobInbox::channel();
    let run = CellRun { id, spec: &spec, label: &label, attempt, knob: Some(&inbox), opens_at };
    let fut = experiment.run(env, run, &cancel);
    tokio::pin!(fut);
    let result = loop {
        tokio::select! {
            a = &mut fut => break a,
            _ = env.halt.raised(), if !halted => {
                halted = true;
                cancel.cancel();
            }
            Some(cmd) = ctl.commands.recv() => match cmd {
                // A shard's knob goes through `command`, which refuses it.
                Command::Knob(k) if env.cfg.shard.is_none() => ctl.knob(env, &knob_tx, &inbox, k, id),
                cmd => if let Some(i) = ctl.command_during(env, experiments, cmd, id) {
                    interrupt.get_or_insert(i);
                    cancel.cancel();
                }
            }
        }
    };
    let mut result = result;
    if env.halt.is_raised() && interrupt.is_none() {
        // Cut short because every request is refused: the cell failed, it was not stopped.
        result.set_status(AttemptStatus::Errored);
    }
    Some(ctl.finish_cell(env, id, result, interrupt))
}
