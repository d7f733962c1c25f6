//! A [`GapDist`] as a report stores it ([`SavedGapDist`]), so a merge (`report merge`) can
//! rebuild it and add it to others' exactly as [`GapDist::merge`] does in memory.

use super::{GapDist, SIGNIFICANT_DIGITS, record};
use crate::stats::Samples;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// A gap distribution written out: the exact values while it holds them, else the recorded
/// histogram buckets; count, mean, spread and extremes exact either way (ms).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SavedGapDist {
    /// Values added.
    pub count: u64,
    /// Exact mean, ms (0 when empty).
    pub mean: f64,
    /// Sum of squared deviations from the mean (Welford), ms².
    pub m2: f64,
    /// Smallest value, ms (0 when empty).
    pub min: f64,
    /// Largest value, ms (0 when empty).
    pub max: f64,
    /// Every value, ms, while the distribution is exact; empty once it is binned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<f64>,
    /// The histogram once binned: `[highest value of the bucket in ns, values in it]` per
    /// non-empty bucket; empty while exact.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub buckets: Vec<[u64; 2]>,
}

impl SavedGapDist {
    /// The saved form of `d`.
    pub fn of(d: &GapDist) -> Self {
        let buckets = d.hist.as_ref().map_or_else(Vec::new, |h| {
            h.iter_recorded().map(|v| [v.value_iterated_to(), v.count_at_value()]).collect()
        });
        Self {
            count: d.count,
            mean: d.mean,
            m2: d.m2,
            min: d.min,
            max: d.max,
            values: if d.hist.is_none() { d.exact.values().to_vec() } else { Vec::new() },
            buckets,
        }
    }

    /// The distribution again; None when the saved figures do not agree with each other
    /// (values or bucket counts that do not add up to `count`, or both kinds at once).
    pub fn restore(&self) -> Option<GapDist> {
        let binned: u64 = self.buckets.iter().map(|b| b[1]).sum();
        let exact = self.values.len() as u64;
        let consistent = match (exact, binned) {
            (0, 0) => self.count == 0,
            (n, 0) => n == self.count && self.values.iter().all(|v| v.is_finite() && *v >= 0.0),
            (0, n) => n == self.count,
            _ => false,
        };
        if !consistent {
            return None;
        }
        let hist = (binned > 0).then(|| {
            let mut h = Histogram::<u64>::new(SIGNIFICANT_DIGITS).expect("3 significant digits are valid");
            self.buckets.iter().for_each(|b| record(&mut h, b[0], b[1]));
            h
        });
        let exact: Samples = self.values.iter().copied().collect();
        let (mean, m2, min, max) = (self.mean, self.m2, self.min, self.max);
        Some(GapDist { exact, hist, count: self.count, mean, m2, min, max })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(d: &GapDist) -> GapDist {
        let json = serde_json::to_string(&SavedGapDist::of(d)).unwrap();
        serde_json::from_str::<SavedGapDist>(&json).unwrap().restore().expect("consistent")
    }

    #[test]
    fn exact_and_binned_distributions_come_back_alike() {
        let mut small = GapDist::new();
        (1..=100).for_each(|i| small.push(f64::from(i) / 3.0));
        let back = roundtrip(&small);
        assert!(!back.is_binned());
        assert_eq!(back.summary(), small.summary());
        let mut big = GapDist::new();
        (0..20_000u32).for_each(|i| big.push(f64::from(i % 977) / 7.0 + 0.5));
        assert!(big.is_binned());
        let back = roundtrip(&big);
        assert!(back.is_binned());
        assert_eq!(back.summary(), big.summary());
        assert_eq!(back.std_dev(), big.std_dev());
        assert_eq!(roundtrip(&GapDist::new()).count(), 0);
    }

    #[test]
    fn restored_parts_merge_as_the_whole() {
        let mut whole = GapDist::new();
        let mut parts = [GapDist::new(), GapDist::new(), GapDist::new()];
        for i in 0..30_000u32 {
            let v = f64::from((i * 7919) % 5003) / 11.0;
            whole.push(v);
            parts[(i % 3) as usize].push(v);
        }
        let mut merged = GapDist::new();
        parts.iter().for_each(|p| merged.merge(&roundtrip(p)));
        let (m, w) = (merged.summary().unwrap(), whole.summary().unwrap());
        assert_eq!((m.count, m.min, m.max, m.p50, m.p99), (w.count, w.min, w.max, w.p50, w.p99));
    }

    #[test]
    fn inconsistent_saved_figures_are_refused() {
        let mut d = GapDist::new();
        d.push(1.0);
        let mut s = SavedGapDist::of(&d);
        s.count = 2;
        assert!(s.restore().is_none());
        let both = SavedGapDist { buckets: vec![[1_000_000, 1]], ..SavedGapDist::of(&d) };
        assert!(both.restore().is_none());
        let negative = SavedGapDist { values: vec![-1.0], ..SavedGapDist::of(&d) };
        assert!(negative.restore().is_none());
    }
}
