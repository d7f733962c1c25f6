//! The engine thread of one simulated replica: steps the scheduler on a precise clock.
//!
//! A dedicated OS thread (not a tokio task) runs each replica so that step deadlines are kept
//! with the kernel's high-resolution sleep rather than tokio's millisecond timer wheel. Steps
//! are laid end to end on an absolute schedule: when the thread wakes late it catches up (by
//! at most [`MAX_CATCH_UP`]) instead of drifting, so aggregate throughput stays exact even at
//! high `--speed` where single steps last microseconds.

mod request;
mod sched;

pub use request::{EngineRequest, FinishReason, TokenEvent};
pub use sched::{Scheduler, StepCost};

use crate::sim::params::EngineParams;
use crate::sim::stats::ReplicaStats;
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Longest lag behind schedule the engine makes up for by running steps back to back.
pub const MAX_CATCH_UP: Duration = Duration::from_millis(2);

/// A message to the engine thread.
#[derive(Debug)]
pub enum EngineMsg {
    /// Queue a request.
    Submit(Box<EngineRequest>),
    /// Forget every cached prefix, then reply.
    ResetPrefixCache(tokio::sync::oneshot::Sender<()>),
}

/// The handle HTTP handlers use to reach a replica's engine. The thread ends when every
/// handle is dropped.
#[derive(Debug, Clone)]
pub struct EngineHandle {
    tx: Sender<EngineMsg>,
    /// Live statistics the engine publishes every step.
    pub stats: Arc<Mutex<ReplicaStats>>,
}

impl EngineHandle {
    /// Starts the engine thread for one replica.
    pub fn spawn(name: &str, params: EngineParams) -> std::io::Result<Self> {
        let stats = Arc::new(Mutex::new(ReplicaStats::default()));
        let (tx, rx) = channel();
        let sched = Scheduler::new(params.clone(), stats.clone());
        std::thread::Builder::new().name(format!("engine-{name}")).spawn(move || run(sched, params, rx))?;
        Ok(Self { tx, stats })
    }

    /// Sends a message; false if the engine thread is gone.
    pub fn send(&self, msg: EngineMsg) -> bool {
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
    }
}

/// Drains the inbox; blocks for the next message when idle. False when all handles are gone.
fn drain(sched: &mut Scheduler, rx: &Receiver<EngineMsg>) -> bool {
    if sched.is_idle() {
        sched.publish();
        match rx.recv() {
            Ok(msg) => handle(sched, msg),
            Err(_) => return false,
        }
    }
    loop {
        match rx.try_recv() {
            Ok(msg) => handle(sched, msg),
            Err(TryRecvError::Empty) => return true,
            Err(TryRecvError::Disconnected) => return false,
        }
    }
}

fn run(mut sched: Scheduler, params: EngineParams, rx: Receiver<EngineMsg>) {
    let mut clock = Instant::now();
    while drain(&mut sched, &rx) {
        let Some(cost) = sched.schedule() else {
            // Requests wait but none can run yet (their clients may still be going away).
            sched.publish();
            std::thread::sleep(Duration::from_micros(200));
            continue;
        };
        let now = Instant::now();
        let start = if clock + MAX_CATCH_UP < now { now } else { clock };
        let end = start + params.wall(cost.modelled);
        let now = Instant::now();
        if end > now {
            std::thread::sleep(end - now);
        }
        clock = end;
        sched.complete(end);
    }
}
