//! Unit and property tests of the repeated-run statistics.

use super::*;
use proptest::prelude::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn three_runs_have_their_textbook_figures() {
    // Mean 10, deviations −1, 0, +1: sd 1, CV 0.1, half-width t(0.975, 2) / sqrt(3) = 2.484.
    let s = RunStats::of(&[9.0, 10.0, 11.0], DEFAULT_LEVEL).unwrap();
    assert_eq!(s.n, 3);
    assert!(close(s.mean, 10.0) && close(s.sd.unwrap(), 1.0) && close(s.cv.unwrap(), 0.1));
    let half = s.half_width().unwrap();
    assert!((half - 4.302_653 / 3f64.sqrt()).abs() < 1e-5, "{half}");
    assert!(close(s.ci_low.unwrap(), 10.0 - half) && close(s.ci_high.unwrap(), 10.0 + half));
    assert!((s.relative_half_width().unwrap() - half / 10.0).abs() < 1e-12);
    assert_eq!(s.level, 0.95);
}

#[test]
fn a_single_run_has_a_mean_and_nothing_else() {
    let s = RunStats::of(&[42.0], DEFAULT_LEVEL).unwrap();
    assert_eq!((s.n, s.mean, s.sd, s.cv, s.ci_low, s.ci_high), (1, 42.0, None, None, None, None));
    assert_eq!(s.half_width(), None);
    assert_eq!(RunStats::of(&[], DEFAULT_LEVEL), None);
    assert_eq!(RunStats::of(&[1.0, f64::NAN], DEFAULT_LEVEL), None);
}

#[test]
fn a_mean_of_zero_has_no_cv() {
    let s = RunStats::of(&[-1.0, 1.0], DEFAULT_LEVEL).unwrap();
    assert_eq!(s.mean, 0.0);
    assert!(s.sd.unwrap() > 0.0 && s.cv.is_none());
}

#[test]
fn welch_matches_a_hand_computed_case() {
    // a: n 3, sd 1; b: n 4, sd 2. se² = 1/3 + 4/4 = 4/3; df = (4/3)² / ((1/3)²/2 + 1²/3) = 4.571.
    let a = RunStats::of(&[9.0, 10.0, 11.0], DEFAULT_LEVEL).unwrap();
    let b = RunStats { n: 4, mean: 12.0, sd: Some(2.0), cv: None, ci_low: None, ci_high: None, level: 0.95 };
    let d = difference(&a, &b, DEFAULT_LEVEL).unwrap();
    let df = (4.0f64 / 3.0).powi(2) / ((1.0f64 / 3.0).powi(2) / 2.0 + 1.0 / 3.0);
    assert!((d.df - df).abs() < 1e-9, "{}", d.df);
    let t = crate::stats::student_t::two_sided(0.95, df).unwrap();
    assert!((d.half - t * (4.0f64 / 3.0).sqrt()).abs() < 1e-9);
    assert!(!d.borrowed);
    // The means differ by 2: inside an interval of ±3.2.
    assert!(d.half > 3.0 && d.contains(b.mean - a.mean) && !d.contains(d.half * 1.01));
}

#[test]
fn a_single_run_side_borrows_the_other_sides_spread() {
    let a = RunStats::of(&[9.0, 10.0, 11.0], DEFAULT_LEVEL).unwrap();
    let b = RunStats::of(&[15.0], DEFAULT_LEVEL).unwrap();
    let d = difference(&a, &b, DEFAULT_LEVEL).unwrap();
    // sd 1 for both, se = sqrt(1/3 + 1), df 2.
    let want = 4.302_653 * (4.0f64 / 3.0).sqrt();
    assert!((d.half - want).abs() < 1e-5 && d.df == 2.0 && d.borrowed, "{d:?}");
    assert_eq!(difference(&b, &a, DEFAULT_LEVEL).map(|r| r.half), Some(d.half), "symmetric");
    assert_eq!(difference(&b, &b, DEFAULT_LEVEL), None, "no repeats: no interval");
}

fn runs() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(1.0f64..1e6, 2..30)
}

proptest! {
    #[test]
    fn identical_values_have_a_cv_of_zero(v in -1e6f64..1e6, n in 2usize..40) {
        prop_assume!(v != 0.0);
        let s = RunStats::of(&vec![v; n], DEFAULT_LEVEL).unwrap();
        prop_assert_eq!(s.sd, Some(0.0));
        prop_assert_eq!(s.cv, Some(0.0));
        prop_assert_eq!(s.half_width(), Some(0.0));
    }

    #[test]
    fn the_interval_holds_the_mean_and_the_mean_lies_within_the_runs(v in runs()) {
        let s = RunStats::of(&v, DEFAULT_LEVEL).unwrap();
        let (lo, hi) = (s.ci_low.unwrap(), s.ci_high.unwrap());
        prop_assert!(lo <= s.mean && s.mean <= hi);
        let (min, max) = v.iter().fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
        prop_assert!(min <= s.mean * (1.0 + 1e-12) && s.mean <= max * (1.0 + 1e-12));
        prop_assert!(s.cv.unwrap() >= 0.0);
    }

    #[test]
    fn the_interval_shrinks_as_runs_grow_for_a_fixed_spread(sd in 0.1f64..100.0, n in 2u32..60) {
        // Same sd, more runs: a narrower interval (t falls and sqrt(n) grows).
        let at = |n: u32| RunStats { n, mean: 0.0, sd: Some(sd), cv: None, ci_low: None, ci_high: None, level: 0.95 };
        let half = |n: u32| {
            let s = at(n);
            crate::stats::student_t::two_sided(s.level, f64::from(n - 1)).unwrap() * sd / f64::from(n).sqrt()
        };
        prop_assert!(half(n + 1) < half(n));
        // And `of` agrees with the formula on values built to have that sd.
        let values: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { sd } else { -sd }).collect();
        let s = RunStats::of(&values, DEFAULT_LEVEL).unwrap();
        let formula = crate::stats::student_t::two_sided(0.95, f64::from(n - 1)).unwrap() * s.sd.unwrap() / f64::from(n).sqrt();
        prop_assert!((s.half_width().unwrap() - formula).abs() <= 1e-9 * formula.max(1.0));
    }

    #[test]
    fn cv_is_scale_invariant(v in runs(), k in 1e-3f64..1e3) {
        let a = RunStats::of(&v, DEFAULT_LEVEL).unwrap();
        let scaled: Vec<f64> = v.iter().map(|x| x * k).collect();
        let b = RunStats::of(&scaled, DEFAULT_LEVEL).unwrap();
        prop_assert!((a.cv.unwrap() - b.cv.unwrap()).abs() <= 1e-9 * a.cv.unwrap().max(1e-12));
        prop_assert!((a.relative_half_width().unwrap() - b.relative_half_width().unwrap()).abs() <= 1e-9);
    }

    #[test]
    fn a_difference_of_zero_is_always_within_noise(a in runs(), b in runs()) {
        let (x, y) = (RunStats::of(&a, DEFAULT_LEVEL).unwrap(), RunStats::of(&b, DEFAULT_LEVEL).unwrap());
        let d = difference(&x, &y, DEFAULT_LEVEL).unwrap();
        prop_assert!(d.half >= 0.0 && d.contains(0.0));
        // Wider at a higher level.
        prop_assert!(difference(&x, &y, 0.99).unwrap().half >= d.half);
    }
}
