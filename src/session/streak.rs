//! The streak of cells failing alike, counted as the runner finishes attempts: it halts the
//! session once long enough (`cell::halt::FailureStreak`).

use super::state::{Attempt, CellEntry, CellStatus};
use crate::cell::context::CellEnv;
use crate::cell::halt::FailureStreak;
use crate::load::sample::ErrorKind;
use crate::report::status::AttemptStatus;

/// What a finished `attempt` of `cell` tells the streak: None when it does not count, else the
/// one error kind every request failed with (and an example), or None inside when it did not
/// fail alike. An attempt the operator cut short says nothing about the server either way.
/// With repetitions the streak counts cells, not runs: a cell counts once its round ends, as
/// failed when none of its runs measured.
fn counted<'a>(attempt: &'a Attempt, cell: &CellEntry) -> Option<Option<(ErrorKind, Option<&'a str>)>> {
    if !matches!(attempt.status(), AttemptStatus::Measured | AttemptStatus::Errored) {
        return None;
    }
    match cell.runs {
        0 | 1 => Some(attempt.sole_failure()),
        _ if cell.status == CellStatus::Pending => None,
        _ => Some(attempt.sole_failure().filter(|_| cell.measured_runs().is_empty())),
    }
}

/// Counts a finished attempt of `cell` in the streak of cells failing alike ([`counted`]) and
/// halts the session once it is long enough ([`FailureStreak`]), with the line said as a
/// warning.
pub(crate) fn halt_on_streak(env: &CellEnv, streak: &mut FailureStreak, attempt: &Attempt, cell: &CellEntry) {
    let Some(failure) = counted(attempt, cell) else { return };
    if let Some(line) = streak.observe(failure)
        && env.halt.raise(line.clone())
    {
        env.warn(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn failed(n: u32) -> Arc<Attempt> {
        let mut a = crate::report::tests_schema::full_attempt(n, AttemptStatus::Errored);
        (a.errors, a.error_examples) = ([(ErrorKind::ServerError, 4)].into(), Default::default());
        Arc::new(Attempt::Decode(Box::new(a)))
    }

    fn cell(runs: u32, status: CellStatus, attempts: Vec<Arc<Attempt>>) -> CellEntry {
        let spec = crate::cell::spec::CellSpec::grid(crate::report::kind::ExperimentKind::Decode, 0, 1);
        CellEntry { spec, label: "c".into(), status, attempts, runs }
    }

    #[test]
    fn with_repetitions_a_cell_counts_once_its_round_ends() {
        let one = cell(1, CellStatus::Errored, vec![failed(1)]);
        assert_eq!(counted(&one.attempts[0], &one), Some(Some((ErrorKind::ServerError, None))));
        // Run 1 of 3 failed: the cell runs again and is not counted yet.
        let mid = cell(3, CellStatus::Pending, vec![failed(1)]);
        assert_eq!(counted(&mid.attempts[0], &mid), None);
        let done = cell(3, CellStatus::Errored, vec![failed(1), failed(2), failed(3)]);
        assert_eq!(counted(&done.attempts[2], &done), Some(Some((ErrorKind::ServerError, None))));
        // A round with a measured run did not fail alike.
        let measured =
            Arc::new(Attempt::Decode(Box::new(crate::report::tests_schema::full_attempt(1, AttemptStatus::Measured))));
        let mixed = cell(2, CellStatus::Measured, vec![measured, failed(2)]);
        assert_eq!(counted(&mixed.attempts[1], &mixed), Some(None));
    }
}
