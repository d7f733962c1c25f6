//! The experiments a session can run, behind one interface: sustained decode, bursts and
//! prefix-cache routing. Each lives in its own folder and is registered once, in [`plan`].
//!
//! An experiment lists its cells, runs one attempt of a cell against the shared cell context
//! ([`CellEnv`]) and adds its section to the report. The session runner knows experiments only
//! through [`Experiment`]; experiments depend on `cell/`, never on `session/`.

pub mod burst;
pub mod decode;
pub mod record;
pub mod routing;

use crate::cell::context::CellEnv;
use crate::cell::control::CellId;
use crate::cell::spec::CellSpec;
use crate::config::{PlanKind, RunConfig};
use crate::report::json::SessionReport;
use futures_util::future::BoxFuture;
pub use record::{Attempt, CellEntry};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A cell an experiment contributes to the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedCell {
    /// What it measures.
    pub spec: CellSpec,
    /// Display label.
    pub label: String,
    /// Why it is skipped before it starts (e.g. the KV deficit), if it is.
    pub skip: Option<String>,
}

/// One attempt to run: which cell, and which attempt of it.
#[derive(Debug, Clone, Copy)]
pub struct CellRun<'a> {
    /// Index of the cell in the session plan.
    pub id: CellId,
    /// What it measures.
    pub spec: &'a CellSpec,
    /// Display label.
    pub label: &'a str,
    /// 1-based attempt number.
    pub attempt: u32,
}

/// One kind of experiment.
pub trait Experiment: Send + Sync {
    /// Its name in the plan and the report (`decode`, `burst`, `routing`).
    fn name(&self) -> &'static str;

    /// Its cells, in run order.
    fn cells(&self) -> Vec<PlannedCell>;

    /// True if `spec` is one of its cells.
    fn owns(&self, spec: &CellSpec) -> bool;

    /// Runs one attempt of `cell` until it ends or `cancel` fires.
    fn run<'a>(&'a self, env: &'a CellEnv, cell: CellRun<'a>, cancel: &'a CancellationToken) -> BoxFuture<'a, Attempt>;

    /// Adds its section to `report`, from its cells (in plan order).
    fn report(&self, env: &CellEnv, cells: &[&CellEntry], report: &mut SessionReport);
}

/// The experiments of a session, in run order.
pub type Experiments = Vec<Arc<dyn Experiment>>;

/// What preflight prepared for the experiments of a plan.
pub struct Prepared {
    /// KV capacity of the target, tokens (None: unknown, no KV-fit skip).
    pub kv_capacity: Option<u64>,
    /// The routing experiment's shared state, when routing is planned.
    pub routing: Option<routing::RoutingEnv>,
}

/// The registry: the experiments that run the plan kinds of `cfg`, in order.
pub fn plan(cfg: &RunConfig, prepared: Prepared) -> Experiments {
    let mut out: Experiments = Vec::new();
    let mut routing = prepared.routing;
    for kind in &cfg.plans {
        match kind {
            PlanKind::Decode => {
                out.push(Arc::new(decode::Decode::new(cfg, prepared.kv_capacity)));
                if cfg.run_burst {
                    out.push(Arc::new(burst::Burst::new(cfg, prepared.kv_capacity)));
                }
            }
            PlanKind::Routing => {
                if let Some(env) = routing.take() {
                    out.push(Arc::new(routing::Routing::new(env)));
                }
            }
        }
    }
    out
}
