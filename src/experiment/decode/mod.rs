//! The sustained-decode experiment: a ctx x conc matrix of closed-loop cells, each warmed up
//! until the engine has admitted its streams, then measured over a window, and its requests'
//! prefix-cache hits judged against what they share ([`prefix`]).

pub(crate) mod admission;
pub(crate) mod attempt;
pub(crate) mod fit;
pub mod grid;
pub(crate) mod headline;
pub(crate) mod knee;
pub(crate) mod levels;
pub(crate) mod load;
pub(crate) mod prefix;
pub(crate) mod prepare;
pub(crate) mod report;
pub(crate) mod section;
pub(crate) mod spec;
pub(crate) mod verdict;

pub use attempt::run_decode_attempt;
pub use prepare::DecodeSetup;
pub use section::Decode;
pub use spec::DecodeCellSpec;
