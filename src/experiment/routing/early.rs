//! The prefix-cache hit ratio over a phase's first requests: what the phase started on. A
//! cold phase on a cache that could not be reset shows it here (docs/protocol.md §8.7). From
//! usage (`prompt_tokens_details.cached_tokens`) when every early request carried it, else
//! from the engines' hit and query counters between the last poll before the phase and the
//! first poll after the early requests ended.

use crate::load::sample::RequestSample;
use crate::metrics::snapshot::{History, Point};
use crate::report::phase::EarlyHitRatio;
use tokio::time::Instant;

/// How many first requests count as the phase's start: a quarter, within 1..=16.
pub(crate) fn early_count(planned: u32) -> usize {
    (planned as usize / 4).clamp(1, 16)
}

/// The first `n` completed samples in send order.
fn first_completed(samples: &[RequestSample], n: usize) -> Vec<&RequestSample> {
    let mut done: Vec<&RequestSample> = samples.iter().filter(|s| s.completed()).collect();
    done.sort_by_key(|s| s.sent_at);
    done.truncate(n);
    done
}

/// From usage: None unless every early request reported both prompt and cached tokens.
pub(crate) fn from_usage(samples: &[RequestSample], n: usize) -> Option<EarlyHitRatio> {
    let early = first_completed(samples, n);
    let pairs: Option<Vec<(u64, u64)>> = early.iter().map(|s| s.cached_tokens.zip(s.prompt_tokens)).collect();
    let (cached, prompt) = pairs.filter(|p| !p.is_empty())?.iter().fold((0, 0), |a, p| (a.0 + p.0, a.1 + p.1));
    (prompt > 0).then(|| EarlyHitRatio {
        ratio: cached as f64 / prompt as f64,
        requests: early.len() as u64,
        source: "usage".into(),
    })
}

/// From the engine counters of every replica in `history`, between `start` and the first
/// poll after the early requests ended; `requests` counts the requests sent by that poll.
pub(crate) fn from_counters(
    history: &History,
    samples: &[RequestSample],
    n: usize,
    start: Instant,
) -> Option<EarlyHitRatio> {
    let early = first_completed(samples, n);
    let upto = early.iter().map(|s| s.ended_at).max()?;
    let (mut hits, mut queries, mut until) = (0.0, 0.0, None::<Instant>);
    for r in &history.replicas {
        let base = r.points.iter().rev().find(|p| p.at <= start);
        let end = r.points.iter().find(|p| p.at >= upto);
        let (Some(b), Some(e)) = (base, end) else { continue };
        let d = |f: fn(&Point) -> Option<f64>| Some((f(e)? - f(b)?).max(0.0));
        if let (Some(h), Some(q)) = (d(|p| p.prefix_hits_tokens), d(|p| p.prefix_queries_tokens)) {
            hits += h;
            queries += q;
            until = Some(until.map_or(e.at, |u| u.max(e.at)));
        }
    }
    let until = until.filter(|_| queries > 0.0)?;
    let sent = samples.iter().filter(|s| s.sent_at <= until).count() as u64;
    Some(EarlyHitRatio { ratio: hits / queries, requests: sent, source: "engine_counters".into() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::sample::Outcome;
    use std::time::Duration;

    fn done(t0: Instant, at: u64, prompt: u64, cached: Option<u64>) -> RequestSample {
        let mut s = RequestSample::new(0, t0 + Duration::from_secs(at));
        s.ended_at = s.sent_at + Duration::from_secs(1);
        (s.prompt_tokens, s.cached_tokens, s.outcome) = (Some(prompt), cached, Outcome::Completed(None));
        s
    }

    #[test]
    fn usage_covers_the_first_requests_only() {
        let t0 = Instant::now();
        let s = vec![done(t0, 0, 100, Some(0)), done(t0, 1, 100, Some(50)), done(t0, 2, 100, Some(100))];
        let e = from_usage(&s, 2).unwrap();
        assert_eq!((e.ratio, e.requests, e.source.as_str()), (0.25, 2, "usage"));
        let partial = vec![done(t0, 0, 100, Some(0)), done(t0, 1, 100, None)];
        assert_eq!(from_usage(&partial, 2), None, "one request without cached tokens: not from usage");
        assert_eq!(early_count(96), 16);
        assert_eq!(early_count(2), 1);
    }
}
