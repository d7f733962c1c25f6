//! Session reports: the versioned JSON types, the formats a report renders to (text,
//! markdown, HTML and CSV, behind [`formats::ReportFormat`]), the atomic write and the writer
//! thread. [`compare`] sets two reports side by side; [`vllm`] exports one in `vllm bench
//! serve`'s shape.

pub(crate) mod atomic;
pub mod baseline;
pub mod burst;
pub(crate) mod clobber;
pub mod compare;
pub mod csv;
pub mod dataset;
pub mod decode;
pub(crate) mod dist;
pub mod error_notes;
pub mod extension;
pub(crate) mod fallback;
pub mod formats;
pub mod frame;
pub(crate) mod goodput;
pub(crate) mod goodput_tables;
pub mod html;
pub mod json;
pub mod kind;
pub(crate) mod knee;
pub(crate) mod levels;
pub(crate) mod load;
pub(crate) mod markdown;
pub(crate) mod merge_note;
pub(crate) mod metrics_source;
pub mod pareto;
pub mod phase;
pub mod phase_shard;
pub mod prefix_cache;
pub(crate) mod prom_validation;
pub mod runs;
pub mod schedule_lag;
pub mod serve;
pub mod shard;
pub mod shard_dists;
pub(crate) mod sink;
pub mod skip;
pub mod status;
pub mod sweep;
pub mod tables;
pub(crate) mod text;
pub(crate) mod vllm;
pub(crate) mod vllm_serve;
pub mod writer;

#[cfg(test)]
mod tests_example;
#[cfg(test)]
pub(crate) mod tests_schema;
#[cfg(test)]
pub(crate) mod tests_shapes;
