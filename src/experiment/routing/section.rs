//! The routing experiment behind the [`Experiment`] interface: one cell per phase, and the
//! `phases` / `phase_history` of the report in the layout of `tests/fixtures/seed_002.json`.

use super::env::RoutingEnv;
use super::phase::run_phase;
use crate::cell::context::CellEnv;
use crate::cell::spec::CellSpec;
use crate::experiment::interface::{CellRun, Experiment, PlannedCell};
use crate::experiment::record::{Attempt, CellEntry};
use crate::report::json::SessionReport;
use crate::report::kind::ExperimentKind;
use crate::report::phase::RoutingPhase;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

/// The experiment's name in the plan and the report.
pub(crate) const KIND: ExperimentKind = ExperimentKind::Routing;

/// Prefix-cache routing phases (round x scenario x route).
#[derive(Debug, Clone)]
pub struct Routing {
    env: RoutingEnv,
}

impl Routing {
    /// The experiment over the phases prepared in `env`.
    pub fn new(env: RoutingEnv) -> Self {
        Self { env }
    }
}

impl Experiment for Routing {
    fn kind(&self) -> ExperimentKind {
        KIND
    }

    fn cells(&self) -> Vec<PlannedCell> {
        let spec = |p: &super::plan::PhaseSpec| CellSpec::phase(KIND, p.round, &p.scenario.name, &p.route);
        self.env.phases.iter().map(|p| PlannedCell { spec: spec(p), label: p.name.clone(), skip: None }).collect()
    }

    /// The schedule: `count` arrivals at `rps`.
    fn planned(&self, cfg: &crate::config::RunConfig, _spec: &CellSpec) -> Option<std::time::Duration> {
        let r = &cfg.routing;
        (r.rps > 0.0).then(|| crate::units::secs(f64::from(r.count) / r.rps))
    }

    fn recover(&self, report: &SessionReport, _spec: &CellSpec, label: &str) -> Vec<Attempt> {
        let own = report.phase_history.iter().filter(|p| p.phase == label);
        own.map(|p| Attempt::Routing(Box::new(p.clone()))).collect()
    }

    fn run<'a>(&'a self, env: &'a CellEnv, cell: CellRun<'a>, cancel: &'a CancellationToken) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let phase = match self.env.phase(cell.label) {
                Some(phase) => run_phase(env, &self.env, (cell.id, cell.opens_at), &phase, cancel).await,
                None => RoutingPhase::not_run(cell.label, "no such routing phase"),
            };
            Attempt::Routing(Box::new(phase))
        })
    }

    fn report(&self, _env: &CellEnv, cells: &[&CellEntry], report: &mut SessionReport) {
        let latest = |c: &&CellEntry| match c.attempts.last().map(|a| &**a) {
            Some(Attempt::Routing(p)) if c.status.is_final() => Some((**p).clone()),
            _ => None,
        };
        let phases: Vec<RoutingPhase> = cells.iter().filter_map(latest).collect();
        let mut history: Vec<RoutingPhase> = cells
            .iter()
            .flat_map(|c| c.attempts.iter())
            .filter_map(|a| match &**a {
                Attempt::Routing(p) => Some((**p).clone()),
                _ => None,
            })
            .collect();
        history.sort_by(|a, b| a.started_at.total_cmp(&b.started_at));
        report.planned_phases = cells.len();
        report.measured_phases = phases.len();
        report.phases = phases;
        report.phase_history = history;
    }
}
