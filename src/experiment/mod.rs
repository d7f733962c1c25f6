//! The experiments a session can run, behind one interface: sustained decode, bursts,
//! prefix-cache routing and `vllm bench serve`'s workload. Each lives in its own folder and is registered once, in [`registry`];
//! each prepares its cells through [`Setup`] before the session starts.
//!
//! An experiment lists its cells, runs one attempt of a cell against the shared cell context
//! ([`CellEnv`](crate::cell::context::CellEnv)) and adds its section to the report. The session runner knows experiments only
//! through [`Experiment`]; experiments depend on `cell/`, never on `session/`.

pub(crate) mod burst;
pub mod conversation;
pub mod decode;
pub mod extension;
pub(crate) mod interface;
pub mod merge;
pub(crate) mod prepare;
pub(crate) mod record;
pub(crate) mod registry;
pub mod routing;
pub mod runs;
pub mod serve;
pub mod slo_search;

pub use interface::{CellRun, Experiment, Experiments, PlannedCell};
pub use prepare::{PrepareEnv, Prepared, Setup};
pub use record::{Attempt, CellEntry};
