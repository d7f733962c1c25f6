//! What a cell keeps: its attempts, one typed record per experiment kind.

use crate::cell::spec::{CellSpec, CellStatus};
use crate::report::json::{BurstAttempt, DecodeAttempt};
use crate::report::phase::RoutingPhase;

/// One attempt's report entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Attempt {
    /// A decode attempt.
    Decode(Box<DecodeAttempt>),
    /// A burst attempt.
    Burst(Box<BurstAttempt>),
    /// A routing phase (`tests/fixtures/seed_002.json` layout).
    Routing(Box<RoutingPhase>),
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
