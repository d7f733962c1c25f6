//! Rounds of repeated runs, read from a cell's attempts alone. Under `--num-runs N` every
//! attempt of a cell is one run, and the runs come in rounds of N:
//!
//! - a measured or errored attempt is a finished run of the open round; the round is complete
//!   once it has N of them;
//! - a paused or stopped attempt is not a run: the round goes on with the next attempt (after
//!   a resume, or `run --resume`);
//! - an attempt the operator skipped ends its round, complete with the runs it has;
//! - the next attempt after a complete round (an operator's re-run `r`) opens a new round.
//!
//! A cell's figures are those of its latest round. With N = 1 a round is one finished attempt,
//! so its latest round is its latest finished attempt, as before repetitions existed.

use crate::report::status::AttemptStatus;

/// One round of runs: attempt positions `start..end` of the cell's list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Round {
    /// Position of its first attempt.
    pub start: usize,
    /// One past its last attempt.
    pub end: usize,
    /// Positions of its finished runs (measured or errored), oldest first.
    pub finished: Vec<usize>,
    /// It has all its runs, or the operator ended it.
    pub complete: bool,
}

impl Round {
    /// Runs it has finished, as a count.
    pub fn done(&self) -> u32 {
        u32::try_from(self.finished.len()).unwrap_or(u32::MAX)
    }
}

/// How far a cell is through its round of runs (the monitor's `run k/N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunProgress {
    /// Runs of the round that finished (measured or errored).
    pub done: u32,
    /// Runs a round plans.
    pub planned: u32,
}

impl RunProgress {
    /// The run under way or next: `k` of `run k/N`.
    pub fn current(self) -> u32 {
        (self.done + 1).min(self.planned)
    }

    /// Runs still to come, the current one included.
    pub fn left(self) -> u32 {
        self.planned.saturating_sub(self.done)
    }

    /// `run 2/3`.
    pub fn text(self) -> String {
        format!("run {}/{}", self.current(), self.planned)
    }
}

/// Every round of attempts with `statuses` (oldest first) under `planned` runs per round
/// (0 reads as 1); a trailing round with no attempt is left out.
pub fn rounds(statuses: &[AttemptStatus], planned: u32) -> Vec<Round> {
    let planned = planned.max(1) as usize;
    let mut out = Vec::new();
    let mut open = Round::default();
    for (i, status) in statuses.iter().enumerate() {
        open.end = i + 1;
        let ends = match status {
            AttemptStatus::Measured | AttemptStatus::Errored => {
                open.finished.push(i);
                open.finished.len() >= planned
            }
            AttemptStatus::SkippedByOperator => true,
            AttemptStatus::Paused | AttemptStatus::Stopped => false,
        };
        if ends {
            open.complete = true;
            out.push(std::mem::replace(&mut open, Round { start: i + 1, end: i + 1, ..Round::default() }));
        }
    }
    if open.end > open.start {
        out.push(open);
    }
    out
}

/// The latest round of attempts with `statuses` (an empty, incomplete one without attempts).
pub fn latest(statuses: &[AttemptStatus], planned: u32) -> Round {
    rounds(statuses, planned).pop().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use AttemptStatus::{Errored as E, Measured as M, Paused as P, SkippedByOperator as S, Stopped as T};

    #[test]
    fn three_runs_make_a_round_and_a_rerun_opens_the_next() {
        let r = rounds(&[M, M, E, M], 3);
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].start, r[0].end, r[0].finished.clone(), r[0].complete), (0, 3, vec![0, 1, 2], true));
        assert_eq!((r[1].start, r[1].finished.clone(), r[1].complete), (3, vec![3], false));
        assert_eq!(latest(&[M, M, E, M], 3).done(), 1);
    }

    #[test]
    fn interrupted_attempts_are_not_runs_and_a_skip_ends_the_round() {
        let r = latest(&[M, P, M, T], 3);
        assert_eq!((r.start, r.end, r.finished.clone(), r.complete), (0, 4, vec![0, 2], false));
        let r = latest(&[M, S], 3);
        assert_eq!((r.finished.clone(), r.complete), (vec![0], true));
        // After a complete round the next attempt is a new round, even a paused one.
        let r = latest(&[M, M, P], 2);
        assert_eq!((r.start, r.finished.len(), r.complete), (2, 0, false));
    }

    #[test]
    fn one_run_per_round_is_the_latest_finished_attempt() {
        for (statuses, start, complete) in
            [(vec![M], 0, true), (vec![M, E], 1, true), (vec![M, P], 1, false), (vec![E, T, M], 1, true)]
        {
            let r = latest(&statuses, 1);
            assert_eq!((r.start, r.complete), (start, complete), "{statuses:?}");
        }
        assert_eq!(latest(&[], 3), Round::default());
        assert!(latest(&[M], 0).complete, "0 reads as 1");
    }
}
