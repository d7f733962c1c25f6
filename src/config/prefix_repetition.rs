//! vLLM's `prefix_repetition` workload (`--dataset-name prefix_repetition`, issue 24): each
//! serve cell draws `num_prefixes` random prefixes and sends every request one of them
//! followed by a random suffix of its own, so a prefix cache can serve the prefix of every
//! request after its group's first.

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

/// The shape of a `prefix_repetition` request, vLLM's flags and defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefixRepetition {
    /// Tokens every request of a group shares (`--prefix-repetition-prefix-len`).
    pub prefix_len: u64,
    /// Tokens of each request's own suffix (`--prefix-repetition-suffix-len`).
    pub suffix_len: u64,
    /// Distinct prefixes a cell draws (`--prefix-repetition-num-prefixes`).
    pub num_prefixes: u32,
    /// `max_tokens` of every request (`--prefix-repetition-output-len`).
    pub output_len: u64,
}

impl PrefixRepetition {
    /// vLLM's defaults: 10 prefixes of 256 tokens, 256-token suffixes, 128 output tokens.
    pub const DEFAULT: Self = Self { prefix_len: 256, suffix_len: 256, num_prefixes: 10, output_len: 128 };

    /// Every request's prompt length, tokens.
    pub fn input_len(&self) -> u64 {
        self.prefix_len + self.suffix_len
    }

    /// The `n` requests of a cell need at least one a prefix (vLLM's rule), one line when not.
    pub fn check(&self, n: u32) -> Result<(), String> {
        match n >= self.num_prefixes {
            true => Ok(()),
            false => Err(format!(
                "--num-prompts {n} is fewer than --prefix-repetition-num-prefixes {}: every prefix needs a request, as in vLLM",
                self.num_prefixes
            )),
        }
    }

    /// The prefix of each of `n` requests, in sending order: as even as `n` allows (vLLM sends
    /// `n / num_prefixes` a prefix and drops the rest; here every request is sent and groups
    /// differ by one at most), shuffled with `seed` as vLLM shuffles its requests.
    pub fn groups(&self, n: usize, seed: u64) -> Vec<u32> {
        let k = self.num_prefixes.max(1);
        let mut g: Vec<u32> = (0..n).map(|i| i as u32 % k).collect();
        g.shuffle(&mut StdRng::seed_from_u64(seed ^ 0x9e37_79b9));
        g
    }

    /// The largest share of a cell's prompt tokens a prefix cache can serve from the cell's
    /// own requests: every request after its group's first finds the prefix (fewer when a
    /// group's requests are prefilled together, or the prefix is not a whole number of
    /// blocks).
    pub fn expected_hit_ratio(&self, n: u32) -> f64 {
        let repeats = f64::from(n.saturating_sub(self.num_prefixes.min(n)));
        let total = f64::from(n) * self.input_len() as f64;
        if total == 0.0 { 0.0 } else { repeats * self.prefix_len as f64 / total }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_even_shuffled_and_seeded() {
        let p = PrefixRepetition { num_prefixes: 4, ..PrefixRepetition::DEFAULT };
        let g = p.groups(10, 7);
        let count = |k| g.iter().filter(|&&x| x == k).count();
        assert_eq!((count(0), count(1), count(2), count(3)), (3, 3, 2, 2), "every request sent, groups within one");
        assert_eq!(g, p.groups(10, 7));
        assert_ne!(p.groups(40, 7), p.groups(40, 8));
        assert_ne!(p.groups(40, 7), (0..40).map(|i| i % 4).collect::<Vec<_>>(), "shuffled");
    }

    #[test]
    fn the_expected_hit_counts_every_repeat_of_a_prefix() {
        let p = PrefixRepetition::DEFAULT;
        // 100 requests, 10 prefixes: 90 find their 256-token prefix of 512 tokens.
        assert!((p.expected_hit_ratio(100) - 90.0 * 256.0 / 51_200.0).abs() < 1e-12);
        assert_eq!(p.expected_hit_ratio(10), 0.0, "each prefix once: nothing to hit");
        assert_eq!(PrefixRepetition { prefix_len: 0, ..p }.expected_hit_ratio(50), 0.0);
        assert!(p.check(9).unwrap_err().contains("--num-prompts 9 is fewer than --prefix-repetition-num-prefixes 10"));
        assert_eq!(p.check(10), Ok(()));
    }
}
