//! Tests of [`super::GapDist`]: exact below its cap, bounded and within its precision above.

use super::*;

#[test]
fn below_the_cap_it_is_exactly_samples() {
    let values: Vec<f64> = (0..1000).map(|i| f64::from((i * 37) % 1000) / 7.0).collect();
    let mut d = GapDist::new();
    let mut s = Samples::new();
    values.iter().for_each(|v| d.push(*v));
    values.iter().for_each(|v| s.push(*v));
    d.push(f64::NAN);
    assert!(!d.is_binned());
    assert_eq!(d.summary(), s.summary());
    assert_eq!(d.std_dev(), s.std_dev());
}

#[test]
fn above_the_cap_figures_stay_within_the_stated_precision() {
    // Two million values spread over 0.001..2000 ms, against the exact figures.
    let values: Vec<f64> = (0..2_000_000u64).map(|i| ((i * 7919) % 2_000_000 + 1) as f64 / 1000.0).collect();
    let mut d = GapDist::new();
    values.iter().for_each(|v| d.push(*v));
    let mut exact: Samples = values.iter().copied().collect();
    assert!(d.is_binned());
    let (got, want) = (d.summary().unwrap(), exact.summary().unwrap());
    assert_eq!((got.count, got.min, got.max), (want.count, want.min, want.max), "count and extremes are exact");
    assert!((got.mean - want.mean).abs() < 1e-9 * want.mean, "the mean is exact: {} vs {}", got.mean, want.mean);
    let (gs, ws) = (d.std_dev().unwrap(), exact.std_dev().unwrap());
    assert!((gs - ws).abs() < 1e-9 * ws, "the std is exact: {gs} vs {ws}");
    for (g, w) in [(got.p50, want.p50), (got.p90, want.p90), (got.p95, want.p95), (got.p99, want.p99)] {
        assert!((g - w).abs() <= RELATIVE_PRECISION * w, "percentile {g} vs {w}");
    }
}

#[test]
fn memory_does_not_grow_with_values() {
    let mut d = GapDist::new();
    for i in 0..100_000u64 {
        d.push_n((i % 5000) as f64 / 10.0 + 0.01, 50);
    }
    let h = d.hist.as_ref().expect("spilled");
    // Buckets for 3 significant digits over 10 us .. 500 ms in ns: a few thousand counters.
    assert!(h.distinct_values() < 40_000, "{} counters", h.distinct_values());
    assert_eq!(d.count(), 5_000_000);
    assert!(d.exact.is_empty(), "the exact values are dropped once binned");
}

#[test]
fn push_n_is_n_pushes() {
    let (mut a, mut b) = (GapDist::new(), GapDist::new());
    a.push_n(2.5, 3);
    (0..3).for_each(|_| b.push(2.5));
    assert_eq!(a.summary(), b.summary());
    assert_eq!(a.count(), 3);
}

#[test]
fn merge_is_as_if_pushed_in_one() {
    let values: Vec<f64> = (0..30_000u64).map(|i| ((i * 13) % 997) as f64 / 3.0 + 0.5).collect();
    let (mut one, mut a, mut b, mut small) = (GapDist::new(), GapDist::new(), GapDist::new(), GapDist::new());
    values.iter().for_each(|v| one.push(*v));
    values[..1000].iter().for_each(|v| a.push(*v));
    values[1000..].iter().for_each(|v| b.push(*v));
    a.merge(&b);
    let (m, o) = (a.summary().unwrap(), one.summary().unwrap());
    assert_eq!((m.count, m.min, m.max, m.p50, m.p99), (o.count, o.min, o.max, o.p50, o.p99));
    assert!((m.mean - o.mean).abs() < 1e-9 && (a.std_dev().unwrap() - one.std_dev().unwrap()).abs() < 1e-9);
    // Two small exact ones stay exact.
    small.push(1.0);
    let mut other = GapDist::new();
    other.push(3.0);
    small.merge(&other);
    assert!(!small.is_binned());
    assert_eq!(small.percentile(50.0), Some(2.0), "numpy's interpolation while exact");
    assert_eq!(GapDist::new().summary(), None);
}
