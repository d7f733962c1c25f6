//! The routing experiment behind the [`Experiment`] interface: one cell per phase, and the
//! `phases` / `phase_history` of the report in the layout of `tests/fixtures/seed_002.json`.

use super::RoutingEnv;
use super::phase::run_phase;
use crate::cell::context::CellEnv;
use crate::cell::spec::CellSpec;
use crate::experiment::{Attempt, CellEntry, CellRun, Experiment, PlannedCell};
use crate::report::json::SessionReport;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

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
    fn name(&self) -> &'static str {
        "routing"
    }

    fn cells(&self) -> Vec<PlannedCell> {
        let spec = |p: &super::plan::PhaseSpec| CellSpec::Routing {
            round: p.round,
            scenario: p.scenario.name.clone(),
            route: p.route.clone(),
        };
        self.env.phases.iter().map(|p| PlannedCell { spec: spec(p), label: p.name.clone(), skip: None }).collect()
    }

    fn owns(&self, spec: &CellSpec) -> bool {
        matches!(spec, CellSpec::Routing { .. })
    }

    fn run<'a>(&'a self, env: &'a CellEnv, cell: CellRun<'a>, cancel: &'a CancellationToken) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let entry = match self.env.phase(cell.label) {
                Some(phase) => run_phase(env, &self.env, cell.id, &phase, cancel).await,
                None => serde_json::json!({"phase": cell.label, "status": "errored", "error": "no such routing phase"}),
            };
            Attempt::Routing(Box::new(entry))
        })
    }

    fn report(&self, _env: &CellEnv, cells: &[&CellEntry], report: &mut SessionReport) {
        let phases: Vec<serde_json::Value> = cells
            .iter()
            .filter_map(|c| match c.attempts.last().map(|a| &**a) {
                Some(Attempt::Routing(v)) if c.status.is_final() => Some((**v).clone()),
                _ => None,
            })
            .collect();
        let mut history: Vec<(f64, serde_json::Value)> = cells
            .iter()
            .flat_map(|c| c.attempts.iter())
            .filter_map(|a| match &**a {
                Attempt::Routing(v) => {
                    Some((v.get("started_at").and_then(serde_json::Value::as_f64).unwrap_or(0.0), (**v).clone()))
                }
                _ => None,
            })
            .collect();
        history.sort_by(|a, b| a.0.total_cmp(&b.0));
        report.planned_phases = cells.len();
        report.measured_phases = phases.len();
        report.phases = phases;
        report.phase_history = history.into_iter().map(|(_, v)| v).collect();
    }
}
