//! Session reports: the versioned JSON file and the text tables printed at the end of a run.

pub mod atomic;
pub mod json;
pub mod phase;
pub mod status;
pub mod tables;
pub mod text;
pub mod writer;

#[cfg(test)]
mod tests_example;
#[cfg(test)]
pub(crate) mod tests_schema;
