//! The service-level objective a request is judged against: the upper bounds of its latencies.
//! Defined here, below `stats`, so the workers can judge running streams against it
//! (`live.rs`); `stats::Slo` is the same type with how the session parses and prints it.

use std::time::Duration;

/// Service-level objective: upper bounds a request must stay within to count as good.
///
/// A bound left at `None` is not checked. Bounds are inclusive.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Slo {
    /// Maximum time to first token.
    pub ttft: Option<Duration>,
    /// Maximum time per output token.
    pub tpot: Option<Duration>,
    /// Maximum end-to-end request latency.
    pub e2e: Option<Duration>,
}

impl Slo {
    /// True when every bound that is set is met by the matching measurement.
    ///
    /// A missing measurement (for example no TPOT for a one-token reply) fails any bound
    /// set on it; with no bound set at all every request meets the SLO.
    pub fn is_met(&self, ttft: Option<Duration>, tpot: Option<Duration>, e2e: Option<Duration>) -> bool {
        within(self.ttft, ttft) && within(self.tpot, tpot) && within(self.e2e, e2e)
    }

    /// True when no bound is set.
    pub fn is_unbounded(&self) -> bool {
        self.ttft.is_none() && self.tpot.is_none() && self.e2e.is_none()
    }
}

fn within(bound: Option<Duration>, measured: Option<Duration>) -> bool {
    match (bound, measured) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(b), Some(m)) => m <= b,
    }
}
