//! What a cell keeps: its attempts, one typed record per experiment kind. This enum and its
//! dispatch below are where an experiment registers its record.

use crate::cell::headline::Headline;
use crate::cell::spec::{CellSpec, CellStatus};
use crate::report::json::{BurstAttempt, DecodeAttempt};
use crate::report::phase::RoutingPhase;
use crate::report::serve::ServeAttempt;
use crate::report::status::AttemptStatus;

/// One attempt's report entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Attempt {
    /// A decode attempt.
    Decode(Box<DecodeAttempt>),
    /// A burst attempt.
    Burst(Box<BurstAttempt>),
    /// A routing phase (`tests/fixtures/seed_002.json` layout).
    Routing(Box<RoutingPhase>),
    /// A serve attempt.
    Serve(Box<ServeAttempt>),
}

impl Attempt {
    /// How the attempt ended.
    pub fn status(&self) -> AttemptStatus {
        match self {
            Self::Decode(d) => d.status,
            Self::Burst(b) => b.status,
            Self::Routing(p) => p.status,
            Self::Serve(s) => s.status,
        }
    }

    /// Records how the attempt ended (the runner's verdict on an interrupted attempt).
    pub fn set_status(&mut self, status: AttemptStatus) {
        match self {
            Self::Decode(d) => d.status = status,
            Self::Burst(b) => b.status = status,
            Self::Routing(p) => p.status = status,
            Self::Serve(s) => s.status = status,
        }
    }

    /// Its headline figures.
    pub fn headline(&self) -> Headline {
        match self {
            Self::Decode(d) => super::decode::headline::headline(d),
            Self::Burst(b) => super::burst::headline::headline(b),
            Self::Routing(p) => super::routing::headline::headline(p),
            Self::Serve(s) => super::serve::headline::headline(s),
        }
    }
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
