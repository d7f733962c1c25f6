//! The bench instrument (BENCHMARKS.md, "The firehose bench"): a streaming server of the
//! project's own run in its own process, and what the bench reads of its own process.

pub mod child;
pub mod lag;
pub mod server;
pub mod sysinfo;
pub mod template;
