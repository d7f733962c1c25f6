//! What a routing phase's prompts are designed to share in a prefix cache, and its check
//! (issue 24).
//!
//! A phase's prompts are family prefixes (`prompts`), salted with the phase's own prefix set,
//! each followed by a line of the request's own. A request can be served its prefix when an
//! earlier request of the phase sent the same family's, or, in a primed scenario (`warm-uniform`,
//! `hotNN`), when the priming did: that is the scenario's designed sharing. Counting each such
//! request's whole prompt overstates it by the request's own line, never understates it. More
//! hits than that mean the caches held the phase's prefixes before it began: a phase run again
//! on a server whose cache could not be reset (docs/protocol.md §8), or other traffic.

use super::measured::PhaseData;
use crate::cell::context::CellEnv;
use crate::load::sample::RequestSample;
use crate::report::phase::RoutingPhase;
use crate::report::prefix_cache::PrefixCacheCheck;
use std::collections::BTreeSet;

/// The most a phase's requests share of their prompt tokens: the prompt tokens of the requests
/// whose family an earlier request of the phase sent (every request when `primed`), over all
/// of them, in send order. None when a request has no prompt-token count (the server sent no
/// usage), or none has: then the sharing is unknown.
pub(crate) fn designed_sharing(primed: bool, samples: &[RequestSample]) -> Option<f64> {
    let mut sent: Vec<&RequestSample> = samples.iter().collect();
    sent.sort_by_key(|s| s.sent_at);
    let mut seen = BTreeSet::new();
    let (mut shared, mut total) = (0u64, 0u64);
    for s in sent {
        let tokens = s.prompt_tokens?;
        total += tokens;
        if !seen.insert(s.tag) || primed {
            shared += tokens;
        }
    }
    (total > 0).then(|| shared as f64 / total as f64)
}

/// [`designed_sharing`] of a whole schedule of `families` (in send order), each request
/// weighing alike: what a sharded phase's server-wide counters are judged against, since
/// another shard's request may have sent a family first (a phase's prompts are within a few
/// tokens of each other, `input_tokens_range`). None for an empty schedule.
pub(crate) fn schedule_sharing(primed: bool, families: &[u32]) -> Option<f64> {
    let mut seen = BTreeSet::new();
    let shared = families.iter().filter(|f| !seen.insert(**f) || primed).count();
    (!families.is_empty()).then(|| shared as f64 / families.len() as f64)
}

/// The phase's check from its metrics rounds before and after its traffic; None without
/// prefix-cache counters.
pub(crate) fn check(d: &PhaseData<'_>) -> Option<PrefixCacheCheck> {
    let (hits, queries) = crate::cell::prefix_cache::prefix_between(d.before?, d.after?)?;
    PrefixCacheCheck::judge(hits, queries, designed_sharing(d.spec.scenario.primed, d.samples))
}

/// Says a warm phase in the log, naming it and the likely cause.
pub(crate) fn warn_if_warm(env: &CellEnv, p: &RoutingPhase) {
    let Some(check) = p.prefix_cache.filter(|c| c.warm) else { return };
    let cause = match p.caches_reset {
        Some(true) => "the caches were reset before it: other traffic on the replicas?",
        _ => "prefixes an earlier run of the phase left in caches that could not be reset (docs/protocol.md §8)?",
    };
    env.warn(format!("{}: {} ({cause})", p.phase, check.warm_note()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::{Duration, Instant};

    /// Requests of `tokens` prompt tokens each, sent in order, of the families `families`.
    fn sent(families: &[u32], tokens: Option<u64>) -> Vec<RequestSample> {
        let t0 = Instant::now();
        let at = |i: usize| t0 + Duration::from_millis(i as u64);
        let one =
            |(i, f): (usize, &u32)| RequestSample { tag: *f, prompt_tokens: tokens, ..RequestSample::new(0, at(i)) };
        // Finished out of order: the rule goes by when each was sent.
        families.iter().enumerate().map(one).rev().collect()
    }

    #[test]
    fn a_cold_phase_shares_what_repeats_a_family_and_a_primed_one_everything() {
        let s = sent(&[0, 1, 0, 0, 2, 1, 3, 0], Some(1000));
        assert_eq!(designed_sharing(false, &s), Some(4.0 / 8.0), "4 of 8 requests repeat a family");
        assert_eq!(designed_sharing(true, &s), Some(1.0), "primed: every prefix was sent before");
        assert_eq!(designed_sharing(false, &sent(&[0, 1, 2], Some(1000))), Some(0.0), "no family twice");
        assert_eq!(designed_sharing(false, &sent(&[0, 0], None)), None, "no prompt tokens: unknown");
        assert_eq!(designed_sharing(false, &[]), None, "nothing sent: nothing to judge");
    }

    #[test]
    fn a_schedule_shares_what_repeats_a_family_whichever_shard_sent_it_first() {
        assert_eq!(schedule_sharing(false, &[0, 1, 0, 0, 2, 1, 3, 0]), Some(4.0 / 8.0));
        assert_eq!(schedule_sharing(true, &[0, 1]), Some(1.0));
        assert_eq!(schedule_sharing(false, &[]), None);
        // Shard 1 of 2 sends [1, 0, 0, 0] of it: alone it would design 2 of 4 shared, but
        // family 0 and 1 were sent first by shard 0; the server's counters see the whole.
        let shard1 = sent(&[1, 0, 0, 0], Some(1000));
        assert_eq!(designed_sharing(false, &shard1), Some(0.5));
    }

    #[test]
    fn requests_weigh_by_their_prompt_tokens() {
        let mut s = sent(&[0, 0], Some(1000));
        s[0].prompt_tokens = Some(3000);
        assert_eq!(designed_sharing(false, &s), Some(0.75), "the repeat is the longer one");
    }

    #[test]
    fn a_cold_phase_found_warm_is_flagged_and_its_own_sharing_is_not() {
        let expected = designed_sharing(false, &sent(&[0, 1, 0, 1, 0, 1, 0, 1], Some(1000)));
        let cold = PrefixCacheCheck::judge(0.74 * 8000.0, 8000.0, expected).unwrap();
        assert!(!cold.warm, "repeats served their prefixes: the design");
        let warm = PrefixCacheCheck::judge(0.98 * 8000.0, 8000.0, expected).unwrap();
        assert!(warm.warm, "the first request of each family was served too: the cache held them");
    }
}
