//! The sustained-decode experiment behind the [`Experiment`] interface: its ctx x conc cells
//! and its section of the report.

use super::attempt::run_decode_attempt;
use super::grid::Grid;
use super::spec::DecodeCellSpec;
use crate::cell::context::CellEnv;
use crate::cell::control::KnobInbox;
use crate::cell::spec::{CellKey, CellSpec, CellStatus};
use crate::config::{Rate, RunConfig};
use crate::experiment::interface::{CellRun, Experiment, PlannedCell};
use crate::experiment::record::{Attempt, CellEntry};
use crate::report::json::{DecodeCell, DecodeSection, SessionReport};
use crate::report::kind::ExperimentKind;
use crate::report::skip::{Skip, SkipKind};
use crate::report::status::{AttemptStatus, CellOutcome};
use crate::units::format_size;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

/// The experiment's name in the plan and the report.
pub(crate) const KIND: ExperimentKind = ExperimentKind::Decode;

/// The sustained-decode matrix (docs/reports.md §1.1 in words: `conc` closed-loop streams
/// with `ctx`-token prompts per cell; with `--request-rate`, open-loop arrivals at each rate
/// with at most `conc` in flight).
#[derive(Debug, Clone)]
pub struct Decode {
    grid: Grid,
    /// Open-loop rates (`--request-rate`): each conc column becomes one column per rate.
    rates: Vec<Rate>,
}

impl Decode {
    /// The matrix of `cfg`, skipping cells that cannot fit in `kv_capacity` tokens.
    pub fn new(cfg: &RunConfig, kv_capacity: Option<u64>) -> Self {
        Self { grid: Grid::of(cfg, kv_capacity, super::fit::Wanted::decode(cfg)), rates: cfg.rates.clone() }
    }

    /// Open-loop cells: every ctx x conc x rate, the rate in the label.
    fn rate_cells(&self) -> Vec<PlannedCell> {
        let mut out = Vec::new();
        for cell in self.grid.cells("", |ctx, conc| CellSpec::grid(KIND, ctx, conc)) {
            let CellKey::Grid { ctx, conc, .. } = cell.spec.key else { continue };
            for &rate in &self.rates {
                let spec = CellSpec::grid_at(KIND, ctx, conc, Some(rate));
                let label = format!("{} rate={}", cell.label, spec.load_label(false).unwrap_or_default());
                out.push(PlannedCell { spec, label, skip: cell.skip.clone() });
            }
        }
        out
    }
}

/// Why a closed-loop cell (decode, or a burst) has nothing for this shard to send: its slice of
/// the cell's streams is 0 (conc below the shard count). The cell's slot of the timeline stays
/// empty.
pub(crate) fn empty_slice(env: &CellEnv, spec: &CellSpec) -> Option<Skip> {
    let CellKey::Grid { conc, rate: None, .. } = spec.key else { return None };
    let (slice, shard) = (env.cfg.slice(), env.cfg.shard?);
    (slice.share(conc) == 0).then(|| {
        Skip::new(
            SkipKind::Plan,
            format!("shard {shard} has no stream of conc={conc} (0 of its {} shards' split)", shard.count),
        )
    })
}

/// A cell's report status and, when skipped, why.
pub(crate) fn status_and_reason(status: &CellStatus) -> (CellOutcome, Option<String>, Option<SkipKind>) {
    match status {
        CellStatus::Skipped(s) => (CellOutcome::Skipped, Some(s.reason.clone()), Some(s.kind)),
        s => (s.outcome(), None, None),
    }
}

/// The knees of the decode rows of `cells`: each cell read as its headline reads it (with
/// repetitions the mean of its runs, with its aggregate tok/s over them).
fn knees_of(cells: &[&CellEntry]) -> Vec<super::knee::GridKnee> {
    let views: Vec<_> = cells.iter().map(|c| c.shown_with_stats()).collect();
    let rows = cells.iter().zip(&views).enumerate().map(|(i, (c, (shown, stats)))| {
        (i, &c.spec, shown.as_deref().and_then(Attempt::as_decode), stats.get("aggregate_tok_s"))
    });
    super::knee::row_knees(rows)
}

impl Experiment for Decode {
    fn kind(&self) -> ExperimentKind {
        KIND
    }

    fn cells(&self) -> Vec<PlannedCell> {
        if !self.rates.is_empty() {
            return self.rate_cells();
        }
        self.grid.cells("", |ctx, conc| CellSpec::grid(KIND, ctx, conc))
    }

    fn skip_now(&self, env: &CellEnv, spec: &CellSpec) -> Option<Skip> {
        self.grid.skip_before_run(env, spec).or_else(|| empty_slice(env, spec))
    }

    /// Under `--stop-at-knee`, a cell past the knee its row already has.
    fn skip_given(&self, env: &CellEnv, spec: &CellSpec, cells: &[&CellEntry]) -> Option<Skip> {
        if !env.cfg.decode.stop_at_knee {
            return None;
        }
        let knees = knees_of(cells);
        super::knee::past_knee(&knees, |i| cells.get(i).map(|c| c.spec.clone()), spec)
    }

    /// Warmup (the settle time after admission; on the `--start-at` timeline the whole
    /// --warmup-timeout) plus the window.
    fn planned(&self, cfg: &RunConfig, _spec: &CellSpec) -> Option<std::time::Duration> {
        let warmup = if cfg.start_at.is_some() { cfg.decode.warmup_timeout } else { cfg.decode.settle };
        Some(warmup + cfg.window)
    }

    fn recover(&self, report: &SessionReport, spec: &CellSpec, _label: &str) -> Vec<Attempt> {
        let CellKey::Grid { ctx, conc, rate } = spec.key else { return Vec::new() };
        let cells = report.decode.iter().flat_map(|d| d.cells.iter());
        let own = cells.filter(|c| (c.ctx, c.conc, c.rate) == (ctx, conc, rate)).flat_map(|c| c.attempts.iter());
        own.map(|a| Attempt::Decode(Box::new(a.clone()))).collect()
    }

    fn run<'a>(&'a self, env: &'a CellEnv, cell: CellRun<'a>, cancel: &'a CancellationToken) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let CellKey::Grid { ctx, conc, rate } = cell.spec.key else { unreachable!("decode cells are grid cells") };
            // A shard sends its slice (`load::slice`): its streams of a closed-loop cell, its
            // share of the in-flight cap of an open-loop one (arrivals are split as they come).
            let slice = env.cfg.slice();
            let (planned_conc, label, opens_at) = (conc, cell.label.to_string(), cell.opens_at);
            let conc = if rate.is_some() { slice.cap(conc) } else { slice.share(conc) };
            let attempt = cell.attempt;
            let s = DecodeCellSpec { cell: cell.id, label, ctx, conc, planned_conc, rate, attempt, slice, opens_at };
            let knob = cell.knob.and_then(KnobInbox::take);
            let mut a = run_decode_attempt(env, &s, cancel, knob).await;
            // The shard's own offered rate: every count-th arrival of the cell's schedule.
            a.rate = a.rate.map(|r| r.scaled(1.0 / f64::from(slice.count.max(1))));
            Attempt::Decode(Box::new(a))
        })
    }

    fn report(&self, _env: &CellEnv, cells: &[&CellEntry], report: &mut SessionReport) {
        let mut out = Vec::new();
        let mut sources = std::collections::BTreeSet::new();
        for c in cells {
            let CellKey::Grid { ctx, conc, rate } = c.spec.key else { continue };
            let attempts: Vec<_> = c
                .attempts
                .iter()
                .filter_map(|a| match &**a {
                    Attempt::Decode(d) => Some((**d).clone()),
                    _ => None,
                })
                .collect();
            if let Some(last) = attempts.last().filter(|a| a.status == AttemptStatus::Measured) {
                sources.insert(last.aggregate_source);
            }
            let (status, timeout_reason, skip) = status_and_reason(&c.status);
            out.push(DecodeCell {
                ctx,
                ctx_label: format_size(ctx),
                conc,
                status,
                timeout_reason,
                skip,
                attempts,
                baseline: Vec::new(),
                runs: None,
                rate,
            });
        }
        if out.is_empty() {
            return;
        }
        // Listed by name, as the report always has.
        let mut sources: Vec<_> = sources.into_iter().collect();
        sources.sort_by_key(|s| s.as_str());
        let knees = knees_of(cells);
        report.decode = Some(DecodeSection {
            ctx_labels: self.grid.ctx_labels(),
            conc: self.grid.conc.clone(),
            cells: out,
            aggregate_sources: sources,
            knees: knees.into_iter().map(|k| k.row).collect(),
        });
    }
}
