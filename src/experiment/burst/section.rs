//! The burst experiment (Phase 3) behind the [`Experiment`] interface: its cells and its
//! section of the report.

use super::attempt::{BurstCellSpec, run_burst_attempt};
use crate::cell::context::CellEnv;
use crate::cell::spec::{CellKey, CellSpec};
use crate::config::RunConfig;
use crate::experiment::decode::grid::Grid;
use crate::experiment::decode::section::status_and_reason;
use crate::experiment::interface::{CellRun, Experiment, PlannedCell};
use crate::experiment::record::{Attempt, CellEntry};
use crate::report::json::{BurstCellReport, BurstSection, SessionReport};
use crate::report::kind::ExperimentKind;
use crate::report::skip::Skip;
use crate::units::format_size;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

/// The experiment's name in the plan and the report.
pub(crate) const KIND: ExperimentKind = ExperimentKind::Burst;

/// A finite burst of `conc` requests with `ctx`-token prompts per cell, end to end.
#[derive(Debug, Clone)]
pub(crate) struct Burst {
    grid: Grid,
}

impl Burst {
    /// The burst cells of `cfg` (the decode matrix's axes and KV-fit rule).
    pub(crate) fn new(cfg: &RunConfig, kv_capacity: Option<u64>) -> Self {
        Self { grid: Grid::of(cfg, kv_capacity, crate::experiment::decode::fit::Wanted::burst(cfg)) }
    }
}

impl Experiment for Burst {
    fn kind(&self) -> ExperimentKind {
        KIND
    }

    fn cells(&self) -> Vec<PlannedCell> {
        self.grid.cells("burst ", |ctx, conc| CellSpec::grid(KIND, ctx, conc))
    }

    fn skip_now(&self, env: &CellEnv, spec: &CellSpec) -> Option<Skip> {
        self.grid.skip_before_run(env, spec).or_else(|| crate::experiment::decode::section::empty_slice(env, spec))
    }

    fn recover(&self, report: &SessionReport, spec: &CellSpec, _label: &str) -> Vec<Attempt> {
        let CellKey::Grid { ctx, conc, .. } = spec.key else { return Vec::new() };
        let cells = report.burst.iter().flat_map(|b| b.cells.iter());
        let own = cells.filter(|c| (c.ctx, c.conc) == (ctx, conc)).flat_map(|c| c.attempts.iter());
        own.map(|a| Attempt::Burst(Box::new(a.clone()))).collect()
    }

    fn run<'a>(&'a self, env: &'a CellEnv, cell: CellRun<'a>, cancel: &'a CancellationToken) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let CellKey::Grid { ctx, conc, .. } = cell.spec.key else { unreachable!("burst cells are grid cells") };
            let (label, opens_at) = (cell.label.to_string(), cell.opens_at);
            let s = BurstCellSpec { cell: cell.id, label, ctx, conc, attempt: cell.attempt, opens_at };
            Attempt::Burst(Box::new(run_burst_attempt(env, &s, cancel).await))
        })
    }

    fn report(&self, _env: &CellEnv, cells: &[&CellEntry], report: &mut SessionReport) {
        let mut out = Vec::new();
        for c in cells {
            let CellKey::Grid { ctx, conc, .. } = c.spec.key else { continue };
            let attempts = c
                .attempts
                .iter()
                .filter_map(|a| match &**a {
                    Attempt::Burst(b) => Some((**b).clone()),
                    _ => None,
                })
                .collect();
            let (status, timeout_reason, skip) = status_and_reason(&c.status);
            out.push(BurstCellReport {
                ctx,
                ctx_label: format_size(ctx),
                conc,
                status,
                timeout_reason,
                skip,
                attempts,
                baseline: Vec::new(),
                runs: None,
            });
        }
        if !out.is_empty() {
            report.burst =
                Some(BurstSection { ctx_labels: self.grid.ctx_labels(), conc: self.grid.conc.clone(), cells: out });
        }
    }
}
