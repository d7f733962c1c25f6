//! The session's cells, their queue and history, and the operator's actions.

use crate::cell::control::CellId;
pub use crate::cell::spec::{CellSpec, CellStatus};
pub use crate::experiment::record::{Attempt, CellEntry};
use crate::report::json::ActionRecord;
use std::collections::VecDeque;
use tokio::time::Instant;

/// All cells, the run queue and the action log. Cloning is cheap: attempts are shared.
#[derive(Debug, Clone)]
pub struct SessionState {
    /// Cells in plan order.
    pub cells: Vec<CellEntry>,
    /// Cells still to run, next first.
    pub queue: VecDeque<CellId>,
    /// Operator actions and session events.
    pub actions: Vec<ActionRecord>,
    /// Session start.
    pub started: Instant,
    /// Load is paused.
    pub paused: bool,
    /// The session is ending.
    pub stopped: bool,
    /// The running cell.
    pub current: Option<CellId>,
    /// Planned and actual cell lengths, for the progress and ETA.
    pub timing: super::progress::Timing,
    /// How the attempts run on the `--start-at` timeline kept their slots, in run order.
    pub slots: Vec<crate::report::shard::SlotRecord>,
    /// What the runner waits for now on the timeline (`--start-at`, a slot), when it waits.
    pub waiting: Option<super::shard_view::TimelineWait>,
}

impl SessionState {
    /// A session over `cells`, all queued in order.
    pub fn new(cells: Vec<(CellSpec, String)>, started: Instant) -> Self {
        let cells: Vec<CellEntry> = cells
            .into_iter()
            .map(|(spec, label)| CellEntry { spec, label, status: CellStatus::Pending, attempts: Vec::new(), runs: 1 })
            .collect();
        let queue = (0..cells.len()).collect();
        let timing = super::progress::Timing::new(vec![None; cells.len()]);
        let slots = Vec::new();
        let (actions, waiting) = (Vec::new(), None);
        Self { cells, queue, actions, started, paused: false, stopped: false, current: None, timing, slots, waiting }
    }

    /// The next cell to run (pending ones only), removed from the queue.
    pub fn next_cell(&mut self) -> Option<CellId> {
        while let Some(id) = self.queue.pop_front() {
            if self.cells.get(id).is_some_and(|c| c.status == CellStatus::Pending) {
                return Some(id);
            }
        }
        None
    }

    /// True when a pending cell waits in the queue.
    pub fn has_queued(&self) -> bool {
        self.queue.iter().any(|id| self.cells.get(*id).is_some_and(|c| c.status == CellStatus::Pending))
    }

    /// Logs an action at `now`.
    pub fn act(&mut self, action: &str, cell: Option<CellId>) {
        let label = cell.and_then(|c| self.cells.get(c)).map(|c| c.label.clone());
        let at_s = Instant::now().saturating_duration_since(self.started).as_secs_f64();
        self.actions.push(ActionRecord { at_s, action: action.to_string(), cell: label });
    }

    /// Marks a pending cell skipped by the operator; false if it is not pending. With
    /// repetitions the skip ends the cell's round, and a cell with a measured run of it keeps
    /// its figures (measured).
    pub fn skip(&mut self, id: CellId) -> bool {
        match self.cells.get_mut(id) {
            Some(c) if c.status == CellStatus::Pending => {
                let kept = c.end_round_by_skip();
                c.status = if kept { CellStatus::Measured } else { CellStatus::SkippedByOperator };
                self.queue.retain(|q| *q != id);
                true
            }
            _ => false,
        }
    }

    /// Queues a cell that has run to run again next; false otherwise.
    pub fn rerun(&mut self, id: CellId) -> bool {
        match self.cells.get_mut(id) {
            Some(c) if c.status.is_final() && !matches!(c.status, CellStatus::Skipped(_)) => {
                c.status = CellStatus::Pending;
                self.queue.retain(|q| *q != id);
                self.queue.push_front(id);
                true
            }
            _ => false,
        }
    }

    /// Puts a cell back at the front of the queue (after a pause).
    pub fn requeue_front(&mut self, id: CellId) {
        if let Some(c) = self.cells.get_mut(id) {
            c.status = CellStatus::Pending;
        }
        self.queue.retain(|q| *q != id);
        self.queue.push_front(id);
    }

    /// True when every cell has an outcome.
    pub fn all_final(&self) -> bool {
        self.cells.iter().all(|c| c.status.is_final())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::kind::ExperimentKind;

    fn state(n: usize) -> SessionState {
        let cells =
            (0..n).map(|i| (CellSpec::grid(ExperimentKind::Decode, 0, i as u32 + 1), format!("c{i}"))).collect();
        SessionState::new(cells, Instant::now())
    }

    #[test]
    fn cells_run_in_order_and_skips_leave_the_queue() {
        let mut s = state(3);
        assert!(s.skip(1));
        assert!(!s.skip(1), "already skipped");
        assert_eq!(s.next_cell(), Some(0));
        assert_eq!(s.next_cell(), Some(2));
        assert_eq!(s.next_cell(), None);
    }

    #[test]
    fn rerun_queues_a_finished_cell_first() {
        let mut s = state(3);
        assert_eq!(s.next_cell(), Some(0));
        assert!(!s.rerun(1), "pending cells cannot be re-run");
        s.cells[0].status = CellStatus::Measured;
        assert!(s.rerun(0));
        assert_eq!(s.next_cell(), Some(0));
        assert_eq!(s.next_cell(), Some(1));
    }

    #[test]
    fn skipped_for_kv_cannot_be_rerun_and_actions_are_logged() {
        let mut s = state(2);
        s.cells[1].status =
            CellStatus::Skipped(crate::report::skip::Skip::new(crate::report::skip::SkipKind::KvCache, "deficit"));
        assert!(!s.rerun(1));
        s.act("pause", Some(0));
        assert_eq!(s.actions[0].cell.as_deref(), Some("c0"));
        s.requeue_front(0);
        assert_eq!(s.next_cell(), Some(0));
    }

    #[test]
    fn skipping_a_cell_paused_mid_round_keeps_its_measured_runs() {
        use crate::report::status::AttemptStatus;
        let attempt = |n: u32, st| {
            std::sync::Arc::new(Attempt::Decode(Box::new(crate::report::tests_schema::full_attempt(n, st))))
        };
        let mut s = state(2);
        s.cells[0].runs = 3;
        s.cells[0].attempts = vec![attempt(1, AttemptStatus::Measured), attempt(2, AttemptStatus::Paused)];
        assert!(s.skip(0));
        assert_eq!(s.cells[0].status, CellStatus::Measured, "its first run stands");
        assert_eq!(s.cells[0].attempts[1].status(), AttemptStatus::SkippedByOperator);
        s.cells[1].runs = 3;
        s.cells[1].attempts = vec![attempt(1, AttemptStatus::Paused)];
        assert!(s.skip(1));
        assert_eq!(s.cells[1].status, CellStatus::SkippedByOperator, "no run: skipped");
    }
}
