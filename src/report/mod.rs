//! Session reports: the versioned JSON file, its writer thread and the text tables printed at
//! the end of a run.

pub mod atomic;
pub mod json;
pub mod sink;
pub mod text;
pub mod view;
pub mod writer;

#[cfg(test)]
mod tests_schema;
