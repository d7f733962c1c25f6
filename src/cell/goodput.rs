//! Judging requests against the session's SLO (pure): which requests of an attempt are judged,
//! on which of their figures, and the running tally (docs/reports.md §6).

use super::sample_window::Window;
use crate::load::sample::{Outcome, RequestSample};
use crate::report::goodput::Goodput;
use crate::stats::{Slo, tpot};
use std::time::Duration;
use tokio::time::Instant;

/// What a request showed by `cutoff` (the window end, or the end of a burst).
struct Shown {
    ttft: Option<Duration>,
    tpot: Option<Duration>,
    /// Tokens received by the cutoff.
    tokens: u64,
    /// The server completed it by the cutoff.
    completed: bool,
}

fn shown(s: &RequestSample, cutoff: Instant) -> Shown {
    let completed = matches!(s.outcome, Outcome::Completed(_)) && s.ended_at <= cutoff;
    let first = s.first_token_at().filter(|t| *t < cutoff);
    let ttft = first.and(s.ttft());
    let last = s.marks.iter().take_while(|m| s.mark_at(m) < cutoff).last();
    let tokens = last.map_or(0, |m| m.tokens);
    let tpot = match (completed, ttft, first, last) {
        // vLLM's definition over the whole request.
        (true, Some(t), _, _) => tpot(s.e2e(), t, s.output_tokens),
        // A stream still running at the cutoff: over the tokens it showed so far.
        (false, _, Some(f), Some(m)) if m.tokens >= 2 => {
            s.mark_at(&m).saturating_duration_since(f).checked_div(u32::try_from(m.tokens - 1).unwrap_or(u32::MAX))
        }
        _ => None,
    };
    Shown { ttft, tpot, tokens, completed }
}

/// The verdict on one request: `Some(true)` good, `Some(false)` not good, `None` not judged.
///
/// With a `window` (sustained decode) a request is judged when it was sent before the window
/// closed and did not end before it opened; without one (a burst) every request is. Then:
/// a failure by the cutoff is not good; a request without a first token by the cutoff is not
/// good once it has waited longer than the TTFT bound, and not judged before that; otherwise
/// the TTFT bound checks its TTFT, the TPOT bound its TPOT (the whole request's when it
/// completed by the cutoff, else over the tokens it showed, not checked below two tokens,
/// while a completed request without a TPOT fails it), and the E2EL bound only judges
/// requests completed by the cutoff.
pub(crate) fn judge(s: &RequestSample, slo: &Slo, window: Option<&Window>, cutoff: Instant) -> Option<bool> {
    if let Some(w) = window
        && (s.sent_at >= w.end || s.ended_at < w.start)
    {
        return None;
    }
    if matches!(s.outcome, Outcome::Failed { .. }) && s.ended_at <= cutoff {
        return Some(false);
    }
    let sh = shown(s, cutoff);
    let Some(ttft) = sh.ttft else {
        if sh.completed {
            return Some(slo.is_met(None, None, Some(s.e2e())));
        }
        let waited = cutoff.saturating_duration_since(s.start());
        return slo.ttft.is_some_and(|b| waited > b).then_some(false);
    };
    let within = |bound: Option<Duration>, v: Option<Duration>| bound.is_none_or(|b| v.is_some_and(|v| v <= b));
    let tpot_ok = match sh.completed || sh.tokens >= 2 {
        true => within(slo.tpot, sh.tpot),
        false => true,
    };
    let e2e_ok = !sh.completed || within(slo.e2e, Some(s.e2e()));
    Some(within(slo.ttft, Some(ttft)) && tpot_ok && e2e_ok)
}

/// Verdicts of an attempt so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GoodputTally {
    /// Requests judged good.
    pub good: u64,
    /// Requests judged.
    pub judged: u64,
}

impl GoodputTally {
    /// Counts one verdict of [`judge`].
    pub fn add(&mut self, verdict: Option<bool>) {
        if let Some(good) = verdict {
            self.judged += 1;
            self.good += u64::from(good);
        }
    }

    /// The report figures over a span of `span_s` seconds.
    pub fn finish(&self, span_s: f64) -> Goodput {
        Goodput::new(self.good, self.judged, span_s)
    }
}

#[cfg(test)]
#[path = "goodput_tests.rs"]
mod tests;
