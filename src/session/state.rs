//! The session's cells, their queue and history, and the operator's actions.

use super::control::CellId;
use crate::report::json::{ActionRecord, DecodeAttempt};
use std::collections::VecDeque;
use tokio::time::Instant;

/// What a cell measures.
#[derive(Debug, Clone, PartialEq)]
pub enum CellSpec {
    /// Sustained decode: `conc` closed-loop streams with `ctx`-token prompts.
    Decode {
        /// Context size, tokens.
        ctx: u64,
        /// Requested streams.
        conc: u32,
    },
    /// Phase 3: a finite burst of `conc` requests with `ctx`-token prompts, end to end.
    Burst {
        /// Context size, tokens.
        ctx: u64,
        /// Requests in the burst.
        conc: u32,
    },
    /// One routing phase (round x scenario x route); its label is the phase name, e.g.
    /// `r1-hot90-prefix-cache`.
    Routing {
        /// 1-based round.
        round: u32,
        /// Cache scenario (`cold-uniform`, `warm-uniform`, `hot50`, `hot90`).
        scenario: String,
        /// Routing strategy (`random`, `least-request`, `prefix-cache`).
        route: String,
    },
}

/// Where a cell stands.
#[derive(Debug, Clone, PartialEq)]
pub enum CellStatus {
    /// Not run yet (or queued again).
    Pending,
    /// Running now.
    Running,
    /// Measured (decode window ran, burst or phase finished).
    Measured,
    /// No measurement: every request failed.
    Errored,
    /// Skipped before it started, with the reason (e.g. the KV deficit).
    Skipped(String),
    /// Skipped by the operator.
    SkippedByOperator,
}

impl CellStatus {
    /// The report name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Pending | Self::Running => "pending",
            Self::Measured => "measured",
            Self::Errored => "errored",
            Self::Skipped(_) => "skipped",
            Self::SkippedByOperator => "skipped_by_operator",
        }
    }

    /// True once the cell has an outcome.
    pub fn is_final(&self) -> bool {
        !matches!(self, Self::Pending | Self::Running)
    }
}

/// One attempt's report entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Attempt {
    /// A decode attempt.
    Decode(Box<DecodeAttempt>),
    /// A burst attempt.
    Burst(Box<crate::report::json::BurstAttempt>),
    /// A routing phase (seed 002 layout).
    Routing(Box<serde_json::Value>),
}

/// A cell of the plan with its history.
#[derive(Debug, Clone)]
pub struct CellEntry {
    /// What it measures.
    pub spec: CellSpec,
    /// Display label.
    pub label: String,
    /// Current status.
    pub status: CellStatus,
    /// Every attempt, oldest first (shared with the monitor's snapshots).
    pub attempts: Vec<std::sync::Arc<Attempt>>,
}

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
}

impl SessionState {
    /// A session over `cells`, all queued in order.
    pub fn new(cells: Vec<(CellSpec, String)>, started: Instant) -> Self {
        let cells: Vec<CellEntry> = cells
            .into_iter()
            .map(|(spec, label)| CellEntry { spec, label, status: CellStatus::Pending, attempts: Vec::new() })
            .collect();
        let queue = (0..cells.len()).collect();
        Self { cells, queue, actions: Vec::new(), started, paused: false, stopped: false, current: None }
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

    /// Logs an action at `now`.
    pub fn act(&mut self, action: &str, cell: Option<CellId>) {
        let label = cell.and_then(|c| self.cells.get(c)).map(|c| c.label.clone());
        let at_s = Instant::now().saturating_duration_since(self.started).as_secs_f64();
        self.actions.push(ActionRecord { at_s, action: action.to_string(), cell: label });
    }

    /// Marks a pending cell skipped by the operator; false if it is not pending.
    pub fn skip(&mut self, id: CellId) -> bool {
        match self.cells.get_mut(id) {
            Some(c) if c.status == CellStatus::Pending => {
                c.status = CellStatus::SkippedByOperator;
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

    fn state(n: usize) -> SessionState {
        let cells = (0..n).map(|i| (CellSpec::Decode { ctx: 0, conc: i as u32 + 1 }, format!("c{i}"))).collect();
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
        s.cells[1].status = CellStatus::Skipped("deficit".into());
        assert!(!s.rerun(1));
        s.act("pause", Some(0));
        assert_eq!(s.actions[0].cell.as_deref(), Some("c0"));
        s.requeue_front(0);
        assert_eq!(s.next_cell(), Some(0));
    }
}
