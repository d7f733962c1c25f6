//! A routing phase in a sharded session (`run --shard i/N --plan routing --start-at`, issue
//! 27). Shard 0 alone resets the replicas' caches and primes; so that every shard sends the
//! prompts shard 0 primed without the shards talking, a sharded phase primes the candidates
//! `0..families` once each (no retry on fresh candidates) and its family map is the identity.
//! Whether that map is balanced is recorded (`config.balanced`), not retried. Every shard
//! sends its slice of the one seeded schedule (arrival k on shard k mod N) from the instant
//! its slot's measured part starts (`shard_slot`). Only shard 0 knows the owners: the other
//! shards record each request's family and replica (`replicas[].family_counts`), and `report
//! merge` attributes them against shard 0's map.

use super::env::RoutingEnv;
use super::family_map::{Owners, pick_balanced};
use super::measured::{PhaseData, Setup};
use super::phase::traffic_of;
use super::plan::PhaseSpec;
use super::prefix::schedule_sharing;
use super::priming::prime_candidates;
use super::shard_slot::SCRAPE_LEAD;
use crate::cell::context::CellEnv;
use crate::cell::sample_window::per_token_gaps;
use crate::config::routing::RoutingConfig;
use crate::report::phase::RoutingPhase;
use crate::report::phase_shard::PhaseShardDists;
use crate::report::prefix_cache::PrefixCacheCheck;
use crate::report::shard_dists::HeldValues;
use crate::stats::SavedGapDist;
use reqwest::header::HeaderMap;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Why a sharded phase did not run: its attempt had no slot on the timeline.
pub(crate) const NO_SLOT: &str =
    "a sharded routing phase needs its slot on the timeline (--start-at), so every shard starts it at once";

/// The setup of fixed priming: the identity family map over the candidates `0..families`,
/// balanced when the owners allow a balanced pick of all of them.
pub(crate) fn fixed_setup(names: &[String], families: usize, owners: Owners) -> Setup {
    let balanced = pick_balanced(&owners, names, families).is_some();
    Setup { attempt: 1, family_map: (0..families).collect(), owners, balanced }
}

/// Shard 0's priming of a primed phase whose measured part starts at `measured_at`: the
/// candidates `0..families` once each, cut where the priming part ends (a warning says how
/// many were attributed). None on the other shards.
pub(crate) async fn prime_first(
    env: &CellEnv,
    r: &RoutingEnv,
    spec: &PhaseSpec,
    headers: &HeaderMap,
    cancel: &CancellationToken,
    measured_at: Instant,
) -> Option<Setup> {
    if !env.cfg.slice().is_first() {
        return None;
    }
    let families = r.cfg.families as usize;
    let names: Vec<String> = r.replicas.iter().map(|x| x.name.clone()).collect();
    let cut = cancel.child_token();
    let deadline = measured_at.checked_sub(SCRAPE_LEAD).unwrap_or(measured_at);
    let timer = async {
        tokio::time::sleep_until(deadline).await;
        cut.cancel();
        std::future::pending::<()>().await
    };
    let owners = tokio::select! {
        o = prime_candidates(env, r, spec, headers, &cut, 0..families) => o,
        _ = timer => unreachable!("the timer never ends"),
    };
    let setup = fixed_setup(&names, families, owners);
    let attributed: usize = setup.owners.values().map(Vec::len).sum();
    if cut.is_cancelled() && !cancel.is_cancelled() {
        env.warn(format!(
            "{}: priming cut where its part of the slot ends ({attributed} of {families} families attributed); give a longer --priming-slot",
            spec.name
        ));
    } else if !setup.balanced {
        env.warn(format!(
            "{}: the sharded priming's owners are not balanced (families per replica: {}); a sharded phase primes each family once and does not retry",
            spec.name,
            names.iter().map(|n| format!("{n} {}", setup.owners.get(n).map_or(0, Vec::len))).collect::<Vec<_>>().join(", ")
        ));
    }
    Some(setup)
}

/// Waits until the metrics round before the measured part (`SCRAPE_LEAD` before it), or
/// until `cancel` fires.
pub(crate) async fn await_measured(measured_at: Instant, cancel: &CancellationToken) {
    let at = measured_at.checked_sub(SCRAPE_LEAD).unwrap_or(measured_at);
    tokio::select! {
        _ = tokio::time::sleep_until(at) => {}
        _ = cancel.cancelled() => {}
    }
}

/// Says on a shard other than 0 that the owner map of a primed phase is shard 0's.
pub(crate) fn say_owners_on_shard_0(env: &CellEnv, spec: &PhaseSpec) {
    if spec.scenario.primed && !env.cfg.slice().is_first() {
        env.warn(format!(
            "{}: the family owner map is on shard 0 (its priming); report merge attributes this shard's requests against it",
            spec.name
        ));
    }
}

/// A sharded phase's prefix-cache check judged again against the whole schedule's designed
/// sharing: the replicas' counters are server-wide (every shard's requests), so this shard's
/// own requests alone would flag a cold phase warm whenever another shard sent a family first.
pub(crate) fn judge_prefix_cache_whole(entry: &mut RoutingPhase, cfg: &RoutingConfig, spec: &PhaseSpec) {
    let families: Vec<u32> = traffic_of(cfg, spec).into_iter().map(|t| t.1).collect();
    let designed = schedule_sharing(spec.scenario.primed, &families);
    entry.prefix_cache =
        entry.prefix_cache.and_then(|c| PrefixCacheCheck::judge(c.hits_tokens, c.queries_tokens, designed));
}

/// The values behind a shard's phase figures, by the rules of `report::client_side`.
pub(crate) fn dists(d: &PhaseData<'_>) -> PhaseShardDists {
    let mut out = PhaseShardDists::default();
    let push = |h: &mut HeldValues, v: f64| {
        h.count += 1;
        h.values.push(v);
    };
    for s in d.samples {
        if let Some(l) = s.schedule_lag() {
            push(&mut out.schedule_lag_ms, l.as_secs_f64() * 1e3);
        }
        if !s.completed() {
            continue;
        }
        let t = s.ttft();
        if let Some(t) = t {
            push(&mut out.ttft_s, t.as_secs_f64());
            push(out.family_ttft_s.entry(s.tag).or_default(), t.as_secs_f64());
        }
        if let Some(p) = t.and_then(|t| crate::stats::tpot(s.e2e(), t, s.output_tokens)) {
            push(&mut out.tpot_s, p.as_secs_f64());
        }
        push(&mut out.e2e_s, s.e2e().as_secs_f64());
    }
    out.itl_token_ms = SavedGapDist::of(&per_token_gaps(d.samples.iter().filter(|s| s.completed())));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_priming_maps_every_family_to_its_own_candidate_balanced_or_not() {
        let names = vec!["a".to_string(), "b".to_string()];
        let even = Owners::from([("a".to_string(), vec![0, 2]), ("b".to_string(), vec![1, 3])]);
        let s = fixed_setup(&names, 4, even);
        assert_eq!((s.family_map, s.balanced, s.attempt), (vec![0, 1, 2, 3], true, 1));
        let piled = Owners::from([("a".to_string(), vec![0, 1, 2]), ("b".to_string(), vec![3])]);
        let s = fixed_setup(&names, 4, piled);
        assert_eq!((s.family_map, s.balanced), (vec![0, 1, 2, 3], false), "the map is the identity all the same");
        assert_eq!(fixed_setup(&names, 3, Owners::new()).family_map, vec![0, 1, 2], "nothing attributed");
    }

    #[test]
    fn a_cold_phase_is_judged_against_the_whole_schedule_not_one_shards_part() {
        let cfg = RoutingConfig { count: 40, families: 4, ..RoutingConfig::default() };
        let spec = super::super::plan::phases(&cfg).into_iter().find(|p| !p.scenario.primed).unwrap();
        let families: Vec<u32> = traffic_of(&cfg, &spec).into_iter().map(|t| t.1).collect();
        let whole = schedule_sharing(false, &families).unwrap();
        assert!(whole > 0.8, "40 requests over 4 families repeat most: {whole}");
        let judged_alone = PrefixCacheCheck::judge(whole * 1000.0, 1000.0, Some(0.5));
        let mut e = RoutingPhase { prefix_cache: judged_alone, ..RoutingPhase::default() };
        assert!(e.prefix_cache.unwrap().warm, "against a part that designs less sharing");
        judge_prefix_cache_whole(&mut e, &cfg, &spec);
        let c = e.prefix_cache.unwrap();
        assert_eq!((c.warm, c.expected_max_ratio, c.hits_tokens), (false, Some(whole), whole * 1000.0));
    }
}
