//! The routing plan's `conversation` scenario: each prompt family is one conversation, and a
//! family's k-th request of the phase is its turn k: the family's prefix, then every earlier
//! turn's user message and answer (fixed, as the dataset history of `--plan conversation`),
//! then the new message. Each turn extends the one before, so a route that keeps a
//! conversation on the replica holding its history serves the growing prefix from cache; the
//! owner map shows whether it did (a conversation served by two replicas lost its history).

use super::prompts::Families;
use crate::load::filler::filler_text;

/// Bytes of a generated user message (about 40 tokens).
const USER_BYTES: usize = 200;
/// Bytes of a generated answer (about 60 tokens).
const ANSWER_BYTES: usize = 300;

/// The seed of turn `turn`'s texts in conversation `family` of the phase's prefix set `salt`.
fn turn_seed(seed: u64, salt: &str, family: u32, turn: u32) -> u64 {
    let salt = xxhash_rust::xxh64::xxh64(salt.as_bytes(), seed);
    salt ^ (u64::from(family) << 32 | u64::from(turn)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The prompt of turn `turn` (0-based) of conversation `family`, its prefix candidate `c`.
pub(crate) fn turn_prompt(f: &Families, c: usize, salt: &str, family: u32, turn: u32) -> String {
    let mut p = f.salted_prefix(c, salt);
    for j in 0..=turn {
        let s = turn_seed(f.seed, salt, family, j);
        p.push_str("\nUser: ");
        p.push_str(&filler_text(s, USER_BYTES));
        if j < turn {
            p.push_str("\nAssistant: ");
            p.push_str(&filler_text(s ^ 0xA5, ANSWER_BYTES));
        }
    }
    p
}

/// Each request's turn within its family: how many of the family's requests came before it.
pub(crate) fn turns_of(families: &[u32]) -> Vec<u32> {
    let mut seen = std::collections::HashMap::<u32, u32>::new();
    families
        .iter()
        .map(|f| {
            let n = seen.entry(*f).or_default();
            *n += 1;
            *n - 1
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_turn_extends_the_one_before_and_conversations_differ() {
        let f = Families { seed: 5, repeat: 2, prefix_tokens: 0, method: "tokenize".into() };
        let t0 = turn_prompt(&f, 0, "s-1", 3, 0);
        let t1 = turn_prompt(&f, 0, "s-1", 3, 1);
        let t2 = turn_prompt(&f, 0, "s-1", 3, 2);
        assert!(t0.starts_with(&f.salted_prefix(0, "s-1")));
        assert!(t1.starts_with(&t0) && t2.starts_with(&t1), "the history grows");
        assert_eq!(t2.matches("\nAssistant: ").count(), 2);
        let other = turn_prompt(&f, 0, "s-1", 4, 0);
        assert_ne!(other, t0, "another conversation on the same prefix says other things");
        assert_ne!(turn_prompt(&f, 0, "s-2", 3, 0)[..12], t0[..12], "another phase's set");
        assert_eq!(turns_of(&[2, 0, 2, 2, 0]), [0, 0, 1, 2, 1]);
    }
}
