//! The judging rules of `cell::goodput` on hand-made samples.

use super::*;
use crate::load::sample::{ErrorKind, Mark};

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// A stream sent at `sent` ms after `o`, first token after `ttft` ms, then one token every
/// `every` ms, `n` tokens in all, ended (by `outcome`) with its last token.
fn stream(o: Instant, sent: u64, ttft: u64, every: u64, n: u64, outcome: Outcome) -> RequestSample {
    let mut s = RequestSample::new(0, o + ms(sent));
    s.marks = (1..=n).map(|i| Mark { at_us: (ttft + (i - 1) * every) * 1000, tokens: i }).collect();
    s.output_tokens = n;
    s.ended_at = s.last_token_at().unwrap_or(s.sent_at);
    s.outcome = outcome;
    s
}

fn done() -> Outcome {
    Outcome::Completed(None)
}

fn slo(ttft: Option<u64>, tpot: Option<u64>, e2e: Option<u64>) -> Slo {
    Slo { ttft: ttft.map(ms), tpot: tpot.map(ms), e2e: e2e.map(ms) }
}

#[test]
fn a_completed_request_is_judged_on_every_bound() {
    let o = Instant::now();
    // TTFT 100 ms, 11 tokens 10 ms apart: TPOT 10 ms, E2E 200 ms.
    let s = stream(o, 0, 100, 10, 11, done());
    let end = o + ms(1000);
    assert_eq!(judge(&s, &slo(Some(100), Some(10), Some(200)), None, end), Some(true), "bounds are inclusive");
    assert_eq!(judge(&s, &slo(Some(99), None, None), None, end), Some(false));
    assert_eq!(judge(&s, &slo(None, Some(9), None), None, end), Some(false));
    assert_eq!(judge(&s, &slo(None, None, Some(199)), None, end), Some(false));
}

#[test]
fn a_completed_one_token_reply_has_no_tpot_and_fails_a_tpot_bound() {
    let o = Instant::now();
    let s = stream(o, 0, 100, 10, 1, done());
    let end = o + ms(1000);
    assert_eq!(judge(&s, &slo(Some(500), Some(50), None), None, end), Some(false));
    assert_eq!(judge(&s, &slo(Some(500), None, None), None, end), Some(true));
}

#[test]
fn a_cut_stream_is_judged_on_what_it_showed_by_the_window_end() {
    let o = Instant::now();
    let w = Window { start: o + ms(500), end: o + ms(1500) };
    // Sent in the warmup, first token at 300 ms, a token every 20 ms until cut at 2 s.
    let s = stream(o, 0, 300, 20, 86, Outcome::Cut);
    assert_eq!(judge(&s, &slo(Some(300), Some(20), None), Some(&w), w.end), Some(true));
    assert_eq!(judge(&s, &slo(Some(299), None, None), Some(&w), w.end), Some(false), "its TTFT counts");
    assert_eq!(judge(&s, &slo(None, Some(19), None), Some(&w), w.end), Some(false));
    // No E2EL bound applies to a stream the window cut: it is judged on the rest.
    assert_eq!(judge(&s, &slo(Some(300), None, Some(10)), Some(&w), w.end), Some(true));
    // Slow after the window: what came after the cutoff does not count.
    let mut late = s.clone();
    late.marks = late
        .marks
        .iter()
        .map(|m| if m.at_us > 1_500_000 { Mark { at_us: m.at_us + 60_000_000, ..m } } else { m })
        .collect();
    assert_eq!(judge(&late, &slo(None, Some(20), None), Some(&w), w.end), Some(true));
}

#[test]
fn a_stream_with_one_token_by_the_cutoff_is_judged_on_its_ttft_only() {
    let o = Instant::now();
    let w = Window { start: o, end: o + ms(1000) };
    let s = stream(o, 0, 900, 500, 3, Outcome::Cut);
    assert_eq!(judge(&s, &slo(Some(1000), Some(50), None), Some(&w), w.end), Some(true), "TPOT not yet known");
    assert_eq!(judge(&s, &slo(Some(800), Some(50), None), Some(&w), w.end), Some(false));
}

#[test]
fn a_request_waiting_for_its_first_token_fails_once_past_the_ttft_bound() {
    let o = Instant::now();
    let w = Window { start: o + ms(1000), end: o + ms(3000) };
    let waiting = stream(o, 0, 5000, 10, 10, Outcome::Cut);
    assert_eq!(judge(&waiting, &slo(Some(2000), None, None), Some(&w), w.end), Some(false), "waited 3 s");
    assert_eq!(judge(&waiting, &slo(Some(4000), None, None), Some(&w), w.end), None, "may still make it");
    assert_eq!(judge(&waiting, &slo(None, Some(50), None), Some(&w), w.end), None, "nothing to judge yet");
}

#[test]
fn requests_outside_the_window_are_not_judged() {
    let o = Instant::now();
    let w = Window { start: o + ms(1000), end: o + ms(2000) };
    let any = slo(Some(60_000), None, None);
    let ended_in_warmup = stream(o, 0, 100, 10, 5, done());
    assert_eq!(judge(&ended_in_warmup, &any, Some(&w), w.end), None);
    let sent_after = stream(o, 2000, 100, 10, 5, done());
    assert_eq!(judge(&sent_after, &any, Some(&w), w.end), None);
    let completed_inside = stream(o, 900, 100, 10, 5, done());
    assert_eq!(judge(&completed_inside, &any, Some(&w), w.end), Some(true));
}

#[test]
fn failures_by_the_cutoff_are_not_good_and_later_ones_are_judged_on_what_they_showed() {
    let o = Instant::now();
    let w = Window { start: o, end: o + ms(1000) };
    let failed = Outcome::Failed { kind: ErrorKind::StreamReset, detail: "reset".into() };
    let early = stream(o, 0, 100, 10, 5, failed.clone());
    let any = slo(Some(60_000), None, None);
    assert_eq!(judge(&early, &any, Some(&w), w.end), Some(false));
    let mut late = stream(o, 0, 100, 10, 5, failed);
    late.ended_at = o + ms(1200);
    assert_eq!(judge(&late, &any, Some(&w), w.end), Some(true));
    let refused = stream(o, 0, 0, 0, 0, Outcome::Failed { kind: ErrorKind::ContextOverflow, detail: "x".into() });
    assert_eq!(judge(&refused, &any, None, o + ms(10)), Some(false), "a burst judges every request");
}

#[test]
fn the_tally_counts_judged_requests_and_rates_over_the_span() {
    let mut t = GoodputTally::default();
    [Some(true), Some(false), None, Some(true)].into_iter().for_each(|v| t.add(v));
    assert_eq!((t.good, t.judged), (2, 3));
    let g = t.finish(4.0);
    assert_eq!((g.good, g.judged, g.rps), (2, 3, 0.5));
}
