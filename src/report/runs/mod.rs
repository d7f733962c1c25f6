//! Repetitions (`run --num-runs N`): every cell runs N times back to back, each run one
//! attempt, in rounds ([`round`]). A cell's `runs` block holds, over the measured runs of its
//! latest round, every headline figure's mean, sd, CV and confidence interval
//! ([`crate::stats::RunStats`]); with N > 1 the tables show the mean ([`mean_of`]) and say
//! so. Absent with N = 1, so such reports are what they were before repetitions existed.

mod blend;
pub(crate) mod kinds;
pub mod render;
pub mod round;

use super::json::SessionReport;
use super::status::AttemptStatus;
use crate::stats::RunStats;
use crate::stats::repeats::DEFAULT_LEVEL;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the `headline` of a block says: the cell's tables show the mean of its runs.
pub const HEADLINE_MEAN: &str = "mean";

/// A cell's repeated runs: its latest round and the statistics of its figures over them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunsBlock {
    /// Runs a round plans (`--num-runs`).
    pub planned: u32,
    /// Measured runs of the round: the figures are over these.
    pub n: u32,
    /// Attempt numbers of the round's finished runs (measured or errored), oldest first.
    pub attempts: Vec<u32>,
    /// Which value the cell's tables show for each figure: `mean` (of the measured runs).
    pub headline: String,
    /// Each headline figure over the measured runs, by name with its unit (`aggregate_tok_s`,
    /// `p99_ttft_ms`, `cache_hit_ratio`, ...).
    pub figures: BTreeMap<String, RunStats>,
}

impl RunsBlock {
    /// The statistics of figure `name`, when the runs had it.
    pub fn figure(&self, name: &str) -> Option<&RunStats> {
        self.figures.get(name)
    }
}

/// An attempt record whose figures repeat over runs: each experiment's attempt type.
pub(crate) trait Repeated: Clone {
    /// Its attempt number, when the record keeps one.
    fn number(&self) -> Option<u32>;
    /// How it ended.
    fn status(&self) -> AttemptStatus;
    /// Its headline figures by name, in the order tables list them.
    fn figures(&self) -> Vec<(String, Option<f64>)>;
    /// Sets figure `name` to `value` (a mean over runs); a figure it has no place for is left.
    fn set(&mut self, name: &str, value: f64);
    /// Averages its latency distributions over `runs` (`blend`), so the percentiles of the mean
    /// stay in order; nothing by default.
    fn blend(&mut self, _runs: &[&Self]) {}
}

/// The latest round of `attempts` (oldest first) under `planned` runs per round.
pub(crate) fn latest_round<T: Repeated>(attempts: &[T], planned: u32) -> round::Round {
    let statuses: Vec<AttemptStatus> = attempts.iter().map(Repeated::status).collect();
    round::latest(&statuses, planned)
}

/// The `runs` block of a cell with `attempts` under `planned` runs per round; None while its
/// latest round has no finished run.
pub(crate) fn block_of<T: Repeated>(attempts: &[T], planned: u32) -> Option<RunsBlock> {
    let round = latest_round(attempts, planned);
    if round.finished.is_empty() {
        return None;
    }
    let number = |i: usize| attempts[i].number().unwrap_or(i as u32 + 1);
    let measured: Vec<&T> =
        round.finished.iter().map(|i| &attempts[*i]).filter(|a| a.status() == AttemptStatus::Measured).collect();
    Some(RunsBlock {
        planned,
        n: measured.len() as u32,
        attempts: round.finished.iter().map(|i| number(*i)).collect(),
        headline: HEADLINE_MEAN.into(),
        figures: figure_stats(&measured),
    })
}

/// Every figure of `runs` over them (figures no run has are left out).
fn figure_stats<T: Repeated>(runs: &[&T]) -> BTreeMap<String, RunStats> {
    let mut values: Vec<(String, Vec<f64>)> = Vec::new();
    for run in runs {
        for (name, value) in run.figures() {
            let Some(v) = value.filter(|v| v.is_finite()) else { continue };
            match values.iter_mut().find(|(n, _)| *n == name) {
                Some((_, list)) => list.push(v),
                None => values.push((name, vec![v])),
            }
        }
    }
    values.into_iter().filter_map(|(name, v)| Some((name, RunStats::of(&v, DEFAULT_LEVEL)?))).collect()
}

/// The runs of `attempts` named by `block` (its round's finished runs), measured ones only.
pub(crate) fn measured_runs<'a, T: Repeated>(attempts: &'a [T], block: &RunsBlock) -> Vec<&'a T> {
    let numbered = attempts.iter().enumerate().map(|(i, a)| (a.number().unwrap_or(i as u32 + 1), a));
    let mut out: Vec<&T> = numbered.filter(|(n, _)| block.attempts.contains(n)).map(|(_, a)| a).collect();
    out.retain(|a| a.status() == AttemptStatus::Measured);
    out
}

/// What the tables show of a cell with `attempts` and `block`: its last measured run with
/// every figure of the block set to its mean; None when no run of the round measured.
pub(crate) fn mean_of<T: Repeated>(attempts: &[T], block: &RunsBlock) -> Option<T> {
    let runs = measured_runs(attempts, block);
    let mut shown = (*runs.last()?).clone();
    shown.blend(&runs);
    for (name, stats) in &block.figures {
        shown.set(name, stats.mean);
    }
    Some(shown)
}

/// The mean of `runs` (measured runs, oldest first): the last of them with every figure set
/// to its mean, and each figure's statistics; None without a run.
pub(crate) fn mean_run<T: Repeated>(runs: &[&T]) -> Option<(T, BTreeMap<String, RunStats>)> {
    let mut shown = (*runs.last()?).clone();
    shown.blend(runs);
    let stats = figure_stats(runs);
    for (name, s) in &stats {
        shown.set(name, s.mean);
    }
    Some((shown, stats))
}

/// The attempt a cell's tables show: the mean of its runs when it has a `runs` block with a
/// measured run, else its last attempt (as before repetitions).
pub(crate) fn shown<'a, T: Repeated>(attempts: &'a [T], block: Option<&RunsBlock>) -> Option<std::borrow::Cow<'a, T>> {
    match block.and_then(|b| mean_of(attempts, b)) {
        Some(mean) => Some(std::borrow::Cow::Owned(mean)),
        None => attempts.last().map(std::borrow::Cow::Borrowed),
    }
}

/// The routing phases as the tables show them: with repetitions each phase's mean over its
/// runs (from `phase_history`), else the report's `phases` as they are.
pub(crate) fn shown_phases(report: &SessionReport) -> std::borrow::Cow<'_, [super::phase::RoutingPhase]> {
    if report.phases.iter().all(|p| p.runs.is_none()) {
        return std::borrow::Cow::Borrowed(&report.phases);
    }
    let shown = |p: &super::phase::RoutingPhase| {
        let own: Vec<_> = report.phase_history.iter().filter(|h| h.phase == p.phase).cloned().collect();
        let mean = p.runs.as_ref().and_then(|b| mean_of(&own, b));
        mean.map(|m| super::phase::RoutingPhase { runs: p.runs.clone(), baseline: p.baseline.clone(), ..m })
            .unwrap_or_else(|| p.clone())
    };
    std::borrow::Cow::Owned(report.phases.iter().map(shown).collect())
}

/// Fills the `runs` block of every cell and routing phase of `report` under `planned` runs
/// per round; leaves a report of one run per cell (`planned` ≤ 1) as it is.
pub fn annotate(report: &mut SessionReport, planned: u32) {
    if planned <= 1 {
        return;
    }
    for c in report.decode.iter_mut().flat_map(|d| d.cells.iter_mut()) {
        c.runs = block_of(&c.attempts, planned);
    }
    for c in report.burst.iter_mut().flat_map(|b| b.cells.iter_mut()) {
        c.runs = block_of(&c.attempts, planned);
    }
    for c in report.serve.iter_mut().flat_map(|s| s.cells.iter_mut()) {
        c.runs = block_of(&c.attempts, planned);
    }
    for c in report.extensions.iter_mut().flat_map(|s| s.cells.iter_mut()) {
        c.runs = block_of(&c.attempts, planned);
    }
    let history = &report.phase_history;
    for p in report.phases.iter_mut() {
        let own: Vec<_> = history.iter().filter(|h| h.phase == p.phase).cloned().collect();
        p.runs = block_of(&own, planned);
    }
}

/// True when any cell or phase of `report` has a `runs` block.
pub fn any(report: &SessionReport) -> bool {
    let decode = report.decode.iter().flat_map(|d| &d.cells).any(|c| c.runs.is_some());
    let burst = report.burst.iter().flat_map(|b| &b.cells).any(|c| c.runs.is_some());
    let serve = report.serve.iter().flat_map(|s| &s.cells).any(|c| c.runs.is_some());
    let ext = report.extensions.iter().flat_map(|s| &s.cells).any(|c| c.runs.is_some());
    decode || burst || serve || ext || report.phases.iter().any(|p| p.runs.is_some())
}

#[cfg(test)]
mod formats_tests;
#[cfg(test)]
mod tests;
