//! When each request of a serve cell arrives: `vllm bench serve`'s schedule. At `inf` every
//! request arrives at once; at a finite rate r the gaps are gamma-distributed with shape
//! `burstiness` and mean 1/r (exponential, i.e. Poisson arrivals, at shape 1), summed, and
//! scaled so that the last arrival lands at n/r, as vLLM scales its schedule to remove the
//! sampling drift of the total.

use crate::config::Rate;
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::time::Duration;

/// Arrival offsets of `n` requests after the schedule's start, in order, seeded by `seed`.
pub(crate) fn arrival_offsets(n: usize, rate: Rate, burstiness: f64, seed: u64) -> Vec<Duration> {
    let Rate::PerSecond(r) = rate else { return vec![Duration::ZERO; n] };
    let mut rng = StdRng::seed_from_u64(seed);
    let scale = 1.0 / (r * burstiness);
    let mut at = 0.0;
    let mut offsets: Vec<f64> = (0..n)
        .map(|_| {
            at += gamma(&mut rng, burstiness, scale);
            at
        })
        .collect();
    if let Some(&last) = offsets.last().filter(|l| **l > 0.0) {
        let factor = n as f64 / r / last;
        offsets.iter_mut().for_each(|o| *o *= factor);
    }
    offsets.into_iter().map(crate::units::secs).collect()
}

pub(crate) use crate::load::open_loop::gamma;

#[cfg(test)]
mod tests {
    use super::*;

    fn gaps(n: usize, rate: f64, burstiness: f64, seed: u64) -> Vec<f64> {
        let at = arrival_offsets(n, Rate::PerSecond(rate), burstiness, seed);
        let mut prev = 0.0;
        at.iter()
            .map(|d| {
                let g = d.as_secs_f64() - prev;
                prev = d.as_secs_f64();
                g
            })
            .collect()
    }

    fn mean_var(v: &[f64]) -> (f64, f64) {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        (m, v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64)
    }

    #[test]
    fn inf_sends_everything_at_once() {
        assert_eq!(arrival_offsets(5, Rate::Inf, 1.0, 7), vec![Duration::ZERO; 5]);
        assert!(arrival_offsets(0, Rate::PerSecond(2.0), 1.0, 7).is_empty());
    }

    #[test]
    fn the_last_arrival_lands_at_n_over_rate_and_gaps_average_one_over_rate() {
        for (rate, b) in [(4.0, 1.0), (0.5, 0.3), (20.0, 4.0)] {
            let at = arrival_offsets(2000, Rate::PerSecond(rate), b, 11);
            assert!((at[1999].as_secs_f64() - 2000.0 / rate).abs() < 1e-6, "{rate} {b}");
            assert!(at.windows(2).all(|w| w[0] <= w[1]), "in order");
            let (m, _) = mean_var(&gaps(2000, rate, b, 11));
            assert!((m - 1.0 / rate).abs() < 1e-6 / rate + 1e-9, "mean gap {m} at {rate}/s");
        }
    }

    #[test]
    fn seeded_and_different_seeds_differ() {
        let a = arrival_offsets(50, Rate::PerSecond(3.0), 1.0, 5);
        assert_eq!(a, arrival_offsets(50, Rate::PerSecond(3.0), 1.0, 5));
        assert_ne!(a, arrival_offsets(50, Rate::PerSecond(3.0), 1.0, 6));
    }

    #[test]
    fn burstiness_sets_the_variance_of_the_gaps() {
        // Gamma(k, 1/(r k)) gaps: variance 1/(k r^2); coefficient of variation 1/sqrt(k).
        let rate = 2.0;
        let cv = |b: f64| {
            let (m, v) = mean_var(&gaps(20_000, rate, b, 3));
            v.sqrt() / m
        };
        for b in [0.25_f64, 1.0, 4.0] {
            let want = 1.0 / b.sqrt();
            assert!((cv(b) - want).abs() < 0.06 * want, "burstiness {b}: cv {} want {want}", cv(b));
        }
        assert!(cv(0.25) > cv(1.0) && cv(1.0) > cv(4.0));
    }

    #[test]
    fn gamma_draws_have_the_right_mean_for_small_and_large_shapes() {
        let mut rng = StdRng::seed_from_u64(9);
        for (shape, scale) in [(0.5, 2.0), (1.0, 1.0), (3.0, 0.5)] {
            let draws: Vec<f64> = (0..40_000).map(|_| gamma(&mut rng, shape, scale)).collect();
            let (m, v) = mean_var(&draws);
            assert!(draws.iter().all(|d| *d >= 0.0));
            assert!((m - shape * scale).abs() < 0.03 * shape * scale, "mean {m} for {shape}x{scale}");
            assert!((v - shape * scale * scale).abs() < 0.08 * shape * scale * scale, "var {v}");
        }
    }
}
