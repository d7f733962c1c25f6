//! Property tests for the statistics module.

use std::time::Duration;

use proptest::prelude::*;

use super::{Ring, Samples, WindowCounter, itl, tpot};

fn values() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(-1e9f64..1e9, 1..200)
}

proptest! {
    #[test]
    fn percentile_is_monotone_in_q(v in values(), mut qs in prop::collection::vec(0.0f64..=100.0, 2..20)) {
        let mut s: Samples = v.into_iter().collect();
        qs.sort_by(f64::total_cmp);
        let ps: Vec<f64> = qs.iter().map(|&q| s.percentile(q).unwrap()).collect();
        for w in ps.windows(2) {
            prop_assert!(w[0] <= w[1], "{:?} over {:?}", ps, qs);
        }
    }

    #[test]
    fn percentile_stays_within_extremes(v in values(), q in 0.0f64..=100.0) {
        let mut s: Samples = v.into_iter().collect();
        let (min, max) = (s.min().unwrap(), s.max().unwrap());
        let p = s.percentile(q).unwrap();
        prop_assert!(min <= p && p <= max);
        prop_assert_eq!(s.percentile(0.0), Some(min));
        prop_assert_eq!(s.percentile(100.0), Some(max));
    }

    #[test]
    fn merge_equals_concatenation(a in values(), b in prop::collection::vec(-1e9f64..1e9, 0..50)) {
        let mut merged: Samples = a.iter().copied().collect();
        let other: Samples = b.iter().copied().collect();
        merged.merge(&other);
        let mut joined: Samples = a.iter().chain(b.iter()).copied().collect();
        let (x, y) = (merged.summary().unwrap(), joined.summary().unwrap());
        prop_assert_eq!(x.count, y.count);
        prop_assert_eq!((x.min, x.max, x.p50, x.p90, x.p95, x.p99), (y.min, y.max, y.p50, y.p90, y.p95, y.p99));
        prop_assert!((x.mean - y.mean).abs() <= 1e-6 * y.mean.abs().max(1.0));
    }

    #[test]
    fn push_order_does_not_matter(v in values(), seed in any::<u64>()) {
        let mut shuffled = v.clone();
        // Deterministic Fisher-Yates driven by a tiny LCG, so the test needs no rng crate.
        let mut state = seed | 1;
        for i in (1..shuffled.len()).rev() {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let j = ((state >> 33) % (i as u64 + 1)) as usize;
            shuffled.swap(i, j);
        }
        let mut a: Samples = v.into_iter().collect();
        let mut b: Samples = shuffled.into_iter().collect();
        let (x, y) = (a.summary().unwrap(), b.summary().unwrap());
        prop_assert_eq!((x.count, x.min, x.max, x.p50, x.p90, x.p95, x.p99), (y.count, y.min, y.max, y.p50, y.p90, y.p95, y.p99));
        prop_assert!((x.mean - y.mean).abs() <= 1e-6 * y.mean.abs().max(1.0));
    }

    #[test]
    fn itl_times_gaps_recovers_span(first in 0u64..10_000_000, span in 0u64..10_000_000, n in 2u64..10_000) {
        let (a, b) = (Duration::from_micros(first), Duration::from_micros(first + span));
        let gap = itl(a, b, n).unwrap();
        let back = gap * u32::try_from(n - 1).unwrap();
        prop_assert!(back <= b - a);
        prop_assert!(b - a - back < Duration::from_nanos(n));
        prop_assert_eq!(tpot(b, a, n), Some(gap));
        prop_assert_eq!(itl(b, a, n).is_none(), span != 0);
    }

    #[test]
    fn ring_keeps_the_newest(cap in 0usize..20, pushes in prop::collection::vec(any::<i32>(), 0..100)) {
        let mut r = Ring::new(cap);
        for &p in &pushes {
            r.push(p);
        }
        let keep = pushes.len().min(cap);
        prop_assert_eq!(r.to_vec(), pushes[pushes.len() - keep..].to_vec());
        prop_assert_eq!(r.last(), if cap == 0 { None } else { pushes.last().copied() });
    }

    #[test]
    fn window_totals_match_events_in_aligned_spans(
        mut events in prop::collection::vec((0u64..20_000, 1u64..5), 0..300),
        from_b in 0u64..80,
        len_b in 0u64..80,
    ) {
        // 250 ms buckets, 100 of them: the whole 20 s test range stays retained.
        let width = 250u64;
        let mut w = WindowCounter::new(Duration::from_millis(width), 100);
        events.sort_unstable();
        for &(t, n) in &events {
            w.record(Duration::from_millis(t), n);
        }
        let (from, to) = (from_b * width, (from_b + len_b) * width);
        let want: u64 = events.iter().filter(|(t, _)| (from..to).contains(t)).map(|(_, n)| n).sum();
        let got = w.total_in(Duration::from_millis(from), Duration::from_millis(to));
        prop_assert_eq!(got, want as f64);
        let all = w.total_in(Duration::ZERO, Duration::from_secs(3600));
        prop_assert_eq!(all, w.total() as f64);
    }

    #[test]
    fn window_rate_is_finite_and_non_negative(
        events in prop::collection::vec((0u64..60_000, 0u64..100), 0..200),
        last in 0u64..120_000,
        now in 0u64..120_000,
        buckets in 0usize..50,
    ) {
        let mut w = WindowCounter::new(Duration::from_millis(250), buckets);
        for &(t, n) in &events {
            w.record(Duration::from_millis(t), n);
        }
        let r = w.rate_over(Duration::from_millis(last), Duration::from_millis(now));
        prop_assert!(r.is_finite() && r >= 0.0);
    }
}
