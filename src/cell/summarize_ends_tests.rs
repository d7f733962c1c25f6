//! A request that ended before the window opened adds the same to an attempt's statistics
//! with only its first and last marks as with its whole timeline (what a decode attempt keeps
//! of the requests that end during its warmup, src/experiment/decode/attempt.rs).

use super::*;
use crate::cell::attempt_loop::keep_timeline_ends;
use crate::load::sample::Mark;
use crate::stats::Slo;
use proptest::prelude::*;

/// A request sent at `start_ms` whose marks are `gaps` (ms after the previous, tokens).
fn sample(origin: Instant, start_ms: u64, gaps: &[(u64, u64)], failed: bool) -> RequestSample {
    let mut s = RequestSample::new(3, origin + Duration::from_millis(start_ms));
    let (mut at, mut tokens) = (0u64, 0u64);
    s.marks = gaps
        .iter()
        .map(|&(ms, k)| {
            (at, tokens) = (at + ms, tokens + k);
            Mark { at_us: at * 1000, tokens }
        })
        .collect();
    s.output_tokens = tokens;
    s.token_source = TokenSource::OpenaiContinuousUsage;
    s.ended_at = s.sent_at + Duration::from_millis(at + 1);
    s.outcome = match failed {
        true => Outcome::Failed { kind: ErrorKind::StreamReset, detail: "reset".into() },
        false => Outcome::Completed(None),
    };
    s
}

proptest! {
    #[test]
    fn ends_only_changes_nothing_for_requests_ended_before_the_window(
        reqs in prop::collection::vec(
            (0u64..500, prop::collection::vec((0u64..40, 1u64..4), 0..60), any::<bool>()),
            1..12,
        ),
        open_after_ms in 1u64..200,
        window_ms in 1u64..5_000,
    ) {
        let o = Instant::now();
        let whole: Vec<RequestSample> = reqs.iter().map(|(at, g, f)| sample(o, *at, g, *f)).collect();
        let last_end = whole.iter().map(|s| s.ended_at).max().expect("one request at least");
        let start = last_end + Duration::from_millis(open_after_ms);
        let w = Window { start, end: start + Duration::from_millis(window_ms) };
        let slo = Slo { ttft: Some(Duration::from_millis(300)), tpot: Some(Duration::from_millis(20)), e2e: None };
        let fold = |samples: &[RequestSample]| {
            let mut sum = Summarizer::new(o).with_slo(slo);
            samples.iter().for_each(|s| sum.add(s, Some(&w), w.end));
            sum.finish(Some(w), 4)
        };
        let mut trimmed = whole.clone();
        trimmed.iter_mut().for_each(keep_timeline_ends);
        prop_assert_eq!(fold(&whole), fold(&trimmed));
    }
}
