//! The conversations a cell runs: a ShareGPT file's own (its user turns and its answers, each
//! cell its own run of the sample) or generated ones, seeded per cell and attempt, so no cell
//! finds another's conversations in a prefix cache.

use crate::config::conversation::ConversationConfig;
use crate::dataset::Conversation;
use crate::load::filler::FillerCursor;

/// One conversation: its user messages in order and the answers the dataset gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    /// The user messages, one a turn, at most `--turns`.
    pub users: Vec<String>,
    /// The dataset's answer to each user message, where it has one (`--history dataset` sends
    /// these back; a conversation that ends on a user message has one fewer).
    pub answers: Vec<String>,
}

impl Script {
    /// The turns of a dataset conversation (alternating user and assistant, user first), at
    /// most `turns` user messages.
    pub fn of(c: &Conversation, turns: u32) -> Self {
        let users: Vec<String> = c.turns.iter().step_by(2).take(turns as usize).cloned().collect();
        let answers = c.turns.iter().skip(1).step_by(2).take(users.len()).cloned().collect();
        Self { users, answers }
    }

    /// A generated conversation of `turns` user messages of `user_words` words and answers of
    /// `answer_words`, every word drawn from `seed`'s own stream (distinct from the first word).
    pub fn generated(seed: u64, turns: u32, user_words: u64, answer_words: u64) -> Self {
        let mut words = FillerCursor::new(seed);
        let mut take = |n: u64| {
            let mut out = String::new();
            for _ in 0..n {
                words.push_word(&mut out);
            }
            out.trim_start().to_string()
        };
        let mut users = Vec::new();
        let mut answers = Vec::new();
        for _ in 0..turns {
            users.push(take(user_words));
            answers.push(take(answer_words));
        }
        Self { users, answers }
    }
}

/// The seed of conversation `i` of a cell's attempt: the session seed hashed with the cell's
/// place in the plan and the attempt. (XOR-folding the key into the seed made `--seed 9`'s
/// first cell `--seed 8`'s second: a new seed found the last session's conversations cached.)
pub fn seed_of(base: u64, slot: usize, attempt: u32, i: usize) -> u64 {
    let key: Vec<u8> = [base, slot as u64, u64::from(attempt), i as u64].iter().flat_map(|k| k.to_le_bytes()).collect();
    xxhash_rust::xxh64::xxh64(&key, 0xc0_4e75)
}

/// The `n` conversations of the cell at `slot` (plan order among the conversation cells),
/// attempt `attempt`: the dataset's `slot`-th run of them (wrapping round a short sample),
/// else generated ones of `answer_words`-word answers.
pub fn for_cell(cfg: &ConversationConfig, seed: u64, slot: usize, attempt: u32, answer_words: u64) -> Vec<Script> {
    let n = cfg.conversations as usize;
    match &cfg.dataset {
        Some(d) => {
            let sample = &d.sampled.conversations;
            (0..n).map(|i| Script::of(&sample[(slot * n + i) % sample.len()], cfg.turns)).collect()
        }
        None => (0..n)
            .map(|i| Script::generated(seed_of(seed, slot, attempt, i), cfg.turns, cfg.user_tokens, answer_words))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dataset_turns_split_into_users_and_answers() {
        let c = Conversation { turns: ["u1", "a1", "u2", "a2", "u3"].map(String::from).to_vec(), output_tokens: None };
        let s = Script::of(&c, 8);
        assert_eq!(s.users, ["u1", "u2", "u3"]);
        assert_eq!(s.answers, ["a1", "a2"]);
        let two = Script::of(&c, 2);
        assert_eq!((two.users.len(), two.answers.len()), (2, 2));
    }

    #[test]
    fn generated_conversations_are_sized_and_distinct_per_seed() {
        let a = Script::generated(1, 3, 20, 5);
        assert_eq!((a.users.len(), a.answers.len()), (3, 3));
        assert_eq!(a.users[0].split_whitespace().count(), 20);
        assert_eq!(a.answers[2].split_whitespace().count(), 5);
        assert_eq!(a, Script::generated(1, 3, 20, 5));
        let b = Script::generated(2, 3, 20, 5);
        assert_ne!(a.users[0], b.users[0]);
        assert_ne!(a.users[1], a.users[0]);
        assert_ne!(seed_of(7, 0, 1, 0), seed_of(7, 1, 1, 0));
        assert_ne!(seed_of(7, 0, 1, 0), seed_of(7, 0, 2, 0));
        assert_ne!(seed_of(7, 0, 1, 0), seed_of(7, 0, 1, 1));
        // Neighbouring session seeds never meet on another cell or attempt.
        let all: std::collections::HashSet<u64> =
            (0..64).flat_map(|b| (0..8).flat_map(move |c| (1..4).map(move |a| seed_of(b, c, a, 0)))).collect();
        assert_eq!(all.len(), 64 * 8 * 3);
    }
}
