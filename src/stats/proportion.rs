//! A proportion measured on a finite number of trials (the share of a probe's requests that met
//! an SLO) and its Wilson score interval: unlike the normal approximation it stays inside
//! [0, 1] and is not empty at 0 or n successes, which is where an SLO attainment such as 99%
//! sits.

/// The normal quantile of a two-sided 95% interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Successes out of trials (requests that met the SLO out of those sent).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Proportion {
    /// Trials that succeeded.
    pub hits: u64,
    /// Trials.
    pub trials: u64,
}

impl Proportion {
    /// `hits` of `trials` (hits above trials count as trials).
    pub fn new(hits: u64, trials: u64) -> Self {
        Self { hits: hits.min(trials), trials }
    }

    /// Both counts added: the trials of two runs pooled.
    pub fn pooled(self, other: Self) -> Self {
        Self::new(self.hits + other.hits, self.trials + other.trials)
    }

    /// The share that succeeded, 0..=1; None without trials.
    pub fn share(self) -> Option<f64> {
        (self.trials > 0).then(|| self.hits as f64 / self.trials as f64)
    }

    /// The Wilson score interval of the share at normal quantile `z` (e.g. [`Z95`]), as
    /// (low, high) within [0, 1]; (0, 1) without trials (nothing is known).
    pub fn wilson(self, z: f64) -> (f64, f64) {
        if self.trials == 0 {
            return (0.0, 1.0);
        }
        let n = self.trials as f64;
        let p = self.hits as f64 / n;
        let z2 = z * z;
        let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
        let half = z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
        // At 0 or n hits one end is exactly the share; rounding must not move it past it.
        let low = if self.hits == 0 { 0.0 } else { (centre - half).clamp(0.0, p) };
        let high = if self.hits == self.trials { 1.0 } else { (centre + half).clamp(p, 1.0) };
        (low, high)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_intervals() {
        // 96 of 96: the lower end is n / (n + z^2).
        let (lo, hi) = Proportion::new(96, 96).wilson(Z95);
        assert!((lo - 96.0 / (96.0 + Z95 * Z95)).abs() < 1e-12, "{lo}");
        assert_eq!(hi, 1.0);
        // 50 of 100: about 0.404 to 0.596 (the textbook value).
        let (lo, hi) = Proportion::new(50, 100).wilson(Z95);
        assert!((lo - 0.4038).abs() < 1e-3 && (hi - 0.5962).abs() < 1e-3, "{lo} {hi}");
        assert_eq!(Proportion::new(0, 10).wilson(Z95).0, 0.0);
        assert_eq!(Proportion::default().wilson(Z95), (0.0, 1.0));
        assert_eq!(Proportion::default().share(), None);
        assert_eq!(Proportion::new(3, 2), Proportion::new(2, 2), "hits are capped at the trials");
        assert_eq!(Proportion::new(1, 2).pooled(Proportion::new(3, 4)), Proportion::new(4, 6));
    }

    proptest! {
        #[test]
        fn the_interval_holds_the_share_and_stays_in_zero_one(trials in 1u64..100_000, frac in 0.0f64..=1.0) {
            let p = Proportion::new((trials as f64 * frac).round() as u64, trials);
            let (lo, hi) = p.wilson(Z95);
            let share = p.share().unwrap();
            prop_assert!((0.0..=1.0).contains(&lo) && (0.0..=1.0).contains(&hi));
            prop_assert!(lo <= share && share <= hi, "{lo} <= {share} <= {hi}");
            prop_assert!(lo < hi, "a finite sample never knows the share exactly");
        }

        #[test]
        fn more_trials_at_the_same_share_narrow_it(trials in 1u64..10_000, frac in 0.0f64..=1.0, k in 2u64..50) {
            let hits = (trials as f64 * frac).round() as u64;
            let (a, b) = (Proportion::new(hits, trials).wilson(Z95), Proportion::new(hits * k, trials * k).wilson(Z95));
            prop_assert!(b.1 - b.0 <= a.1 - a.0 + 1e-12, "{a:?} then {b:?}");
        }

        #[test]
        fn a_wider_quantile_widens_it(trials in 1u64..10_000, frac in 0.0f64..=1.0) {
            let p = Proportion::new((trials as f64 * frac).round() as u64, trials);
            let (narrow, wide) = (p.wilson(1.0), p.wilson(Z95));
            prop_assert!(wide.0 <= narrow.0 + 1e-12 && narrow.1 <= wide.1 + 1e-12);
        }
    }
}
