//! Pure statistics for benchmark results: percentiles, latency formulas, live rate windows.
//!
//! Nothing in here does I/O or depends on an async runtime; everything is plain data
//! so it can be unit- and property-tested in isolation.

pub(crate) mod gap_dist;
pub(crate) mod knee;
pub(crate) mod percentile_list;
pub mod proportion;
pub(crate) mod quantile;
pub(crate) mod rate;
pub mod repeats;
pub(crate) mod reservoir;
pub(crate) mod ring;
pub(crate) mod sample_of;
pub mod saturation;
pub(crate) mod slope;
pub mod student_t;
pub(crate) mod timing;

pub use gap_dist::GapDist;
pub use gap_dist::saved::SavedGapDist;
pub use percentile_list::{PercentileList, percentile_list};
pub use proportion::Proportion;
pub use quantile::{Percentiles, Samples, Summary};
pub use rate::WindowCounter;
pub use repeats::RunStats;
pub use reservoir::Reservoir;
pub use ring::Ring;
pub use sample_of::SampleOf;
pub use timing::{Slo, itl, tokens_per_second, tpot};

#[cfg(test)]
mod tests;
