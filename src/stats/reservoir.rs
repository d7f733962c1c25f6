//! A sample set of bounded size for long measurements: exact while it holds every value,
//! a uniform reservoir sample beyond its capacity.
//!
//! Count, mean, minimum and maximum stay exact whatever the number of values; percentiles
//! come from the held values, which are all of them up to the capacity and a uniform random
//! subset of that size after (Vitter's algorithm R, seeded, so a run is reproducible). A
//! per-token distribution over a window of millions of tokens then costs a fixed amount of
//! memory instead of 8 bytes per token.

use super::quantile::{Samples, Summary};

/// Values held by [`Reservoir::default`]: 2 MiB of `f64`.
pub(crate) const DEFAULT_CAPACITY: usize = 1 << 18;

/// A bounded sample set; see the module documentation.
#[derive(Debug, Clone)]
pub struct Reservoir {
    held: Samples,
    capacity: usize,
    seen: u64,
    sum: f64,
    min: f64,
    max: f64,
    rng: u64,
}

impl Default for Reservoir {
    fn default() -> Self {
        Self::new(DEFAULT_CAPACITY)
    }
}

impl Reservoir {
    /// An empty set holding at most `capacity` (at least 1) values.
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self {
            held: Samples::new(),
            capacity,
            seen: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            rng: 0x9E37_79B9_7F4A_7C15,
        }
    }

    /// Adds one value; NaN and infinities are ignored, as [`Samples::push`] does.
    pub fn push(&mut self, value: f64) {
        if !value.is_finite() {
            return;
        }
        self.seen += 1;
        self.sum += value;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        if self.held.len() < self.capacity {
            self.held.push(value);
            return;
        }
        let j = self.next_random() % self.seen;
        if (j as usize) < self.capacity {
            self.held.replace(j as usize, value);
        }
    }

    /// Values pushed (finite ones), not only those held.
    pub fn count(&self) -> u64 {
        self.seen
    }

    /// Values held, at most the capacity.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// The values held: every value pushed up to the capacity, a uniform sample of them after.
    pub fn values(&self) -> &[f64] {
        self.held.values()
    }

    /// True when no value was pushed.
    pub fn is_empty(&self) -> bool {
        self.seen == 0
    }

    /// Count, mean and extremes of every value pushed, percentiles of the held values
    /// (exact while every value is held); `None` when empty.
    pub fn summary(&mut self) -> Option<Summary> {
        let held = self.held.summary()?;
        if self.seen == held.count {
            return Some(held);
        }
        let mean = self.sum / self.seen as f64;
        let mean = if mean.is_finite() { mean } else { held.mean };
        Some(Summary { count: self.seen, mean, min: self.min, max: self.max, ..held })
    }

    fn next_random(&mut self) -> u64 {
        splitmix(&mut self.rng)
    }
}

/// splitmix64: small, fast and good enough to pick reservoir slots; `state` moves on.
pub(crate) fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_capacity_it_is_exactly_samples() {
        let values: Vec<f64> = (0..1000).map(|i| f64::from((i * 37) % 1000)).collect();
        let mut r = Reservoir::new(1000);
        let mut s = Samples::new();
        for v in &values {
            r.push(*v);
            s.push(*v);
        }
        r.push(f64::NAN);
        assert_eq!(r.summary(), s.summary());
        assert_eq!((r.count(), r.held()), (1000, 1000));
    }

    #[test]
    fn memory_is_bounded_and_figures_stay_close() {
        // A million values uniform on 0..1000 through a reservoir of 10,000.
        let mut r = Reservoir::new(10_000);
        for i in 0..1_000_000u64 {
            r.push(((i * 7919) % 1_000_000) as f64 / 1000.0);
        }
        assert_eq!(r.held(), 10_000, "never holds more than its capacity");
        let s = r.summary().unwrap();
        assert_eq!(s.count, 1_000_000, "the count is of every value");
        assert_eq!((s.min, s.max), (0.0, 999.999), "extremes are exact");
        assert!((s.mean - 499.9995).abs() < 1e-6, "the mean is exact: {}", s.mean);
        for (got, want) in [(s.p50, 500.0), (s.p90, 900.0), (s.p99, 990.0)] {
            assert!((got - want).abs() < 15.0, "percentile {got} vs {want}");
        }
    }

    #[test]
    fn empty_is_none() {
        let mut r = Reservoir::default();
        r.push(f64::INFINITY);
        assert!(r.is_empty());
        assert_eq!(r.summary(), None);
    }
}
