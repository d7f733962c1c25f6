//! The sustained-decode experiment: a ctx x conc matrix of closed-loop cells, each warmed up
//! until the engine has admitted its streams, then measured over a window.

pub mod admission;
pub mod attempt;
pub mod fit;
pub mod grid;
pub mod headline;
pub mod knee;
pub mod levels;
pub mod load;
pub mod prepare;
pub mod report;
pub mod section;
pub mod spec;
pub mod verdict;

pub use attempt::run_decode_attempt;
pub use prepare::DecodeSetup;
pub use section::Decode;
pub use spec::DecodeCellSpec;
