//! Tests for the filler text generator: determinism, prefix property, seed separation, shape.

use super::*;
use proptest::prelude::*;
use std::collections::HashSet;

#[test]
fn vocabulary_is_short_distinct_lowercase_ascii() {
    for list in [FUNCTION, CONTENT] {
        let set: HashSet<_> = list.iter().collect();
        assert_eq!(set.len(), list.len(), "duplicate word");
        for w in list {
            assert!(!w.is_empty() && w.len() <= 8, "{w}");
            assert!(w.bytes().all(|b| b.is_ascii_lowercase()), "{w}");
        }
    }
    assert!(CONTENT.len() >= 300, "{}", CONTENT.len());
    // The seed words must be able to spell any u64.
    assert!((CONTENT.len() as f64).powi(i32::from(SEED_WORDS)) > u64::MAX as f64);
}

#[test]
fn zero_length_is_empty() {
    assert_eq!(filler_text(7, 0), "");
}

#[test]
fn text_looks_like_prose() {
    let text = filler_text(42, 20_000);
    assert!(text.is_ascii());
    assert!(text.chars().next().is_some_and(|c| c.is_ascii_uppercase()), "{}", &text[..40]);
    assert!(text.ends_with(|c: char| c.is_ascii_alphabetic() || c == '.' || c == ','));
    assert!(text.contains(". "));
    assert!(text.contains(", "));
    assert!(text.contains('\n'));
    assert!(!text.contains("  ") && !text.contains(" \n") && !text.contains("\n "));
    assert!(!text.contains(",.") && !text.contains(".,") && !text.contains(",,"));
    // Every sentence starts with a capital letter.
    for sentence in text.split(". ").skip(1) {
        assert!(sentence.starts_with(|c: char| c.is_ascii_uppercase()), "{sentence}");
    }
    let words = text.split_whitespace().count();
    let chars_per_word = text.len() as f64 / words as f64;
    assert!((4.5..8.0).contains(&chars_per_word), "{chars_per_word}");
}

#[test]
fn words_concatenate_to_filler_text() {
    let text = filler_text(3, 5_000);
    let mut built = String::new();
    for w in words(3) {
        if built.len() >= 5_000 {
            break;
        }
        built.push_str(&w.to_string());
    }
    assert_eq!(built, text);
}

#[test]
fn push_word_reports_its_length() {
    let mut cursor = FillerCursor::new(11);
    let mut out = String::new();
    for _ in 0..1000 {
        let before = out.len();
        let n = cursor.push_word(&mut out);
        assert!(n > 0);
        assert_eq!(out.len() - before, n);
    }
}

#[test]
fn neighbouring_seeds_differ_from_the_first_word() {
    let mut first_words = HashSet::new();
    for seed in 0..64u64 {
        let text = filler_text(seed, 200);
        first_words.insert(text.split_whitespace().next().unwrap_or("").to_ascii_lowercase());
        for other in seed + 1..64 {
            assert_ne!(text[..200], filler_text(other, 200)[..200], "{seed} vs {other}");
        }
    }
    assert!(first_words.len() > 50, "{}", first_words.len());
}

#[test]
fn large_text_is_fast_enough() {
    let start = std::time::Instant::now();
    let text = filler_text(1, 600 * 1024);
    assert!(text.len() >= 600 * 1024);
    // Generous: debug builds are far slower than release.
    assert!(start.elapsed().as_millis() < 2_000, "{:?}", start.elapsed());
}

/// The first eight bare words, lowercased.
fn seed_words(seed: u64) -> Vec<&'static str> {
    words(seed).take(usize::from(SEED_WORDS)).map(|w| w.word).collect()
}

proptest! {
    #[test]
    fn deterministic_and_prefix_stable(seed: u64, a in 0usize..20_000, b in 0usize..20_000) {
        let (short, long) = (a.min(b), a.max(b));
        let s = filler_text(seed, short);
        let l = filler_text(seed, long);
        prop_assert_eq!(&s, &filler_text(seed, short));
        prop_assert!(l.starts_with(&s));
        prop_assert!(s.len() >= short && s.len() < short + 16);
        prop_assert!(s.is_ascii());
    }

    #[test]
    fn different_seeds_differ_early(a: u64, b: u64) {
        prop_assume!(a != b);
        prop_assert_ne!(seed_words(a), seed_words(b));
        prop_assert_ne!(&filler_text(a, 200)[..200], &filler_text(b, 200)[..200]);
    }
}

#[test]
fn buffer_boundaries_are_filler_prefixes() {
    let mut buf = FillerBuffer::new(5);
    let mut b = buf.nearest_boundary(1);
    assert_eq!(buf.boundary_before(b), None);
    for _ in 0..500 {
        assert!(buf.is_boundary(b));
        assert_eq!(buf.prefix(b), filler_text(5, b));
        let next = buf.boundary_after(b).unwrap_or(0);
        assert!(next > b && buf.boundary_before(next) == Some(b));
        assert!((b + 1..next).all(|i| !buf.is_boundary(i)));
        b = next;
    }
    assert!(!buf.is_boundary(0));
}

proptest! {
    #[test]
    fn nearest_boundary_is_nearest(seed: u64, len in 0usize..5_000) {
        let mut buf = FillerBuffer::new(seed);
        let b = buf.nearest_boundary(len);
        prop_assert!(buf.is_boundary(b));
        let len = len.max(1);
        let before = if buf.is_boundary(len) { Some(len) } else { buf.boundary_before(len) };
        let after = buf.boundary_after(len.saturating_sub(1));
        let best = [before, after].into_iter().flatten().map(|x| x.abs_diff(len)).min();
        prop_assert_eq!(Some(b.abs_diff(len)), best);
        prop_assert_eq!(buf.prefix(b), filler_text(seed, b));
    }
}
