//! The engine of one simulated replica: steps the scheduler on a precise clock.
//!
//! By default ([`EngineClock::Thread`]) a dedicated OS thread (not a tokio task) runs each
//! replica so that step deadlines are kept with the kernel's high-resolution sleep rather than
//! tokio's millisecond timer wheel. Steps are laid end to end on an absolute schedule: when
//! the engine wakes late it catches up (by at most [`MAX_CATCH_UP`]) instead of drifting, so
//! aggregate throughput stays exact even at high `--speed` where single steps last
//! microseconds. [`EngineClock::Tokio`] runs the same scheduler and schedule as a tokio task
//! on tokio time, so an in-process simulator follows a test's paused clock.

mod request;
mod sched;

pub(crate) use request::{EngineRequest, FinishReason, TokenEvent};
pub(crate) use sched::Scheduler;

use crate::sim::params::EngineParams;
use crate::sim::stats::ReplicaStats;
use std::ops::Add;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// Longest lag behind schedule the engine makes up for by running steps back to back.
pub(crate) const MAX_CATCH_UP: Duration = Duration::from_millis(2);

/// Wait before planning again when requests wait but none can run.
const RETRY: Duration = Duration::from_micros(200);

/// The clock an engine steps on, and that its replica's timestamps follow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EngineClock {
    /// A dedicated OS thread sleeping on std time (the served simulator).
    #[default]
    Thread,
    /// A tokio task on tokio time: follows a paused test clock (the in-process simulator).
    Tokio,
}

impl EngineClock {
    /// Now on this clock, as a std instant (tokio time is mapped onto std's).
    pub fn now(self) -> Instant {
        match self {
            Self::Thread => Instant::now(),
            Self::Tokio => tokio::time::Instant::now().into_std(),
        }
    }
}

/// A message to the engine.
#[derive(Debug)]
pub(crate) enum EngineMsg {
    /// Queue a request.
    Submit(Box<EngineRequest>),
    /// Forget every cached prefix, then reply.
    ResetPrefixCache(tokio::sync::oneshot::Sender<()>),
    /// Forget every cached prefix only if no request is queued or running, and reply whether
    /// it did (SGLang's `flush_cache`, docs/protocol.md §2.6).
    FlushCacheIfIdle(tokio::sync::oneshot::Sender<bool>),
    /// Drop every request and start afresh with zeroed counters (a killed process).
    Crash,
}

/// The handle HTTP handlers use to reach a replica's engine. The engine ends when every
/// handle is dropped.
#[derive(Debug, Clone)]
pub(crate) struct EngineHandle {
    tx: UnboundedSender<EngineMsg>,
    /// Live statistics the engine publishes every step.
    pub stats: Arc<Mutex<ReplicaStats>>,
    /// The clock the engine steps on.
    pub clock: EngineClock,
}

impl EngineHandle {
    /// Starts the engine of one replica on `clock` ([`EngineClock::Tokio`] spawns a task on
    /// the current tokio runtime, so it must be called inside one).
    pub(crate) fn spawn_on(name: &str, params: EngineParams, clock: EngineClock) -> std::io::Result<Self> {
        let stats = Arc::new(Mutex::new(ReplicaStats::default()));
        let (tx, rx) = unbounded_channel();
        let sched = Scheduler::new(params.clone(), stats.clone()).on_clock(clock);
        match clock {
            EngineClock::Thread => {
                std::thread::Builder::new().name(format!("engine-{name}")).spawn(move || run(sched, params, rx))?;
            }
            EngineClock::Tokio => drop(tokio::spawn(run_task(sched, params, rx))),
        }
        Ok(Self { tx, stats, clock })
    }

    /// Sends a message; false if the engine is gone.
    pub(crate) fn send(&self, msg: EngineMsg) -> bool {
        self.tx.send(msg).is_ok()
    }
}

fn handle(sched: &mut Scheduler, msg: EngineMsg) {
    match msg {
        EngineMsg::Submit(req) => sched.submit(*req),
        EngineMsg::ResetPrefixCache(reply) => {
            sched.reset_prefix_cache();
            let _ = reply.send(());
        }
        EngineMsg::FlushCacheIfIdle(reply) => {
            let idle = sched.is_idle();
            if idle {
                sched.reset_prefix_cache();
            }
            let _ = reply.send(idle);
        }
        EngineMsg::Crash => sched.crash(),
    }
}

/// Handles every message already queued. False when all handles are gone.
fn drain_ready(sched: &mut Scheduler, rx: &mut UnboundedReceiver<EngineMsg>) -> bool {
    loop {
        match rx.try_recv() {
            Ok(msg) => handle(sched, msg),
            Err(TryRecvError::Empty) => return true,
            Err(TryRecvError::Disconnected) => return false,
        }
    }
}

/// Drains the inbox; blocks for the next message when idle. False when all handles are gone.
fn drain(sched: &mut Scheduler, rx: &mut UnboundedReceiver<EngineMsg>) -> bool {
    if sched.is_idle() {
        sched.publish();
        match rx.blocking_recv() {
            Some(msg) => handle(sched, msg),
            None => return false,
        }
    }
    drain_ready(sched, rx)
}

/// End of the next step, `wall` long: right after the previous one (`clock`), unless that is
/// more than [`MAX_CATCH_UP`] behind `now`.
fn step_end<I: Copy + Ord + Add<Duration, Output = I>>(clock: I, now: I, wall: Duration) -> I {
    let start = if clock + MAX_CATCH_UP < now { now } else { clock };
    start + wall
}

fn run(mut sched: Scheduler, params: EngineParams, mut rx: UnboundedReceiver<EngineMsg>) {
    let mut clock = Instant::now();
    while drain(&mut sched, &mut rx) {
        let Some(cost) = sched.schedule() else {
            // Requests wait but none can run yet (their clients may still be going away).
            sched.publish();
            std::thread::sleep(RETRY);
            continue;
        };
        let end = step_end(clock, Instant::now(), params.wall(cost.modelled));
        let now = Instant::now();
        if end > now {
            std::thread::sleep(end - now);
        }
        clock = end;
        sched.complete(end);
    }
}

/// [`run`] as a tokio task on tokio time.
async fn run_task(mut sched: Scheduler, params: EngineParams, mut rx: UnboundedReceiver<EngineMsg>) {
    let mut clock = tokio::time::Instant::now();
    loop {
        if sched.is_idle() {
            sched.publish();
            match rx.recv().await {
                Some(msg) => handle(&mut sched, msg),
                None => return,
            }
        }
        if !drain_ready(&mut sched, &mut rx) {
            return;
        }
        let Some(cost) = sched.schedule() else {
            sched.publish();
            tokio::time::sleep(RETRY).await;
            continue;
        };
        let end = step_end(clock, tokio::time::Instant::now(), params.wall(cost.modelled));
        tokio::time::sleep_until(end).await;
        clock = end;
        sched.complete(end.into_std());
    }
}
