//! Session reports: the versioned JSON types, the formats a report renders to (text,
//! markdown, HTML and CSV, behind [`formats::ReportFormat`]), the atomic write and the writer
//! thread. [`compare`] sets two reports side by side; [`vllm`] exports one in `vllm bench
//! serve`'s shape.

pub mod atomic;
pub mod baseline;
pub mod clobber;
pub mod compare;
pub mod csv;
pub mod dist;
pub mod extension;
pub mod fallback;
pub mod formats;
pub mod goodput;
pub mod goodput_tables;
pub mod html;
pub mod json;
pub mod kind;
pub mod knee;
pub mod levels;
pub mod load;
pub mod markdown;
pub mod metrics_source;
pub mod phase;
pub mod prom_validation;
pub mod serve;
pub mod sink;
pub mod skip;
pub mod status;
pub mod tables;
pub mod text;
pub mod vllm;
pub mod vllm_serve;
pub mod writer;

#[cfg(test)]
mod tests_example;
#[cfg(test)]
pub(crate) mod tests_schema;
#[cfg(test)]
pub(crate) mod tests_shapes;
