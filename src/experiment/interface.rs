//! The interface every experiment implements, and the cells it plans.

use super::record::{Attempt, CellEntry};
use crate::cell::context::CellEnv;
use crate::cell::control::CellId;
use crate::cell::spec::CellSpec;
use crate::config::RunConfig;
use crate::report::json::SessionReport;
use crate::report::kind::ExperimentKind;
use crate::report::skip::Skip;
use futures_util::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A cell an experiment contributes to the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedCell {
    /// What it measures.
    pub spec: CellSpec,
    /// Display label.
    pub label: String,
    /// Why it is skipped before it starts (e.g. the KV deficit), if it is.
    pub skip: Option<Skip>,
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
    /// Where the runner's load-knob steps arrive, for an experiment that has a knob.
    pub knob: Option<&'a crate::cell::control::KnobInbox>,
    /// The instant the attempt's measurement window opens on the session's timeline
    /// (`--start-at`, `session::timeline`), for an experiment that opens one; None: when its
    /// warmup says.
    pub opens_at: Option<tokio::time::Instant>,
}

/// One kind of experiment.
pub trait Experiment: Send + Sync {
    /// Its kind: the name in the plan and the report section its cells land in.
    fn kind(&self) -> ExperimentKind;

    /// Its cells, in run order.
    fn cells(&self) -> Vec<PlannedCell>;

    /// True if `spec` is one of its cells.
    fn owns(&self, spec: &CellSpec) -> bool {
        spec.kind == self.kind()
    }

    /// Why `spec` is to be skipped now, just before an attempt would start, from what the
    /// session knows by then (e.g. a KV capacity a poll detected after preflight could not
    /// read it); None runs it. The runner marks the cell skipped with this reason.
    fn skip_now(&self, _env: &CellEnv, _spec: &CellSpec) -> Option<Skip> {
        None
    }

    /// Why `spec` is to be skipped now given the experiment's own cells as they stand (their
    /// statuses and attempts, in plan order), e.g. past its row's knee under `--stop-at-knee`;
    /// None runs it. Asked after [`Experiment::skip_now`]; the runner marks the cell skipped.
    fn skip_given(&self, _env: &CellEnv, _spec: &CellSpec, _cells: &[&CellEntry]) -> Option<Skip> {
        None
    }

    /// How long an attempt of `spec` is planned to take under `cfg` (for the session's ETA);
    /// None when it cannot be told in advance.
    fn planned(&self, _cfg: &RunConfig, _spec: &CellSpec) -> Option<Duration> {
        None
    }

    /// The attempts a saved `report` holds for `spec` (labelled `label`), oldest first, so a
    /// session can go on from it (`run --resume`); none by default.
    fn recover(&self, _report: &SessionReport, _spec: &CellSpec, _label: &str) -> Vec<Attempt> {
        Vec::new()
    }

    /// Runs one attempt of `cell` until it ends or `cancel` fires.
    fn run<'a>(&'a self, env: &'a CellEnv, cell: CellRun<'a>, cancel: &'a CancellationToken) -> BoxFuture<'a, Attempt>;

    /// Adds its section to `report`, from its cells (in plan order).
    fn report(&self, env: &CellEnv, cells: &[&CellEntry], report: &mut SessionReport);
}

/// The experiments of a session, in run order.
pub type Experiments = Vec<Arc<dyn Experiment>>;
