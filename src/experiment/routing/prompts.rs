//! Prompt families: a prefix per candidate, built by repeating a candidate-specific block of
//! text (`repeat` times, calibrated so a prefix is about `--prompt-tokens` long), plus a short
//! unique suffix per request. Every phase salts its prefixes (a marker ahead of the first
//! block), so no phase reuses a prefix an earlier phase sent: a cold phase stays cold on a
//! server whose cache cannot be reset (docs/protocol.md §8.7), and route order cannot warm it.

use crate::cell::calibration::BoundedCounter;
use crate::load::calibrate::TokenCounter;
use crate::load::filler::filler_text;

/// The prefixes of a session's candidates.
#[derive(Debug, Clone, PartialEq)]
pub struct Families {
    /// Seed of the candidate blocks.
    pub seed: u64,
    /// Times each candidate's block is repeated.
    pub repeat: usize,
    /// Tokens the server counts for candidate 0's prefix alone.
    pub prefix_tokens: u64,
    /// How the length was measured (`tokenize`, `usage`).
    pub method: String,
}

/// The repeated block of candidate `c`: distinct from every other candidate's from its first
/// bytes, so no two families share a cache block.
pub(crate) fn block(seed: u64, c: usize) -> String {
    let mut b = format!("Context block {c}: ");
    b.push_str(&filler_text(seed.wrapping_mul(31).wrapping_add(c as u64 + 1), 180));
    b.push('\n');
    b
}

impl Families {
    /// The prefix of candidate `c`.
    pub fn prefix(&self, c: usize) -> String {
        block(self.seed, c).repeat(self.repeat.max(1))
    }

    /// The prefix of candidate `c` in the prefix set `salt` (one set per phase): the salt
    /// comes first, so every cache block of the prefix differs from other sets'.
    pub fn salted_prefix(&self, c: usize, salt: &str) -> String {
        let mut p = if salt.is_empty() { String::new() } else { format!("[set {salt}] ") };
        p.push_str(&self.prefix(c));
        p
    }

    /// The whole prompt of request `i` of a phase, for family `family` mapped to candidate `c`,
    /// in the phase's prefix set `salt`.
    pub fn prompt(&self, c: usize, salt: &str, phase: &str, i: usize, family: u32) -> String {
        let mut p = self.salted_prefix(c, salt);
        p.push_str(&format!(
            "\nRequest {phase} #{i} of family {family}: summarise the context above in one paragraph."
        ));
        p
    }

    /// A priming prompt for candidate `c` in prefix set `salt` (its prefix and a short fixed question).
    pub fn priming_prompt(&self, c: usize, salt: &str) -> String {
        let mut p = self.salted_prefix(c, salt);
        p.push_str("\nPriming: acknowledge the context above.");
        p
    }
}

/// Chooses `repeat` so candidate 0's prefix is about `target` tokens.
pub(crate) async fn calibrate(counter: &BoundedCounter<'_>, seed: u64, target: u64) -> anyhow::Result<Families> {
    const SAMPLE: usize = 8;
    let unit = block(seed, 0);
    let sample = counter
        .count(&unit.repeat(SAMPLE))
        .await
        .map_err(|e| anyhow::anyhow!("preflight: cannot size the routing prompts: {e}"))?;
    let empty = counter.count("").await.unwrap_or(0);
    let per_block = (sample.saturating_sub(empty) as f64 / SAMPLE as f64).max(1.0);
    let repeat = ((target.saturating_sub(empty) as f64 / per_block).round() as usize).max(1);
    let mut fam = Families { seed, repeat, prefix_tokens: 0, method: counter.counter.method.as_str().into() };
    fam.prefix_tokens = counter.count(&fam.prefix(0)).await.unwrap_or((per_block * repeat as f64) as u64 + empty);
    Ok(fam)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_differ_from_the_first_block_and_prompts_are_unique() {
        let f = Families { seed: 5, repeat: 3, prefix_tokens: 0, method: "tokenize".into() };
        let (a, b) = (f.prefix(0), f.prefix(1));
        assert_ne!(a.as_bytes()[..128], b.as_bytes()[..128]);
        assert!(a.starts_with(&block(5, 0)));
        assert_eq!(a.matches("Context block 0:").count(), 3);
        let p1 = f.prompt(0, "", "r1-hot90-random", 1, 0);
        let p2 = f.prompt(0, "", "r1-hot90-random", 2, 0);
        assert!(p1.starts_with(&a) && p2.starts_with(&a) && p1 != p2);
        let (s1, s2) = (f.prompt(0, "ab-1", "x", 1, 0), f.prompt(0, "ab-2", "x", 1, 0));
        assert_ne!(s1.as_bytes()[..16], s2.as_bytes()[..16], "sets differ from the first bytes");
        assert!(f.priming_prompt(0, "ab-1").starts_with(&f.salted_prefix(0, "ab-1")));
    }
}
