//! The bench instrument (BENCHMARKS.md, "The firehose bench"): a streaming server of the
//! project's own run in its own process, and what the bench reads of its own process.

pub mod child;
pub mod figures;
pub mod lag;
pub mod long;
pub mod probe;
pub mod raw;
pub mod rowproc;
pub mod run;
pub mod screen;
pub mod server;
pub mod sysinfo;
pub mod template;
pub mod tool;
