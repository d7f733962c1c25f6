//! Tests of the context-length fit rule.

use super::*;

const LEN: Option<u64> = Some(131_072);
const SUSTAINED: Wanted = Wanted::Sustained { floor: 4096 };

#[test]
fn a_sustained_stream_asks_for_what_the_context_leaves() {
    assert_eq!(fit(LEN, 16_384, SUSTAINED), Fit::Fits(131_072 - 16_384 - MARGIN));
    assert_eq!(fit(Some(10_000_000), 0, SUSTAINED), Fit::Fits(1_000_000), "capped");
    assert_eq!(fit(None, 10, SUSTAINED), Fit::Fits(65_536), "unknown length");
    assert_eq!(fit(None, 10, Wanted::Sustained { floor: 2_000_000 }), Fit::Fits(2_000_000), "the floor wins");
    let huge_floor = Wanted::Sustained { floor: u64::MAX };
    assert_eq!(
        fit(Some(u64::MAX), 0, huge_floor),
        Fit::Shortened { to: u64::MAX - MARGIN, floor: u64::MAX },
        "no overflow"
    );
}

#[test]
fn a_sustained_stream_short_of_its_floor_is_shortened_then_skipped() {
    // 130,000 + 64 leaves 1,008 of the 4,096 floor: shortened.
    assert_eq!(fit(LEN, 130_000, SUSTAINED), Fit::Shortened { to: 1_008, floor: 4096 });
    assert_eq!(fit(LEN, 131_072 - MARGIN - MIN_SUSTAINED_OUTPUT, SUSTAINED).max_tokens(), MIN_SUSTAINED_OUTPUT);
    // The 128k row of a 128k model (the seed's `0.0 (Ne)` row): no room at all.
    assert_eq!(fit(LEN, 131_072, SUSTAINED), Fit::TooLong { fewest: MIN_SUSTAINED_OUTPUT, deficit: 128 });
    assert_eq!(fit(LEN, 1 << 30, SUSTAINED), Fit::TooLong { fewest: 64, deficit: (1 << 30) + 128 - 131_072 });
}

#[test]
fn a_fixed_output_is_never_shortened() {
    assert_eq!(fit(LEN, 100_000, Wanted::Fixed(4096)), Fit::Fits(4096));
    assert_eq!(fit(LEN, 127_000, Wanted::Fixed(4096)), Fit::TooLong { fewest: 4096, deficit: 88 });
    assert_eq!(fit(None, 1 << 40, Wanted::Fixed(4096)), Fit::Fits(4096));
}

#[test]
fn the_skip_reason_names_the_output_and_the_deficit() {
    let r = skip_reason(131_072, LEN, SUSTAINED).unwrap();
    assert_eq!(r.kind, crate::report::skip::SkipKind::ContextLength);
    assert_eq!(
        r.reason,
        "a prompt of 128k tokens plus a stream of at least 64 tokens and a 64-token template margin exceed max_model_len 131072; deficit 128 tokens"
    );
    let r = skip_reason(127_000, LEN, Wanted::Fixed(4096)).unwrap().reason;
    assert!(r.contains("plus 4096 output tokens") && r.ends_with("deficit 88 tokens"), "{r}");
    assert_eq!(skip_reason(130_000, LEN, SUSTAINED), None, "shortened, not skipped");
    assert_eq!(skip_reason(1 << 30, None, SUSTAINED), None, "unknown length: runs");
}

#[test]
fn the_note_names_the_shortened_contexts_only() {
    let note = shortened_note(&[0, 130_000, 131_072], LEN, SUSTAINED).unwrap();
    assert!(note.contains("--ctx 126.95k (1008 tokens)") || note.contains("(1008 tokens)"), "{note}");
    assert!(!note.contains("128k"), "the skipped context is not shortened: {note}");
    assert_eq!(shortened_note(&[0, 16_384], LEN, SUSTAINED), None);
    assert_eq!(shortened_note(&[130_000], LEN, Wanted::Fixed(4096)), None);
}
