//! A bounded, mergeable distribution for per-token and per-chunk gaps (ms): exact values up to
//! [`EXACT_CAP`], then an HDR histogram of [`SIGNIFICANT_DIGITS`] significant digits.
//!
//! Count, mean, standard deviation, minimum and maximum stay exact whatever the number of
//! values (a running sum and Welford's update); only the percentiles of a distribution of more
//! than [`EXACT_CAP`] values come from the histogram, within 0.1% (`RELATIVE_PRECISION`) of the exact
//! value at the same rank (docs/reports.md §1.2). Memory is then a few tens of KiB whatever
//! the number of tokens, where a list costs 8 bytes per token.

use super::quantile::{Samples, Summary};
use hdrhistogram::Histogram;

/// Values held exactly before the distribution switches to its histogram.
pub(crate) const EXACT_CAP: usize = 8192;

/// Significant decimal digits of the histogram's buckets.
pub(crate) const SIGNIFICANT_DIGITS: u8 = 3;

/// Largest relative error of a histogram percentile against the exact value at its rank.
#[cfg(test)]
pub(crate) const RELATIVE_PRECISION: f64 = 1e-3;

/// Histogram unit: nanoseconds per ms.
const NS_PER_MS: f64 = 1e6;

/// A bounded gap distribution; see the module documentation.
#[derive(Debug, Clone, Default)]
pub struct GapDist {
    exact: Samples,
    hist: Option<Histogram<u64>>,
    count: u64,
    mean: f64,
    /// Sum of squared deviations from the mean (Welford).
    m2: f64,
    min: f64,
    max: f64,
}

impl PartialEq for GapDist {
    fn eq(&self, other: &Self) -> bool {
        self.count == other.count && self.summary() == other.summary()
    }
}

/// Records `n` values `ns`, growing the histogram's range as needed (a saturating record
/// would clamp to the range instead of growing it).
fn record(h: &mut Histogram<u64>, ns: u64, n: u64) {
    if h.record_n(ns, n).is_err() {
        h.saturating_record_n(ns, n);
    }
}

fn to_ns(ms: f64) -> u64 {
    (ms * NS_PER_MS).round().max(0.0) as u64
}

impl GapDist {
    /// An empty distribution.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one value, ms; NaN, infinities and negative values are ignored.
    pub fn push(&mut self, ms: f64) {
        self.push_n(ms, 1);
    }

    /// Adds `n` copies of one value, ms (a chunk of `n` tokens gives `n` equal gaps).
    pub fn push_n(&mut self, ms: f64, n: u64) {
        if !ms.is_finite() || ms < 0.0 || n == 0 {
            return;
        }
        self.welford(ms, n);
        if self.hist.is_none() && self.exact.len() as u64 + n <= EXACT_CAP as u64 {
            (0..n).for_each(|_| self.exact.push(ms));
            return;
        }
        record(self.spill(), to_ns(ms), n);
    }

    fn welford(&mut self, x: f64, n: u64) {
        if self.count == 0 {
            (self.min, self.max) = (x, x);
        }
        (self.min, self.max) = (self.min.min(x), self.max.max(x));
        self.count += n;
        let delta = x - self.mean;
        self.mean += delta * n as f64 / self.count as f64;
        self.m2 += delta * (x - self.mean) * n as f64;
    }

    /// The histogram, created from the exact values on first use.
    fn spill(&mut self) -> &mut Histogram<u64> {
        if self.hist.is_none() {
            let mut h = Histogram::<u64>::new(SIGNIFICANT_DIGITS).expect("3 significant digits are valid");
            for v in self.exact.values() {
                record(&mut h, to_ns(*v), 1);
            }
            self.exact = Samples::new();
            self.hist = Some(h);
        }
        self.hist.as_mut().expect("set above")
    }

    /// Adds every value of `other` (the result is as if they had been pushed here, within the
    /// histogram's precision once either side has spilled).
    pub fn merge(&mut self, other: &GapDist) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = other.clone();
            return;
        }
        let (n1, n2) = (self.count as f64, other.count as f64);
        let delta = other.mean - self.mean;
        let n = n1 + n2;
        self.m2 += other.m2 + delta * delta * n1 * n2 / n;
        self.mean += delta * n2 / n;
        self.count += other.count;
        (self.min, self.max) = (self.min.min(other.min), self.max.max(other.max));
        let fits = self.exact.len() + other.exact.len() <= EXACT_CAP;
        if self.hist.is_none() && other.hist.is_none() && fits {
            self.exact.merge(&other.exact);
            return;
        }
        let h = self.spill();
        match &other.hist {
            Some(o) => h.add(o).expect("auto-resizing histograms always add"),
            None => other.exact.values().iter().for_each(|v| record(h, to_ns(*v), 1)),
        }
    }

    /// Values added.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// True when nothing was added.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// True once the percentiles come from the histogram.
    pub fn is_binned(&self) -> bool {
        self.hist.is_some()
    }

    /// Exact mean, or None when empty.
    pub fn mean(&self) -> Option<f64> {
        match self.hist {
            None => self.exact.mean(),
            Some(_) => (self.count > 0).then_some(self.mean),
        }
    }

    /// Exact population standard deviation, or None when empty.
    pub fn std_dev(&self) -> Option<f64> {
        match self.hist {
            None => self.exact.std_dev(),
            Some(_) => (self.count > 0).then(|| (self.m2.max(0.0) / self.count as f64).sqrt()),
        }
    }

    /// The `q`-th percentile (`q` in `[0, 100]`): numpy's linear interpolation while exact,
    /// else the middle of the histogram bucket at that rank, kept within the exact extremes.
    pub fn percentile(&self, q: f64) -> Option<f64> {
        let Some(h) = &self.hist else { return self.exact.quantile(q) };
        if self.count == 0 || !(0.0..=100.0).contains(&q) {
            return None;
        }
        let v = h.median_equivalent(h.value_at_quantile(q / 100.0)) as f64 / NS_PER_MS;
        Some(v.clamp(self.min, self.max))
    }

    /// Count, mean, extremes and the usual percentiles, or None when empty.
    pub fn summary(&self) -> Option<Summary> {
        if self.hist.is_none() {
            return self.exact.clone().summary();
        }
        let p = |q| self.percentile(q);
        Some(Summary {
            count: self.count,
            mean: self.mean()?,
            min: self.min,
            max: self.max,
            p50: p(50.0)?,
            p90: p(90.0)?,
            p95: p(95.0)?,
            p99: p(99.0)?,
        })
    }
}

#[path = "gap_dist_saved.rs"]
pub(crate) mod saved;

#[cfg(test)]
#[path = "gap_dist_tests.rs"]
mod tests;
