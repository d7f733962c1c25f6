//! What a cell of the plan is and where it stands.

use crate::report::status::CellOutcome;

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
    /// The report's outcome of the cell (a running cell is still pending there).
    pub fn outcome(&self) -> CellOutcome {
        match self {
            Self::Pending | Self::Running => CellOutcome::Pending,
            Self::Measured => CellOutcome::Measured,
            Self::Errored => CellOutcome::Errored,
            Self::Skipped(_) => CellOutcome::Skipped,
            Self::SkippedByOperator => CellOutcome::SkippedByOperator,
        }
    }

    /// The report name.
    pub fn as_str(&self) -> &'static str {
        self.outcome().as_str()
    }

    /// True once the cell has an outcome.
    pub fn is_final(&self) -> bool {
        !matches!(self, Self::Pending | Self::Running)
    }
}
