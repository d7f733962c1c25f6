//! Seeded arrival schedules and family assignment of a phase.

use crate::config::routing::Arrival;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::Duration;

/// Send offsets of `n` requests at mean rate `rps` (requests/s), first at 0.
pub(crate) fn arrivals(n: u32, rps: f64, arrival: Arrival, seed: u64) -> Vec<Duration> {
    let rate = if rps.is_finite() && rps > 0.0 { rps } else { 1.0 };
    let mut rng = StdRng::seed_from_u64(seed ^ 0xA5A5);
    let mut t = 0.0f64;
    (0..n)
        .map(|i| {
            if i > 0 {
                t += match arrival {
                    Arrival::Constant => 1.0 / rate,
                    Arrival::Poisson => -(1.0 - rng.random::<f64>()).ln() / rate,
                };
            }
            crate::units::secs(t)
        })
        .collect()
}

/// The family of each of `n` requests: family 0 with probability `hot_fraction`, otherwise
/// uniform over all `families`.
pub(crate) fn families_for(n: u32, families: u32, hot_fraction: f64, seed: u64) -> Vec<u32> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5A5A);
    let f = families.max(1);
    (0..n).map(|_| if rng.random::<f64>() < hot_fraction { 0 } else { rng.random_range(0..f) }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn constant_arrivals_are_evenly_spaced() {
        let a = arrivals(4, 2.0, Arrival::Constant, 1);
        assert_eq!(
            a,
            vec![Duration::ZERO, Duration::from_millis(500), Duration::from_secs(1), Duration::from_millis(1500)]
        );
    }

    #[test]
    fn poisson_arrivals_have_the_mean_rate_and_are_seeded() {
        let a = arrivals(20_000, 1.6, Arrival::Poisson, 7);
        let rate = 19_999.0 / a.last().unwrap().as_secs_f64();
        assert!((rate - 1.6).abs() < 0.05, "{rate}");
        assert_eq!(a, arrivals(20_000, 1.6, Arrival::Poisson, 7));
        assert_ne!(a, arrivals(20_000, 1.6, Arrival::Poisson, 8));
    }

    #[test]
    fn hot_fraction_goes_to_family_zero() {
        let f = families_for(10_000, 8, 0.9, 3);
        let zero = f.iter().filter(|x| **x == 0).count() as f64 / 10_000.0;
        assert!((zero - (0.9 + 0.1 / 8.0)).abs() < 0.02, "{zero}");
        let uniform = families_for(8000, 8, 0.0, 3);
        for fam in 0..8 {
            let share = uniform.iter().filter(|x| **x == fam).count();
            assert!((850..1150).contains(&share), "{fam}: {share}");
        }
    }

    proptest! {
        #[test]
        fn schedules_are_sorted_and_start_at_zero(n in 1u32..500, rps in 0.1f64..50.0, seed in 0u64..1000) {
            for kind in [Arrival::Poisson, Arrival::Constant] {
                let a = arrivals(n, rps, kind, seed);
                prop_assert_eq!(a.len(), n as usize);
                prop_assert_eq!(a[0], Duration::ZERO);
                prop_assert!(a.windows(2).all(|w| w[0] <= w[1]));
            }
        }
    }
}
