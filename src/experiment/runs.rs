//! A cell's repeated runs as the session sees them (`run --num-runs N`): its latest round
//! (`report::runs::round`), how far through it the cell is, the status a finished round
//! gives it, and the attempt its headline reads (the mean of the round's measured runs).

use super::record::{Attempt, CellEntry};
use crate::cell::headline::Headline;
use crate::cell::spec::CellStatus;
pub use crate::report::runs::round::RunProgress;
use crate::report::runs::round::{self, Round};
use crate::report::runs::{Repeated, mean_run};
use crate::report::status::AttemptStatus;
use crate::stats::RunStats;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Every figure of a cell over its runs, by name.
pub type FigureStats = BTreeMap<String, RunStats>;

/// The mean of typed runs `T` among `runs`, wrapped back as an [`Attempt`].
fn mean_as<T: Repeated>(
    runs: &[&Attempt],
    pick: fn(&Attempt) -> Option<&T>,
    wrap: fn(T) -> Attempt,
) -> Option<(Attempt, FigureStats)> {
    let typed: Vec<&T> = runs.iter().filter_map(|a| pick(a)).collect();
    mean_run(&typed).map(|(mean, stats)| (wrap(mean), stats))
}

impl Attempt {
    /// The mean of `runs` (measured runs of one cell, oldest first): the last with every
    /// headline figure set to its mean, and each figure's statistics; None without a run.
    pub fn mean_of(runs: &[&Attempt]) -> Option<(Attempt, FigureStats)> {
        match runs.first()? {
            Attempt::Decode(_) => mean_as(
                runs,
                |a| if let Attempt::Decode(d) = a { Some(&**d) } else { None },
                |t| Attempt::Decode(Box::new(t)),
            ),
            Attempt::Burst(_) => mean_as(
                runs,
                |a| if let Attempt::Burst(b) = a { Some(&**b) } else { None },
                |t| Attempt::Burst(Box::new(t)),
            ),
            Attempt::Routing(_) => mean_as(
                runs,
                |a| if let Attempt::Routing(p) = a { Some(&**p) } else { None },
                |t| Attempt::Routing(Box::new(t)),
            ),
            Attempt::Serve(_) => mean_as(
                runs,
                |a| if let Attempt::Serve(s) = a { Some(&**s) } else { None },
                |t| Attempt::Serve(Box::new(t)),
            ),
            Attempt::Extension(_) => mean_as(
                runs,
                |a| if let Attempt::Extension(e) = a { Some(&**e) } else { None },
                |t| Attempt::Extension(Box::new(t)),
            ),
        }
    }
}

impl CellEntry {
    /// Its latest round of runs.
    pub fn round(&self) -> Round {
        let statuses: Vec<AttemptStatus> = self.attempts.iter().map(|a| a.status()).collect();
        round::latest(&statuses, self.runs)
    }

    /// How far it is through its latest round; None without repetitions (one run per cell).
    pub fn run_progress(&self) -> Option<RunProgress> {
        (self.runs > 1).then(|| RunProgress { done: self.round().done(), planned: self.runs })
    }

    /// True while its latest round lacks runs (it runs again, back to back).
    pub fn wants_runs(&self) -> bool {
        self.runs > 1 && !self.round().complete
    }

    /// The measured runs of its latest round, oldest first.
    pub fn measured_runs(&self) -> Vec<&Attempt> {
        let round = self.round();
        let runs = round.finished.iter().filter_map(|i| self.attempts.get(*i));
        runs.map(|a| &**a).filter(|a| a.status() == AttemptStatus::Measured).collect()
    }

    /// The mean of its latest round's measured runs and their figures' statistics, with
    /// repetitions; None with one run per cell or before a run of the round measured.
    pub fn mean(&self) -> Option<(Attempt, FigureStats)> {
        if self.runs <= 1 {
            return None;
        }
        Attempt::mean_of(&self.measured_runs())
    }

    /// The attempt its headline reads: the mean of its runs ([`CellEntry::mean`]), else its
    /// latest attempt.
    pub fn shown(&self) -> Option<Arc<Attempt>> {
        self.shown_with_stats().0
    }

    /// [`CellEntry::shown`], with each figure's statistics over the runs (empty without
    /// repetitions): what the monitor and the knee read.
    pub fn shown_with_stats(&self) -> (Option<Arc<Attempt>>, FigureStats) {
        match self.mean() {
            Some((mean, stats)) => (Some(Arc::new(mean)), stats),
            None => (self.attempts.last().cloned(), FigureStats::new()),
        }
    }

    /// Its headline figures ([`CellEntry::shown`]'s).
    pub fn headline(&self) -> Option<Headline> {
        self.shown().map(|a| a.headline())
    }

    /// The status a cell whose latest round ended gets: measured when a run of it measured,
    /// errored when every run failed, skipped by the operator when none finished.
    pub fn round_status(&self) -> CellStatus {
        let round = self.round();
        let statuses = round.finished.iter().filter_map(|i| self.attempts.get(*i)).map(|a| a.status());
        let mut seen = false;
        for s in statuses {
            if s == AttemptStatus::Measured {
                return CellStatus::Measured;
            }
            seen = true;
        }
        if seen { CellStatus::Errored } else { CellStatus::SkippedByOperator }
    }

    /// With repetitions, its last attempt marked skipped when it was interrupted (paused or
    /// stopped): the operator's skip of a waiting cell ends its round, so a re-run opens the
    /// next one; true when the round had a measured run (the cell keeps its figures).
    pub fn end_round_by_skip(&mut self) -> bool {
        if self.runs <= 1 {
            return false;
        }
        if let Some(last) = self.attempts.last_mut()
            && matches!(last.status(), AttemptStatus::Paused | AttemptStatus::Stopped)
        {
            let mut skipped = (**last).clone();
            skipped.set_status(AttemptStatus::SkippedByOperator);
            *last = Arc::new(skipped);
        }
        !self.measured_runs().is_empty()
    }
}

#[cfg(test)]
#[path = "runs_tests.rs"]
mod tests;
