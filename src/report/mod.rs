//! Session reports: the versioned JSON file and the text tables printed at the end of a run.

pub mod atomic;
pub mod text;
