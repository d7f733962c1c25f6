//! Sample sets with numpy-compatible percentiles and serializable summaries.

use serde::{Deserialize, Serialize};

/// A growable set of finite `f64` samples (for example latencies in seconds).
///
/// NaN and infinite values are silently ignored on insertion. Sorting happens lazily
/// on the first percentile query and is remembered until the next out-of-order push.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    values: Vec<f64>,
    sorted: bool,
}

/// Descriptive statistics of a non-empty [`Samples`] set.
///
/// All values share the unit of the samples they were computed from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub count: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// 50th percentile (median).
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// The three percentiles most reports show, in the unit of the samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    /// 50th percentile (median).
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
}

impl Samples {
    /// Creates an empty set.
    pub fn new() -> Self {
        Self { values: Vec::new(), sorted: true }
    }

    /// Creates an empty set with room for `capacity` samples.
    pub fn with_capacity(capacity: usize) -> Self {
        Self { values: Vec::with_capacity(capacity), sorted: true }
    }

    /// Adds one sample; NaN and infinities are ignored.
    pub fn push(&mut self, value: f64) {
        if !value.is_finite() {
            return;
        }
        if let Some(&last) = self.values.last()
            && value < last
        {
            self.sorted = false;
        }
        self.values.push(value);
    }

    /// Replaces the value held at `index` (in no particular order) by `value`, if finite and
    /// `index` is held; for [`super::Reservoir`].
    pub fn replace(&mut self, index: usize, value: f64) {
        if let Some(slot) = self.values.get_mut(index).filter(|_| value.is_finite()) {
            *slot = value;
            self.sorted = false;
        }
    }

    /// Adds every finite value of `values`.
    pub fn extend_from_slice(&mut self, values: &[f64]) {
        self.values.reserve(values.len());
        for &v in values {
            self.push(v);
        }
    }

    /// The samples held, in no particular order.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Number of samples held.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True when no sample has been added.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Removes every sample, keeping the allocation.
    pub fn clear(&mut self) {
        self.values.clear();
        self.sorted = true;
    }

    /// Adds all samples of `other` to `self`.
    pub fn merge(&mut self, other: &Samples) {
        if other.is_empty() {
            return;
        }
        // `other` only holds finite values, so no filtering is needed.
        let joins_in_order = match (self.values.last(), other.values.first()) {
            (Some(&a), Some(&b)) => a <= b,
            _ => true,
        };
        self.sorted = self.sorted && other.sorted && joins_in_order;
        self.values.extend_from_slice(&other.values);
    }

    /// Smallest sample, or `None` when empty.
    pub fn min(&self) -> Option<f64> {
        if self.sorted {
            return self.values.first().copied();
        }
        self.values.iter().copied().reduce(f64::min)
    }

    /// Largest sample, or `None` when empty.
    pub fn max(&self) -> Option<f64> {
        if self.sorted {
            return self.values.last().copied();
        }
        self.values.iter().copied().reduce(f64::max)
    }

    /// Arithmetic mean, or `None` when empty.
    pub fn mean(&self) -> Option<f64> {
        if self.values.is_empty() {
            return None;
        }
        let sum: f64 = self.values.iter().sum();
        let mean = sum / self.values.len() as f64;
        // A sum can overflow for huge samples; fall back to a scaled mean then.
        if mean.is_finite() {
            return Some(mean);
        }
        let n = self.values.len() as f64;
        Some(self.values.iter().map(|v| v / n).sum())
    }

    /// The `q`-th percentile (`q` in `[0, 100]`), interpolated linearly between the two
    /// closest ranks exactly like numpy's default `np.percentile(a, q)`.
    ///
    /// Returns `None` when the set is empty or `q` is NaN or outside `[0, 100]`.
    pub fn percentile(&mut self, q: f64) -> Option<f64> {
        if self.values.is_empty() || !(0.0..=100.0).contains(&q) {
            return None;
        }
        self.ensure_sorted();
        Some(percentile_of_sorted(&self.values, q))
    }

    /// As [`Samples::percentile`] without `&mut`: sorts a copy when the set is not sorted yet.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.values.is_empty() || !(0.0..=100.0).contains(&q) {
            return None;
        }
        if self.sorted {
            return Some(percentile_of_sorted(&self.values, q));
        }
        let mut copy = self.values.clone();
        copy.sort_unstable_by(f64::total_cmp);
        Some(percentile_of_sorted(&copy, q))
    }

    /// Population standard deviation (numpy's default `np.std`, `ddof=0`), or `None` when empty.
    pub fn std_dev(&self) -> Option<f64> {
        let mean = self.mean()?;
        let n = self.values.len() as f64;
        let var = self.values.iter().map(|v| (v - mean) * (v - mean) / n).sum::<f64>();
        Some(var.sqrt())
    }

    /// p50, p95 and p99 in one call, or `None` when empty.
    pub fn p50_p95_p99(&mut self) -> Option<Percentiles> {
        Some(Percentiles { p50: self.percentile(50.0)?, p95: self.percentile(95.0)?, p99: self.percentile(99.0)? })
    }

    /// Count, mean, extremes and the usual percentiles, or `None` when empty.
    pub fn summary(&mut self) -> Option<Summary> {
        let mean = self.mean()?;
        self.ensure_sorted();
        Some(Summary {
            count: self.values.len() as u64,
            mean,
            min: self.min()?,
            max: self.max()?,
            p50: self.percentile(50.0)?,
            p90: self.percentile(90.0)?,
            p95: self.percentile(95.0)?,
            p99: self.percentile(99.0)?,
        })
    }

    fn ensure_sorted(&mut self) {
        if !self.sorted {
            self.values.sort_unstable_by(f64::total_cmp);
            self.sorted = true;
        }
    }
}

impl FromIterator<f64> for Samples {
    fn from_iter<I: IntoIterator<Item = f64>>(iter: I) -> Self {
        let mut samples = Samples::new();
        for v in iter {
            samples.push(v);
        }
        samples
    }
}

/// numpy's "linear" method on an ascending, non-empty slice.
fn percentile_of_sorted(sorted: &[f64], q: f64) -> f64 {
    let last = sorted.len() - 1;
    let virtual_index = last as f64 * (q / 100.0);
    let below = virtual_index.floor();
    let gamma = virtual_index - below;
    // `below` is in [0, last]; the float-to-int cast saturates, so it cannot overflow.
    let lo = (below as usize).min(last);
    let hi = (lo + 1).min(last);
    lerp(sorted[lo], sorted[hi], gamma)
}

/// Interpolation as numpy's `_lerp`: anchored at `a` below one half and at `b` above,
/// which keeps the result exact at both ends.
fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let diff = b - a;
    if !diff.is_finite() {
        // Only reachable for samples near f64::MAX in magnitude.
        return a * (1.0 - t) + b * t;
    }
    if t >= 0.5 { b - diff * (1.0 - t) } else { a + diff * t }
}

#[cfg(test)]
mod unit {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn numpy_reference_values() {
        // np.percentile([1, 2, 3, 4], [0, 25, 50, 90, 100]) == [1, 1.75, 2.5, 3.7, 4]
        let mut s: Samples = [4.0, 1.0, 3.0, 2.0].into_iter().collect();
        for (q, want) in [(0.0, 1.0), (25.0, 1.75), (50.0, 2.5), (90.0, 3.7), (100.0, 4.0)] {
            let got = s.percentile(q).unwrap();
            assert!(close(got, want), "q={q}: {got} != {want}");
        }
        // np.percentile([10, 20, 30, 40, 50], [95, 99]) == [48, 49.6]
        let mut s: Samples = [50.0, 10.0, 40.0, 20.0, 30.0].into_iter().collect();
        assert!(close(s.percentile(95.0).unwrap(), 48.0));
        assert!(close(s.percentile(99.0).unwrap(), 49.6));
        // np.percentile(range(1, 101), 99) == 99.01
        let mut s: Samples = (1..=100).map(f64::from).collect();
        assert!(close(s.percentile(99.0).unwrap(), 99.01));
    }

    #[test]
    fn quantile_and_std_dev_match_numpy() {
        let s: Samples = [4.0, 1.0, 3.0, 2.0].into_iter().collect();
        // np.percentile([1, 2, 3, 4], 90) == 3.7; np.std([1, 2, 3, 4]) == 1.118033988749895
        assert!(close(s.quantile(90.0).unwrap(), 3.7));
        assert!(close(s.std_dev().unwrap(), 1.118_033_988_749_895));
        assert_eq!(s.quantile(101.0), None);
        assert_eq!(Samples::new().std_dev(), None);
        let sorted: Samples = [1.0, 2.0].into_iter().collect();
        assert_eq!(sorted.quantile(50.0), Some(1.5));
    }

    #[test]
    fn summary_values() {
        let mut s: Samples = [1.0, 2.0, 3.0, 4.0].into_iter().collect();
        let sum = s.summary().unwrap();
        assert_eq!(sum.count, 4);
        assert!(close(sum.mean, 2.5));
        assert_eq!((sum.min, sum.max), (1.0, 4.0));
        assert!(close(sum.p50, 2.5));
        assert!(close(sum.p90, 3.7));
        assert!(close(sum.p95, 3.85));
        assert!(close(sum.p99, 3.97));
        let p = s.p50_p95_p99().unwrap();
        assert_eq!((p.p50, p.p95, p.p99), (sum.p50, sum.p95, sum.p99));
    }

    #[test]
    fn empty_and_invalid_inputs() {
        let mut s = Samples::new();
        assert!(s.is_empty());
        assert_eq!(s.percentile(50.0), None);
        assert_eq!(s.summary(), None);
        assert_eq!(s.p50_p95_p99(), None);
        assert_eq!((s.min(), s.max(), s.mean()), (None, None, None));
        s.push(f64::NAN);
        s.push(f64::INFINITY);
        s.push(f64::NEG_INFINITY);
        assert_eq!(s.len(), 0);
        s.push(7.0);
        assert_eq!(s.percentile(f64::NAN), None);
        assert_eq!(s.percentile(-0.1), None);
        assert_eq!(s.percentile(100.1), None);
        assert_eq!(s.percentile(37.0), Some(7.0));
    }

    #[test]
    fn merge_and_extend() {
        let mut a = Samples::with_capacity(4);
        a.extend_from_slice(&[3.0, f64::NAN, 1.0]);
        let b: Samples = [2.0, 5.0].into_iter().collect();
        a.merge(&b);
        assert_eq!(a.len(), 4);
        assert_eq!(a.min(), Some(1.0));
        assert_eq!(a.max(), Some(5.0));
        assert_eq!(a.percentile(50.0), Some(2.5));
        a.clear();
        assert!(a.is_empty());
    }

    #[test]
    fn huge_values_do_not_overflow() {
        let mut s: Samples = [f64::MAX, f64::MAX, -f64::MAX].into_iter().collect();
        assert!(s.mean().unwrap().is_finite());
        let p = s.percentile(25.0).unwrap();
        assert!(p.is_finite());
    }

    #[test]
    fn summary_serde_round_trip() {
        let mut s: Samples = [0.5, 1.5].into_iter().collect();
        let sum = s.summary().unwrap();
        let json = serde_json::to_string(&sum).unwrap();
        assert!(json.contains("\"p99\""));
        let back: Summary = serde_json::from_str(&json).unwrap();
        assert_eq!(back, sum);
        let p = s.p50_p95_p99().unwrap();
        let back: Percentiles = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
    }
}
