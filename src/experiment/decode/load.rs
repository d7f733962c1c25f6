//! The load of a decode attempt: closed-loop streams or open-loop arrivals, and how one step
//! of the knob changes it (streams added or cut at once, or the arrival rate moved).

use crate::cell::control::Knob;
use crate::config::{KnobStep, Rate};
use crate::load::open_loop::{OpenLoopPlan, spawn_open_loop};
use crate::load::pool::StreamPool;
use crate::load::request::BodyTemplate;
use crate::load::sample::RequestSample;
use crate::load::slice::Slice;
use crate::load::worker::WorkerCtx;
use crate::report::levels::LevelLoad;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// The running load of an attempt.
pub(crate) enum Load {
    /// `conc` closed-loop streams (the pool's size).
    Closed(StreamPool),
    /// Arrivals at a rate, at most `cap` in flight.
    Open {
        /// The dispatcher task.
        set: JoinSet<()>,
        /// The rate the dispatcher follows.
        rate: watch::Sender<Rate>,
        /// The in-flight cap.
        cap: u32,
    },
}

impl Load {
    /// Starts the load: closed loop when `rate` is None, else open loop at `rate` capped at
    /// `conc`, sending the arrivals of the schedule that `slice` takes (every one unsharded).
    pub(crate) fn start(
        ctx: Arc<WorkerCtx>,
        body: BodyTemplate,
        (conc, slice): (u32, Slice),
        rate: Option<(Rate, f64, u64)>,
        tx: UnboundedSender<RequestSample>,
        stop: CancellationToken,
    ) -> Self {
        match rate {
            None => Self::Closed(StreamPool::start(ctx, body, conc, tx, stop)),
            Some((r, shape, seed)) => {
                let (rate, rx) = watch::channel(r);
                let plan = OpenLoopPlan { body, cap: conc, shape, seed, slice };
                Self::Open { set: spawn_open_loop(ctx, plan, rx, tx, stop), rate, cap: conc }
            }
        }
    }

    /// The tasks of the load, to join or abort.
    pub(crate) fn tasks(&mut self) -> &mut JoinSet<()> {
        match self {
            Self::Closed(p) => &mut p.set,
            Self::Open { set, .. } => set,
        }
    }

    /// The load now.
    pub(crate) fn level(&self) -> LevelLoad {
        match self {
            Self::Closed(p) => LevelLoad { conc: Some(p.size()), rate: None },
            Self::Open { rate, cap, .. } => LevelLoad { conc: Some(*cap), rate: Some(*rate.borrow()) },
        }
    }

    /// True for arrivals at a rate.
    pub(crate) fn is_open(&self) -> bool {
        matches!(self, Self::Open { .. })
    }

    /// Turns the load one `step` in direction `knob`; the new load, or why it cannot move.
    pub(crate) fn turn(&mut self, knob: Knob, step: KnobStep) -> Result<LevelLoad, String> {
        let up = knob == Knob::Up;
        match self {
            Self::Closed(p) => {
                let next = step.conc(p.size(), up);
                if next == p.size() {
                    return Err(format!("already at {next} stream"));
                }
                p.resize(next);
            }
            Self::Open { rate, .. } => {
                let now = *rate.borrow();
                let Some(next) = step.rate(now, up) else {
                    return Err(format!("the rate {now} cannot move by {step}"));
                };
                rate.send_replace(next);
            }
        }
        Ok(self.level())
    }
}
