//! Deterministic English-like filler text for prompts of a chosen size, distinct per seed from the first words.
//!
//! The text is a stream of sentences built from a fixed vocabulary of common words: capitalised
//! starts, periods, occasional commas and paragraph breaks. The stream for a seed is fixed, so any
//! shorter text is a prefix of a longer one for the same seed. The first eight words spell the
//! (bijectively mixed) seed in base `CONTENT.len()`, so two different seeds are guaranteed to
//! differ within their first eight words; in practice they differ from the first word on.

use std::fmt;

/// Largest text [`filler_text`] builds, in bytes; larger requests are clamped.
pub(crate) const MAX_FILLER_CHARS: usize = 1 << 30;

/// Words that glue sentences together; drawn more often than content words.
const FUNCTION: &[&str] = &[
    "the", "of", "and", "to", "a", "in", "is", "that", "for", "it", "as", "with", "was", "on", "by", "at", "from",
    "this", "be", "are", "or", "an", "but", "not", "which", "have", "has", "had", "its", "their", "they", "we", "you",
    "he", "she", "his", "her", "all", "will", "can", "would", "there", "been", "more", "some", "into", "than", "then",
    "when", "so", "if", "our", "about", "over", "only", "also", "each", "most", "such", "very",
];

/// Nouns, verbs, adjectives and adverbs, each at most eight lowercase ASCII letters, all distinct.
const CONTENT: &[&str] = &[
    "time", "year", "people", "way", "day", "man", "woman", "child", "world", "life", "hand", "part", "place", "case",
    "week", "number", "group", "problem", "fact", "home", "water", "room", "mother", "area", "money", "story", "month",
    "study", "book", "eye", "job", "word", "issue", "side", "kind", "head", "house", "service", "friend", "father",
    "power", "hour", "game", "line", "end", "member", "law", "car", "city", "name", "team", "minute", "idea", "body",
    "back", "parent", "face", "level", "office", "door", "health", "person", "art", "history", "party", "result",
    "change", "morning", "reason", "research", "girl", "moment", "air", "teacher", "force", "order", "river", "garden",
    "window", "market", "village", "mountain", "forest", "island", "harbor", "bridge", "road", "station", "letter",
    "paper", "table", "chair", "lamp", "clock", "bread", "apple", "stone", "cloud", "rain", "summer", "winter",
    "autumn", "spring", "light", "shadow", "music", "song", "dance", "voice", "school", "lesson", "answer", "question",
    "journey", "path", "field", "farm", "horse", "bird", "fish", "tree", "flower", "grass", "sea", "shore", "wind",
    "fire", "night", "evening", "dream", "memory", "plan", "map", "signal", "engine", "machine", "tool", "wheel",
    "boat", "ship", "train", "ticket", "coffee", "tea", "kitchen", "dinner", "meal", "salt", "sugar", "honey", "milk",
    "cheese", "shop", "street", "corner", "square", "tower", "wall", "roof", "floor", "make", "take", "see", "know",
    "think", "come", "give", "find", "tell", "ask", "work", "seem", "feel", "try", "leave", "call", "keep", "hold",
    "bring", "begin", "show", "hear", "play", "run", "move", "live", "believe", "happen", "write", "provide", "sit",
    "stand", "lose", "pay", "meet", "include", "continue", "learn", "lead", "grow", "open", "walk", "win", "offer",
    "remember", "consider", "appear", "buy", "wait", "serve", "send", "expect", "build", "stay", "fall", "reach",
    "remain", "suggest", "raise", "pass", "sell", "decide", "return", "explain", "hope", "develop", "carry", "break",
    "receive", "agree", "support", "produce", "eat", "cover", "catch", "draw", "choose", "watch", "follow", "create",
    "speak", "read", "spend", "notice", "gather", "wander", "repair", "measure", "paint", "cook", "travel", "listen",
    "good", "new", "first", "last", "long", "great", "little", "own", "other", "old", "big", "high", "small", "large",
    "next", "early", "young", "few", "public", "same", "able", "late", "hard", "major", "better", "clear", "whole",
    "free", "easy", "strong", "true", "full", "special", "simple", "quiet", "bright", "warm", "cold", "gentle",
    "careful", "sudden", "distant", "narrow", "wide", "deep", "quick", "slow", "green", "blue", "red", "golden",
    "silver", "ancient", "modern", "busy", "calm", "pleasant", "honest", "curious", "patient", "steady", "fresh",
    "plain", "rough", "smooth", "heavy", "soft", "often", "always", "never", "slowly", "quickly", "again", "almost",
    "perhaps", "nearly", "already", "together", "soon", "today", "later", "rather", "quite", "still", "even", "just",
    "here", "letters", "courage", "harvest", "lantern", "meadow", "valley", "canyon", "desert", "glacier", "compass",
    "sailor", "painter", "farmer", "doctor", "student", "writer", "builder", "captain", "neighbor", "stranger",
];

/// Words of the opening that spell the seed in base `CONTENT.len()`.
const SEED_WORDS: u8 = 8;

/// One word of filler with the separator before it and the punctuation after it.
///
/// Concatenating the words of a [`FillerCursor`] in order gives the filler text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Word {
    /// Whitespace before the word: empty for the very first word, else a space or a paragraph break.
    pub sep: &'static str,
    /// The bare lowercase word.
    pub word: &'static str,
    /// The word starts a sentence and is written with a capital first letter.
    pub capital: bool,
    /// Punctuation after the word: empty, `","` or `"."`.
    pub punct: &'static str,
}

impl Word {
    /// Length of the word with its separator and punctuation, in bytes (the text is ASCII).
    pub(crate) fn byte_len(&self) -> usize {
        self.sep.len() + self.word.len() + self.punct.len()
    }

    /// Appends the word, with its separator and punctuation, to `out`.
    pub(crate) fn push_to(&self, out: &mut String) {
        out.push_str(self.sep);
        let mut chars = self.word.chars();
        if self.capital
            && let Some(first) = chars.next()
        {
            out.push(first.to_ascii_uppercase());
        }
        out.push_str(chars.as_str());
        out.push_str(self.punct);
    }
}

impl fmt::Display for Word {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::with_capacity(self.byte_len());
        self.push_to(&mut s);
        f.write_str(&s)
    }
}

/// Endless, deterministic stream of filler [`Word`]s for one seed.
#[derive(Debug, Clone)]
pub(crate) struct FillerCursor {
    /// SplitMix64 state driving every choice after the seed words.
    rng: u64,
    /// Remaining base-`CONTENT.len()` digits of the mixed seed.
    digits: u64,
    /// Seed words still to emit.
    digits_left: u8,
    /// Words left in the current sentence (0: start a new one).
    words_left: u32,
    /// Sentences left in the current paragraph, the current one included.
    sentences_left: u32,
    /// At least one word was emitted.
    started: bool,
    /// The previous word carried a comma.
    comma: bool,
    /// The previous bare word, to avoid immediate repeats.
    last: &'static str,
}

impl FillerCursor {
    /// Starts the stream for `seed` at its first word.
    pub(crate) fn new(seed: u64) -> Self {
        Self {
            rng: mix(seed ^ 0x5DEE_CE66_D1CE_4E5B),
            digits: mix(seed),
            digits_left: SEED_WORDS,
            words_left: 0,
            sentences_left: 0,
            started: false,
            comma: false,
            last: "",
        }
    }

    /// Appends the next word, with its separator and punctuation, to `out`; returns the bytes appended.
    pub(crate) fn push_word(&mut self, out: &mut String) -> usize {
        let word = self.next_word();
        word.push_to(out);
        word.byte_len()
    }

    /// Appends whole words to `out` until it holds at least `min_len` bytes.
    pub(crate) fn fill_to(&mut self, out: &mut String, min_len: usize) {
        while out.len() < min_len {
            self.push_word(out);
        }
    }

    /// Produces the next word of the stream.
    pub(crate) fn next_word(&mut self) -> Word {
        let (sep, capital) = if self.words_left == 0 { (self.start_sentence(), true) } else { (" ", false) };
        let word = self.pick();
        self.words_left = self.words_left.saturating_sub(1);
        let punct = if self.words_left == 0 {
            "."
        } else if !capital && !self.comma && self.words_left >= 2 && self.below(9) == 0 {
            ","
        } else {
            ""
        };
        self.comma = punct == ",";
        self.started = true;
        Word { sep, word, capital, punct }
    }

    /// Opens a sentence (and a paragraph when the current one is done); returns the separator.
    fn start_sentence(&mut self) -> &'static str {
        self.words_left = 5 + self.below(12) as u32;
        if !self.started {
            self.sentences_left = 2 + self.below(5) as u32;
            ""
        } else if self.sentences_left <= 1 {
            self.sentences_left = 2 + self.below(5) as u32;
            if self.below(3) == 0 { "\n" } else { "\n\n" }
        } else {
            self.sentences_left -= 1;
            " "
        }
    }

    /// Picks the next bare word: a seed digit first, then function and content words at random.
    fn pick(&mut self) -> &'static str {
        let word = if self.digits_left > 0 {
            self.digits_left -= 1;
            let base = CONTENT.len() as u64;
            let digit = self.digits % base;
            self.digits /= base;
            pick_from(CONTENT, digit as usize)
        } else {
            let list = if self.below(5) < 2 { FUNCTION } else { CONTENT };
            let mut i = self.below(list.len());
            if pick_from(list, i) == self.last {
                i += 1;
            }
            pick_from(list, i)
        };
        self.last = word;
        word
    }

    /// Uniform-ish draw in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: usize) -> usize {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let x = mix(self.rng) >> 32;
        ((x * n as u64) >> 32) as usize
    }
}

impl Iterator for FillerCursor {
    type Item = Word;

    /// Never returns `None`: the stream is endless.
    fn next(&mut self) -> Option<Word> {
        Some(self.next_word())
    }
}

/// Returns the endless word stream for `seed`; take words from it until the text is long enough.
#[cfg(test)]
pub(crate) fn words(seed: u64) -> FillerCursor {
    FillerCursor::new(seed)
}

/// Returns the shortest whole-word prefix of the stream for `seed` holding at least `min_chars`
/// bytes (pure ASCII, so bytes are chars); `min_chars` is clamped to [`MAX_FILLER_CHARS`].
pub(crate) fn filler_text(seed: u64, min_chars: usize) -> String {
    let min_chars = min_chars.min(MAX_FILLER_CHARS);
    let mut out = String::with_capacity(min_chars.saturating_add(24));
    FillerCursor::new(seed).fill_to(&mut out, min_chars);
    out
}

/// The filler stream of one seed, generated as far as needed, with its whole-word boundaries.
///
/// A boundary is a non-empty length at which the text ends right after a word (and its punctuation);
/// the prefix up to a boundary `b` equals `filler_text(seed, b)`.
#[derive(Debug, Clone)]
pub(crate) struct FillerBuffer {
    cursor: FillerCursor,
    buf: String,
}

impl FillerBuffer {
    /// An empty buffer over the stream of `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        Self { cursor: FillerCursor::new(seed), buf: String::new() }
    }

    /// The first `len` bytes generated so far (all of them if fewer).
    pub(crate) fn prefix(&self, len: usize) -> &str {
        self.buf.get(..len).unwrap_or(&self.buf)
    }

    /// Generates whole words until the text is longer than `len` bytes (capped at [`MAX_FILLER_CHARS`]).
    pub(crate) fn ensure(&mut self, len: usize) {
        let len = len.min(MAX_FILLER_CHARS);
        while self.buf.len() <= len {
            self.cursor.push_word(&mut self.buf);
        }
    }

    /// Whether a text of `len` bytes, within what was generated, ends right after a word.
    pub(crate) fn is_boundary(&self, len: usize) -> bool {
        let b = self.buf.as_bytes();
        let space = |j: usize| b.get(j).is_some_and(u8::is_ascii_whitespace);
        len > 0 && len <= b.len() && !space(len - 1) && (len == b.len() || space(len))
    }

    /// The boundary nearest `len` bytes (the shorter one on ties), generating text as needed.
    pub(crate) fn nearest_boundary(&mut self, len: usize) -> usize {
        let len = len.clamp(1, MAX_FILLER_CHARS);
        self.ensure(len);
        let down = (1..=len).rev().find(|&i| self.is_boundary(i));
        let up = (len..=self.buf.len()).find(|&i| self.is_boundary(i));
        match (down, up) {
            (Some(a), Some(b)) if len - a <= b - len => a,
            (_, Some(b)) => b,
            (Some(a), None) => a,
            (None, None) => self.buf.len(),
        }
    }

    /// The first boundary longer than `len` bytes, generating text as needed.
    pub(crate) fn boundary_after(&mut self, len: usize) -> Option<usize> {
        let from = len.saturating_add(1);
        self.ensure(from);
        (from..=self.buf.len()).find(|&i| self.is_boundary(i))
    }

    /// The last boundary shorter than `len` bytes, if any.
    pub(crate) fn boundary_before(&self, len: usize) -> Option<usize> {
        (1..len.min(self.buf.len() + 1)).rev().find(|&i| self.is_boundary(i))
    }
}

/// Word `i` of `list`, wrapping around; the lists are never empty.
fn pick_from(list: &'static [&'static str], i: usize) -> &'static str {
    list.get(i % list.len().max(1)).copied().unwrap_or("the")
}

/// SplitMix64 finaliser: a bijection on `u64` with good avalanche.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
#[path = "filler_tests.rs"]
mod tests;
