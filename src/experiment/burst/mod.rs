//! The burst experiment (Phase 3): a finite burst of requests per ctx x conc cell, measured
//! end to end.

pub(crate) mod attempt;
pub(crate) mod headline;
pub(crate) mod section;

pub(crate) use section::Burst;
