//! The simulator's own deterministic tokenizer, chat template and output vocabulary.
//!
//! Rule: a token is one of
//! * a run of at most [`MAX_WORD_BYTES`] ASCII letters or digits, with at most one leading space;
//! * any other single character (punctuation, newline, a space not followed by a word, any
//!   non-ASCII character).
//!
//! Ids are a hash of the token's bytes, so equal text gives equal ids (prefix caching works on
//! repeated text) and the rule is stable across runs. Clients must not rely on this rule beyond
//! `/tokenize` and the `usage` the replica reports.

use xxhash_rust::xxh64::xxh64;

/// Longest alphanumeric run that stays one token, bytes.
pub(crate) const MAX_WORD_BYTES: usize = 6;
/// Vocabulary size the ids fall into.
const VOCAB: u64 = 150_000;
/// Ids at or above this value are the chat template's special tokens.
const SPECIAL_BASE: u32 = VOCAB as u32;
const IM_START: u32 = SPECIAL_BASE;
const IM_END: u32 = SPECIAL_BASE + 1;
/// Ids a token-id prompt may use: the text ids and the chat template's two special tokens;
/// a prompt with a larger id is refused as vLLM refuses one (docs/protocol.md §3.8).
pub(crate) const VOCAB_SIZE: u32 = IM_END + 1;

/// The words generated output is made of; each is exactly one token.
pub(crate) const OUTPUT_WORDS: [&str; 16] = [
    " the", " model", " decode", " token", " cache", " batch", " block", " prefix", " route", " queue", " stream",
    " serve", " kernel", " layer", " load", " time",
];

/// One chat message, as far as the template needs it.
#[derive(Debug, Clone)]
pub(crate) struct ChatMessage {
    /// Message role (`system`, `user`, `assistant`, ...).
    pub role: String,
    /// Message text.
    pub content: String,
}

fn piece_id(piece: &[u8]) -> u32 {
    (xxh64(piece, 0x5eed) % VOCAB) as u32
}

/// Tokenizes text with the simulator's rule and appends the ids to `out`.
pub(crate) fn tokenize_into(text: &str, out: &mut Vec<u32>) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let lead = usize::from(bytes[i] == b' ' && bytes.get(i + 1).is_some_and(u8::is_ascii_alphanumeric));
        let mut j = i + lead;
        while j < bytes.len() && j - (i + lead) < MAX_WORD_BYTES && bytes[j].is_ascii_alphanumeric() {
            j += 1;
        }
        if j == i + lead {
            // Not a word: one character (whole UTF-8 sequence) is one token.
            j = i + utf8_len(bytes[i]);
        }
        let end = j.min(bytes.len());
        out.push(piece_id(&bytes[start..end]));
        i = end;
    }
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

/// Tokenizes text with the simulator's rule.
pub(crate) fn tokenize(text: &str) -> Vec<u32> {
    let mut out = Vec::with_capacity(text.len() / 4 + 1);
    tokenize_into(text, &mut out);
    out
}

/// Applies the chat template (ChatML-like) and tokenizes the result.
///
/// Each message is `<|im_start|>{role}\n{content}<|im_end|>\n`; with `add_generation_prompt`
/// the prompt ends with `<|im_start|>assistant\n`. The markers are single special tokens.
pub(crate) fn tokenize_chat(messages: &[ChatMessage], add_generation_prompt: bool) -> Vec<u32> {
    let len: usize = messages.iter().map(|m| m.content.len()).sum();
    let mut out = Vec::with_capacity(len / 4 + 8 * messages.len() + 4);
    for m in messages {
        out.push(IM_START);
        tokenize_into(&m.role, &mut out);
        tokenize_into("\n", &mut out);
        tokenize_into(&m.content, &mut out);
        out.push(IM_END);
        tokenize_into("\n", &mut out);
    }
    if add_generation_prompt {
        out.push(IM_START);
        tokenize_into("assistant\n", &mut out);
    }
    out
}

/// The text of generated output token number `index` of a request seeded with `seed`.
pub(crate) fn output_word(seed: u64, index: u64) -> &'static str {
    let h = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(index.wrapping_mul(0xBF58_476D_1CE4_E5B9));
    OUTPUT_WORDS[((h >> 32) as usize) % OUTPUT_WORDS.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_at_six_bytes_and_keep_one_leading_space() {
        assert_eq!(tokenize("hello").len(), 1);
        assert_eq!(tokenize(" hello world").len(), 2);
        assert_eq!(tokenize("abcdefghij").len(), 2);
        assert_eq!(tokenize("a, b.").len(), 4);
        assert_eq!(tokenize("  x").len(), 2);
        assert_eq!(tokenize("héllo").len(), 3);
        assert!(tokenize("").is_empty());
    }

    #[test]
    fn equal_text_gives_equal_ids() {
        assert_eq!(tokenize(" the cache"), tokenize(" the cache"));
        assert_ne!(tokenize(" the"), tokenize(" cache"));
    }

    #[test]
    fn output_words_are_single_tokens() {
        for w in OUTPUT_WORDS {
            assert_eq!(tokenize(w).len(), 1, "{w:?}");
        }
        let text: String = (0..50).map(|i| output_word(7, i)).collect();
        assert_eq!(tokenize(&text).len(), 50);
    }

    #[test]
    fn chat_template_adds_markers() {
        let m = [ChatMessage { role: "user".into(), content: "hi there".into() }];
        let chat = tokenize_chat(&m, true);
        // <|im_start|> user \n hi ␣there <|im_end|> \n <|im_start|> assist ant \n
        assert_eq!(chat.len(), 11);
        assert_eq!(chat[0], IM_START);
    }
}
