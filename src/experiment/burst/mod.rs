//! The burst experiment (Phase 3): a finite burst of requests per ctx x conc cell, measured
//! end to end.

pub mod attempt;
pub mod headline;
pub mod section;

pub use attempt::{BurstCellSpec, run_burst_attempt};
pub use section::Burst;
