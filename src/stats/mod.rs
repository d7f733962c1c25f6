//! Pure statistics for benchmark results: percentiles, latency formulas, live rate windows.
//!
//! Nothing in here does I/O or depends on an async runtime; everything is plain data
//! so it can be unit- and property-tested in isolation.

pub mod gap_dist;
pub mod knee;
pub mod percentile_list;
pub mod quantile;
pub mod rate;
pub mod reservoir;
pub mod ring;
pub mod sample_of;
pub mod saturation;
pub mod slope;
pub mod timing;

pub use gap_dist::GapDist;
pub use percentile_list::{PercentileList, percentile_list};
pub use quantile::{Percentiles, Samples, Summary};
pub use rate::WindowCounter;
pub use reservoir::Reservoir;
pub use ring::Ring;
pub use sample_of::SampleOf;
pub use timing::{Slo, itl, tokens_per_second, tpot};

#[cfg(test)]
mod tests;
