//! Tests for prompt calibration against fake counters: linear, drifting, noisy and length-limited tokenizers.

use super::*;
use crate::load::filler::filler_text;
use proptest::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering};

const TARGETS: [u64; 10] = [0, 1, 10, 100, 1000, 4096, 16384, 32768, 65536, 131072];

/// Tokenizer-like count: a run of letters costs ceil(len / 4) tokens, a punctuation mark 1, a run of
/// newlines 1, spaces nothing.
fn word_tokens(text: &str) -> u64 {
    let (mut tokens, mut letters, mut newline) = (0u64, 0u64, false);
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() {
            letters += 1;
            newline = false;
            continue;
        }
        tokens += letters.div_ceil(4);
        letters = 0;
        if b == b'\n' {
            tokens += u64::from(!newline);
            newline = true;
        } else {
            newline = false;
            tokens += u64::from(!b.is_ascii_whitespace());
        }
    }
    tokens + letters.div_ceil(4)
}

/// Like [`word_tokens`], with a ratio that grows with length (1.5× at 1 MiB).
fn drifting_tokens(text: &str) -> u64 {
    (word_tokens(text) as f64 * (1.0 + text.len() as f64 / 2_097_152.0)).round() as u64
}

/// A counter wrapping a counting function, with overhead, an optional length limit and a call count.
struct Fake<F> {
    f: F,
    overhead: u64,
    /// Texts longer than this many bytes are refused.
    limit: Option<usize>,
    /// Calls to fail regardless of the text, counted from the first.
    fail_first: u32,
    /// One more call (0-based) to fail regardless of the text.
    fail_at: Option<u32>,
    /// From this call (0-based) on, no answer comes in time.
    silent_from: Option<u32>,
    calls: AtomicU32,
}

impl<F: Fn(&str) -> u64 + Sync> Fake<F> {
    fn new(f: F, overhead: u64) -> Self {
        Self { f, overhead, limit: None, fail_first: 0, fail_at: None, silent_from: None, calls: AtomicU32::new(0) }
    }

    fn calls(&self) -> u32 {
        self.calls.load(Ordering::Relaxed)
    }

    fn truth(&self, text: &str) -> u64 {
        self.overhead + (self.f)(text)
    }
}

impl<F: Fn(&str) -> u64 + Sync> TokenCounter for Fake<F> {
    fn count(&self, text: &str) -> impl Future<Output = Result<u64, CountError>> + Send {
        let call = self.calls.fetch_add(1, Ordering::Relaxed);
        let result = if self.silent_from.is_some_and(|s| call >= s) {
            Err(CountError::NoAnswer("no answer from the counter within 2 s".into()))
        } else if call < self.fail_first || self.fail_at == Some(call) {
            Err(CountError::Failed("connection reset".into()))
        } else if self.limit.is_some_and(|l| text.len() > l) {
            Err(CountError::TooLong(format!("{} chars over the limit", text.len())))
        } else {
            Ok(self.truth(text))
        };
        std::future::ready(result)
    }
}

fn opts(overhead: u64) -> CalibrateOptions {
    CalibrateOptions { overhead_tokens: overhead, ..CalibrateOptions::default() }
}

fn block_on<F: Future>(f: F) -> F::Output {
    match tokio::runtime::Builder::new_current_thread().build() {
        Ok(rt) => rt.block_on(f),
        Err(e) => panic!("runtime: {e}"),
    }
}

/// Checks a converged result: within tolerance, counted honestly, a prefix of the seed's stream.
fn check_converged<F: Fn(&str) -> u64 + Sync>(fake: &Fake<F>, r: &Calibrated, seed: u64, o: &CalibrateOptions) {
    let t = r.target_tokens;
    assert!(r.converged && !r.extrapolated, "{t}: {} tokens, {}", r.tokens, r.note);
    assert!(r.probes <= o.max_probes, "{} probes for {t}: {}", r.probes, r.note);
    assert!(r.tokens.abs_diff(t) as f64 <= (o.tolerance * t as f64).max(1.0), "{} for {t}", r.tokens);
    let truth = if r.text.is_empty() { o.overhead_tokens } else { fake.truth(&r.text) };
    assert_eq!(truth, r.tokens);
    assert!(filler_text(seed, r.text.len()).starts_with(&r.text));
}

fn run_all<F: Fn(&str) -> u64 + Sync>(fake: &Fake<F>, seed: u64, o: &CalibrateOptions) {
    for &t in &TARGETS {
        let before = fake.calls();
        let r = block_on(calibrate(fake, t, seed, o)).expect("calibrates");
        assert_eq!(fake.calls() - before, r.probes);
        if t <= o.overhead_tokens {
            assert_eq!((r.text.as_str(), r.tokens, r.probes), ("", o.overhead_tokens, 0));
        } else {
            check_converged(fake, &r, seed, o);
        }
    }
}

#[test]
fn word_tokenizer_every_target_fresh() {
    for (seed, overhead) in [(0, 0), (1, 37), (7, 5), (123_456_789, 0)] {
        run_all(&Fake::new(word_tokens, overhead), seed, &opts(overhead));
    }
}

#[test]
fn drifting_tokenizer_every_target_fresh() {
    for (seed, overhead) in [(0, 0), (2, 21)] {
        run_all(&Fake::new(drifting_tokens, overhead), seed, &opts(overhead));
    }
}

#[test]
fn many_reuses_earlier_counts() {
    for f in [word_tokens as fn(&str) -> u64, drifting_tokens] {
        let fake = Fake::new(f, 12);
        let o = opts(12);
        let results = block_on(calibrate_many(&fake, &TARGETS, 9, &o));
        assert_eq!(results.len(), TARGETS.len());
        let mut total = 0;
        for (r, &t) in results.iter().zip(&TARGETS) {
            let r = r.as_ref().expect("calibrates");
            assert_eq!(r.target_tokens, t);
            total += r.probes;
            if t > 12 {
                check_converged(&fake, r, 9, &o);
            }
            if t >= 16384 {
                assert!(r.probes <= 2, "{t}: {}", r.note);
            }
        }
        assert_eq!(total, fake.calls());
    }
}

#[test]
fn many_keeps_input_order_and_handles_duplicates() {
    let fake = Fake::new(word_tokens, 0);
    let targets = [32768, 100, 32768, 0, 4096];
    let results = block_on(calibrate_many(&fake, &targets, 3, &opts(0)));
    let got: Vec<u64> = results.iter().map(|r| r.as_ref().map_or(0, |r| r.target_tokens)).collect();
    assert_eq!(got, targets);
    let ok: Vec<&Calibrated> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(ok.len(), targets.len());
    assert_eq!((&ok[0].text, ok[0].tokens), (&ok[2].text, ok[2].tokens));
    assert!(ok[0].probes == 0 || ok[2].probes == 0, "{} {}", ok[0].probes, ok[2].probes);
}

#[test]
fn zero_target_costs_no_count() {
    let fake = Fake::new(word_tokens, 9);
    let r = block_on(calibrate(&fake, 0, 1, &opts(9))).expect("calibrates");
    assert_eq!((r.text.as_str(), r.tokens, r.probes, r.converged, r.extrapolated), ("", 9, 0, true, false));
    assert_eq!(fake.calls(), 0);
}

#[test]
fn too_long_texts_are_extrapolated_and_flagged() {
    // Extrapolation is linear: with a ratio drifting this strongly, 4x past the limit misses by ~17%.
    for (f, slack) in [(word_tokens as fn(&str) -> u64, 0.01), (drifting_tokens, 0.2)] {
        let mut fake = Fake::new(f, 30);
        fake.limit = Some(100_000);
        let o = opts(30);
        let results = block_on(calibrate_many(&fake, &TARGETS, 4, &o));
        for (r, &t) in results.iter().zip(&TARGETS) {
            let r = r.as_ref().expect("a prompt even when too long");
            if r.text.len() <= 100_000 && t > 30 {
                check_converged(&fake, r, 4, &o);
                continue;
            }
            if t <= 30 {
                continue;
            }
            assert!(r.extrapolated && !r.converged, "{t}: {}", r.note);
            assert!(r.note.contains("too long"), "{}", r.note);
            let truth = fake.truth(&r.text);
            assert!(truth.abs_diff(t) as f64 <= slack * t as f64, "{t}: truth {truth}");
            assert!(truth.abs_diff(r.tokens) as f64 <= slack * t as f64, "{t}: estimate {}", r.tokens);
            assert!(filler_text(4, r.text.len()).starts_with(&r.text));
        }
        // 32k tokens is already over the limit; after the first refusal the rest cost no probe.
        assert!(results[9].as_ref().is_ok_and(|r| r.probes == 0));
    }
}

#[test]
fn single_large_target_over_the_limit_extrapolates() {
    let mut fake = Fake::new(word_tokens, 0);
    fake.limit = Some(50_000);
    let r = block_on(calibrate(&fake, 131072, 8, &opts(0))).expect("extrapolates");
    assert!(r.extrapolated && r.probes <= 3, "{r:?}");
    assert!(fake.truth(&r.text).abs_diff(131072) < 2600);
}

#[test]
fn tiny_counter_limit_shrinks_the_sample() {
    let mut fake = Fake::new(word_tokens, 0);
    fake.limit = Some(1500);
    let r = block_on(calibrate(&fake, 65536, 8, &opts(0))).expect("extrapolates");
    assert!(r.extrapolated, "{}", r.note);
    assert!(fake.truth(&r.text).abs_diff(65536) < 3300);
}

#[test]
fn transient_failure_is_survived() {
    let mut fake = Fake::new(word_tokens, 0);
    fake.fail_first = 1;
    let r = block_on(calibrate(&fake, 2000, 5, &opts(0))).expect("recovers");
    check_converged(&fake, &r, 5, &opts(0));
}

#[test]
fn transient_failure_mid_sweep_does_not_stunt_later_targets() {
    for fail_at in 0..6 {
        let mut fake = Fake::new(word_tokens, 0);
        fake.fail_at = Some(fail_at);
        let targets = [1000, 4096, 16384, 65536, 131072];
        for r in block_on(calibrate_many(&fake, &targets, 2, &opts(0))) {
            let r = r.expect("calibrates");
            check_converged(&fake, &r, 2, &opts(0));
        }
    }
}

#[test]
fn no_successful_count_is_an_error() {
    let mut fake = Fake::new(word_tokens, 0);
    fake.fail_first = u32::MAX;
    let err = block_on(calibrate(&fake, 4096, 5, &opts(0))).expect_err("nothing counted");
    let CalibrateError::NoCount { target, probes, reason } = err else { panic!("{err}") };
    assert_eq!(target, 4096);
    assert!((1..=8).contains(&probes) && probes == fake.calls());
    assert!(reason.contains("connection reset"), "{reason}");
    let none = CalibrateOptions { max_probes: 0, ..opts(0) };
    assert!(block_on(calibrate(&Fake::new(word_tokens, 0), 10, 0, &none)).is_err());
}

#[test]
fn an_unanswered_count_ends_the_calibration_of_every_target() {
    let mut fake = Fake::new(word_tokens, 0);
    fake.silent_from = Some(0);
    let results = block_on(calibrate_many(&fake, &[0, 1000, 4096, 16384], 5, &opts(0)));
    assert_eq!(fake.calls(), 1, "one unanswered probe, then no more");
    assert!(results[0].is_ok(), "an empty prompt needs no count");
    for r in &results[1..] {
        assert_eq!(r, &Err(CalibrateError::NoAnswer("no answer from the counter within 2 s".into())));
    }
}

#[test]
fn odd_options_do_not_panic() {
    let fake = Fake::new(word_tokens, 0);
    for tolerance in [f64::NAN, -1.0, f64::INFINITY, 0.0, 0.5] {
        let o = CalibrateOptions { tolerance, max_probes: 8, overhead_tokens: 0 };
        let r = block_on(calibrate(&fake, 5000, 0, &o)).expect("calibrates");
        assert!(r.probes <= 8);
    }
    let o = CalibrateOptions { tolerance: 0.0, max_probes: 1, overhead_tokens: u64::MAX };
    assert!(block_on(calibrate(&fake, u64::MAX, 0, &o)).is_ok_and(|r| r.text.is_empty()));
    let o = CalibrateOptions { max_probes: 2, ..opts(0) };
    let r = block_on(calibrate(&fake, 1 << 40, 0, &o)).expect("best effort");
    assert!(!r.converged && r.text.len() <= MAX_TEXT_CHARS + 16);
}

#[test]
fn noisy_tokenizer_stays_within_budget() {
    let noisy = |t: &str| word_tokens(t) + xxhash_rust::xxh64::xxh64(t.as_bytes(), 0) % 4;
    let fake = Fake::new(noisy, 3);
    for r in block_on(calibrate_many(&fake, &TARGETS, 6, &opts(3))) {
        let r = r.expect("calibrates");
        assert!(r.probes <= 8);
        if r.converged && !r.text.is_empty() {
            assert_eq!(fake.truth(&r.text), r.tokens);
        }
    }
}

#[test]
fn future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let fake = Fake::new(word_tokens, 0);
    let o = opts(0);
    assert_send(&calibrate(&fake, 10, 0, &o));
    assert_send(&calibrate_many(&fake, &[10], 0, &o));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn linear_tokenizers_converge(
        chars_per_token in 2.5f64..6.0,
        overhead in 0u64..300,
        target in 200u64..150_000,
        seed: u64,
    ) {
        let fake = Fake::new(move |t: &str| (t.len() as f64 / chars_per_token).ceil() as u64, overhead);
        let o = opts(overhead);
        let r = block_on(calibrate(&fake, target, seed, &o)).expect("calibrates");
        if target > overhead {
            check_converged(&fake, &r, seed, &o);
        }
    }

    #[test]
    fn word_tokenizer_converges(target in 1u64..40_000, overhead in 0u64..50, seed: u64) {
        let fake = Fake::new(word_tokens, overhead);
        let o = opts(overhead);
        let r = block_on(calibrate(&fake, target, seed, &o)).expect("calibrates");
        if target > overhead {
            check_converged(&fake, &r, seed, &o);
        }
    }
}
