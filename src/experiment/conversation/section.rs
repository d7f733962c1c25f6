//! The conversation experiment behind the [`Experiment`] interface, on the extension seam: its
//! cells (every `--max-concurrency` x `--request-rate`: concurrent sessions x session arrival
//! rate) and its section of the report (`extensions[]`, kind `conversation`).

use super::attempt::{ConversationCell, run_attempt};
use crate::cell::context::CellEnv;
use crate::cell::spec::{CellKey, CellSpec};
use crate::config::{PlanKind, Rate, RunConfig};
use crate::experiment::extension::{recover, section};
use crate::experiment::interface::{CellRun, Experiment, PlannedCell};
use crate::experiment::prepare::{PrepareEnv, Prepared, Setup};
use crate::experiment::record::{Attempt, CellEntry};
use crate::report::json::SessionReport;
use crate::report::kind::ExperimentKind;
use futures_util::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The experiment's name in the plan and the report.
pub const NAME: &str = "conversation";

/// What the report's tables print above its section.
const TITLE: &str = "Conversations: multi-turn sessions, TTFT against the history per turn";

/// The experiment's kind.
pub(crate) fn kind() -> ExperimentKind {
    ExperimentKind::named(NAME).expect("`conversation` is an extension name")
}

/// One cell per concurrency x session arrival rate.
#[derive(Debug, Clone)]
pub struct Conversations {
    conc: Vec<u32>,
    rates: Vec<Rate>,
}

impl Conversations {
    /// The conversation cells of `cfg`.
    pub fn new(cfg: &RunConfig) -> Self {
        let rates = if cfg.rates.is_empty() { vec![Rate::Inf] } else { cfg.rates.clone() };
        Self { conc: cfg.conc.clone(), rates }
    }

    /// The cell's place among the conversation cells.
    fn slot(&self, conc: u32, rate: Rate) -> usize {
        let c = self.conc.iter().position(|&x| x == conc).unwrap_or(0);
        c * self.rates.len() + self.rates.iter().position(|&r| r == rate).unwrap_or(0)
    }
}

/// Prepares `--plan conversation`: its conversations come from the file read with the flags,
/// or are generated per cell.
pub struct ConversationSetup;

impl Setup for ConversationSetup {
    fn plan(&self) -> Option<PlanKind> {
        Some(PlanKind::Conversation)
    }

    fn prepare<'a>(&'a self, env: PrepareEnv<'a>) -> BoxFuture<'a, anyhow::Result<Prepared>> {
        Box::pin(async move { Ok(Prepared::of(Arc::new(Conversations::new(env.cfg)))) })
    }
}

impl Experiment for Conversations {
    fn kind(&self) -> ExperimentKind {
        kind()
    }

    fn cells(&self) -> Vec<PlannedCell> {
        let mut out = Vec::new();
        for &conc in &self.conc {
            for &rate in &self.rates {
                let spec = CellSpec::grid_at(kind(), 0, conc, Some(rate));
                out.push(PlannedCell { spec, label: format!("conversation conc={conc} rate={rate}"), skip: None });
            }
        }
        out
    }

    fn planned(&self, cfg: &RunConfig, spec: &CellSpec) -> Option<Duration> {
        let CellKey::Grid { conc, .. } = spec.key else { return None };
        let c = &cfg.conversation;
        // A turn: its answer at a rough 20 ms a token, then the user's pause.
        let turn = Duration::from_millis(20 * cfg.serve.output_len) + c.think.mean();
        let waves = c.conversations.div_ceil(conc.max(1));
        Some(turn * c.turns * waves)
    }

    fn recover(&self, report: &SessionReport, spec: &CellSpec, _label: &str) -> Vec<Attempt> {
        recover(report, spec)
    }

    fn run<'a>(&'a self, env: &'a CellEnv, cell: CellRun<'a>, cancel: &'a CancellationToken) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let CellKey::Grid { conc, rate, .. } = cell.spec.key else {
                unreachable!("conversation cells are grid cells")
            };
            let rate = rate.unwrap_or(Rate::Inf);
            let c = ConversationCell {
                cell: cell.id,
                slot: self.slot(conc, rate),
                label: cell.label.to_string(),
                conc,
                rate,
                attempt: cell.attempt,
                opens_at: cell.opens_at,
            };
            Attempt::Extension(Box::new(run_attempt(env, &c, cancel).await))
        })
    }

    fn report(&self, _env: &CellEnv, cells: &[&CellEntry], report: &mut SessionReport) {
        report.extensions.push(section(kind(), TITLE, cells));
    }
}
