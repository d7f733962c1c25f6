//! Measurement lag: the client's own timestamp of a token minus the server's send time, kept in
//! a fixed, lock-free histogram (10 us buckets up to 100 ms by default, one overflow bucket, the
//! maximum). The timing-fidelity figures (src/bench/fidelity.rs) keep intervals and errors in
//! histograms of the same kind with finer buckets.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bucket width, microseconds.
pub(crate) const BUCKET_US: u64 = 10;
/// Buckets below the overflow one: 100 ms at [`BUCKET_US`].
const BUCKETS: usize = 10_000;

/// A histogram of lags, filled from any thread with relaxed atomics.
#[derive(Debug)]
pub(crate) struct LagHist {
    /// Bucket width, ns.
    width_ns: u64,
    buckets: Box<[AtomicU64]>,
    max_ns: AtomicU64,
    /// Stamps later than the client's timestamp (clock skew or a probe bug), counted apart.
    negative: AtomicU64,
}

impl Default for LagHist {
    fn default() -> Self {
        Self::new(BUCKET_US * 1000, BUCKETS)
    }
}

/// Lag percentiles, ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct LagFigures {
    /// Lags counted.
    pub count: u64,
    /// Median, ms (bucket upper bound).
    pub p50_ms: f64,
    /// 99th percentile, ms (bucket upper bound).
    pub p99_ms: f64,
    /// Largest, ms (exact).
    pub max_ms: f64,
    /// Stamps later than the client's timestamp.
    pub negative: u64,
}

impl LagHist {
    /// `buckets` buckets of `width_ns` ns each (at least 1), then the overflow bucket.
    pub(crate) fn new(width_ns: u64, buckets: usize) -> Self {
        Self {
            width_ns: width_ns.max(1),
            buckets: (0..=buckets).map(|_| AtomicU64::new(0)).collect(),
            max_ns: AtomicU64::new(0),
            negative: AtomicU64::new(0),
        }
    }

    /// Counts one lag: `client_ns - sent_ns`, both unix ns.
    pub(crate) fn record(&self, client_ns: u64, sent_ns: u64) {
        let Some(lag) = client_ns.checked_sub(sent_ns) else {
            self.negative.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let i = ((lag / self.width_ns) as usize).min(self.buckets.len() - 1);
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        self.max_ns.fetch_max(lag, Ordering::Relaxed);
    }

    /// Empties it.
    pub(crate) fn reset(&self) {
        self.buckets.iter().for_each(|b| b.store(0, Ordering::Relaxed));
        self.max_ns.store(0, Ordering::Relaxed);
        self.negative.store(0, Ordering::Relaxed);
    }

    /// The percentiles so far; None when nothing was counted.
    pub(crate) fn figures(&self) -> Option<LagFigures> {
        let counts: Vec<u64> = self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).collect();
        let count: u64 = counts.iter().sum();
        if count == 0 {
            return None;
        }
        let max_ms = self.max_ns.load(Ordering::Relaxed) as f64 / 1e6;
        let at = |q: f64| {
            let rank = ((count as f64 * q).ceil() as u64).max(1);
            let mut seen = 0;
            for (i, c) in counts.iter().enumerate() {
                seen += c;
                if seen >= rank && i + 1 < counts.len() {
                    return ((i as u64 + 1) as f64 * self.width_ns as f64 / 1e6).min(max_ms);
                }
            }
            max_ms
        };
        let negative = self.negative.load(Ordering::Relaxed);
        Some(LagFigures { count, p50_ms: at(0.5), p99_ms: at(0.99), max_ms, negative })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_known_lags() {
        let h = LagHist::default();
        assert!(h.figures().is_none());
        let base = 1_000_000_000_000;
        for us in 1..=100u64 {
            h.record(base + us * 1000, base);
        }
        h.record(base, base + 5);
        let f = h.figures().unwrap();
        assert_eq!(f.count, 100);
        assert!((f.p50_ms - 0.05).abs() < 0.011, "{f:?}");
        assert!((f.p99_ms - 0.1).abs() < 0.011, "{f:?}");
        assert!((f.max_ms - 0.1).abs() < 1e-9);
        assert_eq!(f.negative, 1);
        h.record(base + 3_000_000_000, base);
        assert!((h.figures().unwrap().max_ms - 3000.0).abs() < 1e-6, "beyond the last bucket: exact max");
        h.reset();
        assert!(h.figures().is_none());
        let fine = LagHist::new(1000, 100);
        fine.record(base + 37_400, base);
        fine.record(base + 5_000_000, base);
        let f = fine.figures().unwrap();
        assert!((f.p50_ms - 0.038).abs() < 1e-9, "1 us buckets: {f:?}");
        assert!((f.p99_ms - 5.0).abs() < 1e-9, "the overflow bucket answers the exact max: {f:?}");
    }
}
