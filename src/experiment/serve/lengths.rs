//! The per-request lengths of a serve cell, as `vllm bench serve --random-range-ratio R` draws
//! them: input and output lengths each uniform over the integers of
//! `[floor(L·(1−R)), ceil(L·(1+R))]` around the cell's mean `L` (outputs at least 1 token;
//! inputs too, where vLLM refuses instead), seeded so a re-run draws the same lengths.
//! `R = 0` is the fixed-length workload: every request exactly `L`.

pub use crate::config::serve::RangeRatio;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The prompt and output length of every request of one attempt, in request order.
#[derive(Debug, Clone, PartialEq)]
pub struct Lengths {
    /// Prompt tokens of request i.
    pub input: Vec<u64>,
    /// `max_tokens` of request i.
    pub output: Vec<u64>,
}

impl Lengths {
    /// `n` requests around `input_len` and `output_len`, drawn from `seed`.
    pub fn draw(n: usize, input_len: u64, output_len: u64, ratio: RangeRatio, seed: u64) -> Self {
        let (inputs, outputs) = (ratio.bounds(input_len, 1), ratio.bounds(output_len, 1));
        // Its own stream, apart from the prompts' ids and the arrival gaps drawn from `seed`.
        let mut rng = StdRng::seed_from_u64(seed ^ 0x1e57_a11e_5eed);
        let input = (0..n).map(|_| rng.random_range(inputs.clone())).collect();
        let output = (0..n).map(|_| rng.random_range(outputs.clone())).collect();
        Self { input, output }
    }

    /// The longest prompt (0 with no request).
    pub fn max_input(&self) -> u64 {
        self.input.iter().copied().max().unwrap_or(0)
    }

    /// The longest output (0 with no request).
    pub fn max_output(&self) -> u64 {
        self.output.iter().copied().max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bounds_are_vllms_floor_and_ceil_and_never_below_one() {
        let r = RangeRatio::new(0.25).unwrap();
        assert_eq!(r.bounds(1000, 1), 750..=1250);
        assert_eq!(r.bounds(3, 1), 2..=4, "floor(2.25), ceil(3.75)");
        assert_eq!(RangeRatio::new(0.9).unwrap().bounds(1, 1), 1..=2, "floor(0.1) is 0: held at 1");
        assert_eq!(RangeRatio::FIXED.bounds(512, 1), 512..=512);
    }

    #[test]
    fn a_ratio_outside_zero_to_one_is_refused() {
        for bad in [-0.1, 1.0, 1.5, f64::NAN, f64::INFINITY] {
            assert!(RangeRatio::new(bad).is_err(), "{bad}");
        }
        assert_eq!(RangeRatio::new(0.0).unwrap(), RangeRatio::FIXED);
    }

    #[test]
    fn fixed_lengths_are_exactly_the_means() {
        let l = Lengths::draw(50, 300, 40, RangeRatio::FIXED, 7);
        assert!(l.input.iter().all(|&n| n == 300) && l.output.iter().all(|&n| n == 40));
        assert_eq!((l.max_input(), l.max_output()), (300, 40));
    }

    proptest! {
        #[test]
        fn lengths_stay_in_bounds_and_spread_over_them(
            input_len in 1u64..20_000, output_len in 1u64..4_000, r in 0.0f64..0.99, seed: u64,
        ) {
            let ratio = RangeRatio::new(r).unwrap();
            let l = Lengths::draw(2_000, input_len, output_len, ratio, seed);
            let (ib, ob) = (ratio.bounds(input_len, 1), ratio.bounds(output_len, 1));
            prop_assert!(l.input.iter().all(|n| ib.contains(n)));
            prop_assert!(l.output.iter().all(|n| ob.contains(n)));
            prop_assert_eq!(&l, &Lengths::draw(2_000, input_len, output_len, ratio, seed));
            // Uniform: the mean of 2,000 draws sits near the middle of the range (its
            // standard error is under 1.3% of the width).
            let width = (ib.end() - ib.start()) as f64;
            let mean = l.input.iter().sum::<u64>() as f64 / 2_000.0;
            let middle = (ib.start() + ib.end()) as f64 / 2.0;
            prop_assert!((mean - middle).abs() <= 0.08 * width + 0.5, "mean {} middle {}", mean, middle);
        }
    }
}
