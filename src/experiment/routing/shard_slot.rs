//! A routing phase's slot on a sharded session's timeline (`run --shard i/N --start-at`,
//! issue 27): a priming part, in which shard 0 alone resets the replicas' caches and primes
//! the phase's families while the other shards wait, then the measured part, whose one seeded
//! schedule starts at the same wall-clock instant on every shard (arrival k on shard k mod
//! N). Every shard computes the same slot from the flags alone.

use super::phase::traffic_of;
use super::plan::phases;
use crate::config::RunConfig;
use std::time::Duration;

/// The metrics round every shard takes before the measured part (the poller's request
/// timeout bounds it): the priming part ends this long before the measured part starts.
pub(crate) const SCRAPE_LEAD: Duration = Duration::from_secs(2);
/// Shard 0's allowance per replica for resetting its prefix cache (one bounded request).
pub(crate) const RESET_ALLOWANCE: Duration = Duration::from_secs(2);
/// Shard 0's allowance per family for priming its prefix in a primed scenario (one request
/// of one output token, and the counter wait when no response names its replica).
pub(crate) const PRIME_ALLOWANCE: Duration = Duration::from_secs(3);
/// What the measured part leaves after the schedule's last arrival for the last requests to
/// finish and the closing metrics round (as long as a decode slot's drain allowance).
pub(crate) const TAIL: Duration = Duration::from_secs(14);

/// How long shard 0 has for a phase's resets and priming: `--priming-slot`, else
/// [`RESET_ALLOWANCE`] per replica plus, when any scenario is primed, [`PRIME_ALLOWANCE`] per
/// family. The same for every phase, so every shard's slots agree.
pub(crate) fn priming_budget(cfg: &RunConfig) -> Duration {
    if let Some(d) = cfg.routing.priming_slot {
        return d;
    }
    let replicas = u32::try_from(cfg.metrics.len().max(1)).unwrap_or(u32::MAX);
    let resets = RESET_ALLOWANCE.saturating_mul(replicas);
    let primed = cfg.routing.scenarios.iter().any(|s| s.primed);
    resets.saturating_add(if primed { PRIME_ALLOWANCE.saturating_mul(cfg.routing.families) } else { Duration::ZERO })
}

/// The longest schedule of the plan's phases: from its first arrival to its last.
pub(crate) fn longest_span(cfg: &RunConfig) -> Duration {
    let spans =
        phases(&cfg.routing).into_iter().map(|p| traffic_of(&cfg.routing, &p).last().map_or(Duration::ZERO, |t| t.0));
    spans.max().unwrap_or(Duration::ZERO)
}

/// A routing phase's slot: its length and when its measured part starts in it (the priming
/// budget, then [`SCRAPE_LEAD`]); the measured part is the longest schedule and [`TAIL`].
pub(crate) fn slot(cfg: &RunConfig) -> (Duration, Option<Duration>) {
    let measured_at = priming_budget(cfg).saturating_add(SCRAPE_LEAD);
    (measured_at.saturating_add(longest_span(cfg)).saturating_add(TAIL), Some(measured_at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::routing::Arrival;

    fn cfg() -> RunConfig {
        let mut c = crate::cli::run::tests_support::config();
        c.routing.scenarios = vec!["cold-uniform".parse().unwrap(), "hot90".parse().unwrap()];
        (c.routing.count, c.routing.rps, c.routing.arrival, c.routing.families) = (5, 2.0, Arrival::Constant, 4);
        c
    }

    #[test]
    fn the_slot_is_priming_then_the_longest_schedule_then_the_tail() {
        let mut c = cfg();
        c.metrics = Vec::new();
        let priming = RESET_ALLOWANCE + PRIME_ALLOWANCE * 4;
        assert_eq!(priming_budget(&c), priming, "one replica's reset at least, four families primed");
        assert_eq!(longest_span(&c), Duration::from_secs(2), "5 arrivals 0.5 s apart");
        assert_eq!(TAIL, Duration::from_secs(14), "docs/reports.md §9 says 14 s");
        let at = priming + SCRAPE_LEAD;
        assert_eq!(slot(&c), (at + Duration::from_secs(2) + TAIL, Some(at)));
        c.routing.priming_slot = Some(Duration::from_secs(7));
        assert_eq!(slot(&c).1, Some(Duration::from_secs(7) + SCRAPE_LEAD), "--priming-slot wins");
        c.routing.priming_slot = None;
        c.routing.scenarios.truncate(1);
        assert_eq!(priming_budget(&c), RESET_ALLOWANCE, "cold phases: resets only");
    }

    #[test]
    fn a_poisson_schedule_bounds_every_phase_and_every_shard_computes_the_same() {
        let mut c = cfg();
        (c.routing.arrival, c.routing.count, c.routing.rounds) = (Arrival::Poisson, 50, 3);
        let longest = longest_span(&c);
        for p in phases(&c.routing) {
            assert!(traffic_of(&c.routing, &p).last().unwrap().0 <= longest, "{}", p.name);
        }
        assert_eq!(slot(&c), slot(&c.clone()));
    }
}
