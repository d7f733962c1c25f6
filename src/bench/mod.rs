//! The bench instrument (BENCHMARKS.md, "The firehose bench"): a streaming server of the
//! project's own run in its own process, and what the bench reads of its own process.

pub(crate) mod arrival;
pub mod child;
pub(crate) mod fidelity;
pub(crate) mod figures;
pub(crate) mod lag;
pub(crate) mod long;
pub(crate) mod marks;
pub(crate) mod probe;
pub(crate) mod raw;
pub(crate) mod rowproc;
pub(crate) mod run;
pub(crate) mod screen;
pub(crate) mod server;
pub mod shape;
pub mod smoke;
pub mod sysinfo;
pub(crate) mod targets;
pub mod template;
pub(crate) mod tool;
pub(crate) mod whole;
