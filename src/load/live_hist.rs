//! Lock-free latency histograms with fixed bucket boundaries, fed on the hot path for the live
//! Prometheus exposition (`run --metrics-listen`, docs/metrics.md): one observation is a bucket
//! index found by a binary search over [`BOUNDS_NS`] (six comparisons) and two relaxed atomic
//! adds. The boundaries are the same in every process, so buckets summed over shards give
//! quantiles of the whole session.

use std::sync::atomic::{AtomicU64, Ordering};

/// Multiples of a decade's unit (in tenths): every decade has the boundaries 1, 1.5, 2, 3, 5
/// and 7 times its unit, so neighbours are at most 1.67x apart (1.5x on average).
const STEPS: [u64; 6] = [10, 15, 20, 30, 50, 70];

/// Decades covered: 10 us to 70 s.
const DECADES: usize = 7;

/// Finite bucket boundaries (`le`), nanoseconds, ascending: 10 us, 15 us, 20 us, 30 us, 50 us,
/// 70 us, 100 us, ... 50 s, 70 s. A histogram has one more bucket, `+Inf`.
pub const BOUNDS_NS: [u64; STEPS.len() * DECADES] = bounds();

/// Buckets of a histogram: the finite ones and `+Inf`.
pub const BUCKETS: usize = BOUNDS_NS.len() + 1;

const fn bounds() -> [u64; STEPS.len() * DECADES] {
    let mut out = [0; STEPS.len() * DECADES];
    // 10 us is 10 tenths of 1 us (1,000 ns).
    let mut unit = 1_000;
    let mut d = 0;
    while d < DECADES {
        let mut i = 0;
        while i < STEPS.len() {
            out[d * STEPS.len() + i] = STEPS[i] * unit;
            i += 1;
        }
        unit *= 10;
        d += 1;
    }
    out
}

/// The bucket of a value, ns: the first whose boundary is at least `ns` (`le` is inclusive),
/// [`BOUNDS_NS`]`.len()` for `+Inf`.
pub fn bucket_of(ns: u64) -> usize {
    BOUNDS_NS.partition_point(|&b| b < ns)
}

/// A histogram written by many threads without a lock: counts per bucket (not cumulative) and
/// the sum of the observed values.
#[derive(Debug)]
pub struct AtomicHist {
    counts: [AtomicU64; BUCKETS],
    sum_ns: AtomicU64,
}

impl Default for AtomicHist {
    fn default() -> Self {
        Self { counts: std::array::from_fn(|_| AtomicU64::new(0)), sum_ns: AtomicU64::new(0) }
    }
}

impl AtomicHist {
    /// Observes one value, ns.
    pub fn observe(&self, ns: u64) {
        self.spread(ns, 1);
    }

    /// Observes `n` values of `total_ns / n` each (a gap shared by the `n` tokens of one chunk):
    /// `n` counts in one bucket and `total_ns` added to the sum. Nothing when `n` is 0.
    pub fn spread(&self, total_ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.counts[bucket_of(total_ns / n)].fetch_add(n, Ordering::Relaxed);
        if total_ns > 0 {
            self.sum_ns.fetch_add(total_ns, Ordering::Relaxed);
        }
    }

    /// A copy of the counts now.
    pub fn snapshot(&self) -> HistCounts {
        HistCounts {
            counts: std::array::from_fn(|i| self.counts[i].load(Ordering::Relaxed)),
            sum_ns: self.sum_ns.load(Ordering::Relaxed),
        }
    }
}

/// A histogram's counts at one moment: per bucket (not cumulative), and the sum, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistCounts {
    /// Observations per bucket, the last one `+Inf`.
    pub counts: [u64; BUCKETS],
    /// Sum of the observed values, ns.
    pub sum_ns: u64,
}

impl Default for HistCounts {
    fn default() -> Self {
        Self { counts: [0; BUCKETS], sum_ns: 0 }
    }
}

impl HistCounts {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &HistCounts) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.sum_ns += other.sum_ns;
    }

    /// Observations in all.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// The latency histograms of one attempt, present only while `/metrics` is served
/// ([`super::live::LiveCounters::series`]).
#[derive(Debug, Default)]
pub struct LiveSeries {
    /// Time to first token per request, from its start (its schedule, if earlier than its send).
    pub ttft: AtomicHist,
    /// Time between tokens, one observation per token after a stream's first chunk (a chunk of
    /// k tokens after a gap g counts k times g / k, as the report's per-token ITL does).
    pub itl: AtomicHist,
    /// Time per output token of each request with two tokens or more, (last token - first
    /// token) / (tokens - 1), observed when the request ends (cut requests included).
    pub tpot: AtomicHist,
}

impl LiveSeries {
    /// Observes the token gaps of one read: its first chunk carried `first` tokens, `gap_us`
    /// after the stream's previous chunk (None: the stream's first chunk, which has no gap);
    /// the `tokens - first` tokens of its other chunks arrived with it (gap 0).
    pub fn read_gaps(&self, gap_us: Option<u64>, first: u64, tokens: u64) {
        if let Some(gap) = gap_us {
            self.itl.spread(gap.saturating_mul(1_000), first);
        }
        self.itl.spread(0, tokens.saturating_sub(first));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn boundaries_run_from_10_us_to_70_s_at_most_1_67x_apart() {
        assert_eq!(BOUNDS_NS[0], 10_000);
        assert_eq!(BOUNDS_NS[1], 15_000);
        assert_eq!(BOUNDS_NS[6], 100_000);
        assert_eq!(*BOUNDS_NS.last().unwrap(), 70_000_000_000);
        for w in BOUNDS_NS.windows(2) {
            assert!(w[0] < w[1], "{w:?}");
            assert!(w[1] * 3 <= w[0] * 5, "{w:?} more than 1.67x apart");
        }
    }

    #[test]
    fn a_value_goes_to_the_first_bucket_whose_bound_holds_it() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(10_000), 0, "le is inclusive");
        assert_eq!(bucket_of(10_001), 1);
        assert_eq!(bucket_of(70_000_000_000), BOUNDS_NS.len() - 1);
        assert_eq!(bucket_of(70_000_000_001), BOUNDS_NS.len(), "+Inf");
    }

    #[test]
    fn a_read_of_several_chunks_counts_each_token_once() {
        let s = LiveSeries::default();
        // First read of a stream: 3 tokens, the first chunk 2 of them: 1 gap of 0.
        s.read_gaps(None, 2, 3);
        // 4 ms later: a chunk of 2 tokens (2 ms each), then 3 more tokens in the same read.
        s.read_gaps(Some(4_000), 2, 5);
        let h = s.itl.snapshot();
        assert_eq!(h.count(), 1 + 5);
        assert_eq!(h.counts[0], 4, "the gaps of 0 inside reads");
        assert_eq!(h.counts[bucket_of(2_000_000)], 2);
        assert_eq!(h.sum_ns, 4_000_000);
    }

    proptest! {
        #[test]
        fn bucket_of_agrees_with_a_linear_scan(ns in 0u64..100_000_000_000) {
            let scan = BOUNDS_NS.iter().position(|&b| ns <= b).unwrap_or(BOUNDS_NS.len());
            prop_assert_eq!(bucket_of(ns), scan);
        }

        #[test]
        fn counts_and_sum_are_exact_and_merge_by_adding(vals in proptest::collection::vec((0u64..80_000_000_000, 1u64..20), 0..200)) {
            let (a, b) = (AtomicHist::default(), AtomicHist::default());
            for (i, &(v, n)) in vals.iter().enumerate() {
                if i % 2 == 0 { a.spread(v * n, n) } else { b.spread(v * n, n) }
            }
            let mut merged = a.snapshot();
            merged.add(&b.snapshot());
            prop_assert_eq!(merged.count(), vals.iter().map(|v| v.1).sum::<u64>());
            prop_assert_eq!(merged.sum_ns, vals.iter().map(|v| v.0 * v.1).sum::<u64>());
            for (v, _) in &vals {
                prop_assert!(merged.counts[bucket_of(*v)] > 0);
            }
        }
    }
}
