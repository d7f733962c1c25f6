//! The routing phases of a merged report (docs/reports.md §9): a phase's entries matched by
//! name over the shards (`phase_history` by name and occurrence). Counts add; rates add (each
//! shard's over its own span); TTFT, TPOT, E2E, per-token ITL, per-family TTFT and schedule lag
//! are recomputed from every shard's values together (`RoutingPhase.shard_dists`); per replica
//! the requests each shard's responses attributed add, and the owner hit ratio is recomputed
//! from all of them against shard 0's owner map (its priming). What the server counts over the
//! phase (engine and gateway counter deltas, cache hit ratios, peaks) is server-wide: it comes
//! from one shard's metrics rounds, the shard whose phase ended last (its rounds span every
//! shard's measured part: all start at one instant, after its round before).

use crate::experiment::routing::owner_hits::owner_hit_ratio;
use crate::report::json::SessionReport;
use crate::report::phase::{Attribution, FamilyRecord, PhaseLatency, ReplicaRecord, RoutingPhase};
use crate::report::phase_shard::PhaseShardDists;
use crate::report::shard_dists::{HeldValues, concat_whole, merge_gaps};
use crate::report::status::AttemptStatus;
use crate::stats::Samples;
use std::collections::BTreeMap;

/// `phases` and `phase_history` merged over `parts` (shard index, report; the base shard
/// first), or the base's unchanged when no shard ran routing.
pub(super) fn merge(
    parts: &[(u32, &SessionReport)],
    notes: &mut Vec<String>,
) -> (Vec<RoutingPhase>, Vec<RoutingPhase>) {
    let phases = merge_list(parts, |r| &r.phases, notes);
    let history = merge_list(parts, |r| &r.phase_history, &mut Vec::new());
    (phases, history)
}

/// Entries of one list merged by name and occurrence, in the order the shards list them.
fn merge_list(
    parts: &[(u32, &SessionReport)],
    list: impl Fn(&SessionReport) -> &Vec<RoutingPhase>,
    notes: &mut Vec<String>,
) -> Vec<RoutingPhase> {
    let mut keys: Vec<(String, usize)> = Vec::new();
    for (_, r) in parts {
        for key in occurrences(list(r)) {
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    let of = |key: &(String, usize)| -> Vec<(u32, &RoutingPhase)> {
        parts
            .iter()
            .filter_map(|(i, r)| {
                let l = list(r);
                occurrences(l).position(|k| k == *key).map(|at| (*i, &l[at]))
            })
            .collect()
    };
    keys.iter().map(|k| merge_phase(&of(k), parts.len(), notes)).collect()
}

/// Each entry's (name, how many of that name came before it).
fn occurrences(list: &[RoutingPhase]) -> impl Iterator<Item = (String, usize)> + '_ {
    list.iter().enumerate().map(|(at, p)| (p.phase.clone(), list[..at].iter().filter(|q| q.phase == p.phase).count()))
}

/// One phase over the shards that ran it (shard index, entry), of `shards` given.
pub(super) fn merge_phase(entries: &[(u32, &RoutingPhase)], shards: usize, notes: &mut Vec<String>) -> RoutingPhase {
    let base = entries.iter().find(|(i, _)| *i == 0).unwrap_or(&entries[0]).1;
    let server = entries.iter().max_by(|a, b| a.1.finished_at.total_cmp(&b.1.finished_at)).map_or(base, |e| e.1);
    if entries.len() < shards {
        let made: Vec<String> = entries.iter().map(|(i, _)| i.to_string()).collect();
        notes.push(format!("routing phase {}: only shard {} of {shards} ran it", base.phase, made.join(", ")));
    }
    if entries.first().is_some_and(|(i, _)| *i != 0) {
        notes.push(format!(
            "routing phase {}: shard 0 did not run it, so no owner map: owner_hit_ratio left out",
            base.phase
        ));
    }
    let mut p = RoutingPhase {
        shard_dists: None,
        baseline: Vec::new(),
        runs: None,
        replicas: replicas(entries, server),
        ..server.clone()
    };
    (p.config, p.initial_prefix_owners) = (base.config.clone(), base.initial_prefix_owners.clone());
    (p.cache_reset, p.caches_reset, p.prefix_set) =
        (base.cache_reset.clone(), base.caches_reset, base.prefix_set.clone());
    add_counts(entries, &mut p);
    p.started_at = entries.iter().map(|(_, e)| e.started_at).fold(f64::INFINITY, f64::min);
    p.finished_at = entries.iter().map(|(_, e)| e.finished_at).fold(f64::NEG_INFINITY, f64::max);
    p.elapsed = (p.finished_at - p.started_at).max(0.0);
    p.input_tokens_range =
        entries.iter().filter_map(|(_, e)| e.input_tokens_range).reduce(|a, b| [a[0].min(b[0]), a[1].max(b[1])]);
    let mut sources: Vec<_> = entries.iter().flat_map(|(_, e)| e.token_sources.iter().copied()).collect();
    sources.sort_by_key(|s| s.as_str());
    sources.dedup();
    p.token_sources = sources;
    p.owner_hit_ratio = match entries[0].0 {
        0 => owner_hit_ratio(&p.replicas, &p.initial_prefix_owners),
        _ => None,
    };
    p.status = status(entries, &p);
    p.error = entries.iter().find_map(|(_, e)| e.error.clone());
    latencies(entries, &mut p, notes);
    p
}

/// Counts, rates and examples that add over the shards.
fn add_counts(entries: &[(u32, &RoutingPhase)], p: &mut RoutingPhase) {
    let sum = |f: fn(&RoutingPhase) -> u64| entries.iter().map(|(_, e)| f(e)).sum::<u64>();
    (p.requests, p.success, p.errors, p.dropped, p.good) =
        (sum(|e| e.requests), sum(|e| e.success), sum(|e| e.errors), sum(|e| e.dropped), sum(|e| e.good));
    p.planned = entries.iter().map(|(_, e)| e.planned).sum();
    (p.gateway_verified_requests, p.reconnects) = (sum(|e| e.gateway_verified_requests), sum(|e| e.reconnects));
    p.output_tokens_per_second = entries.iter().map(|(_, e)| e.output_tokens_per_second).sum();
    (p.errors_by_kind, p.error_examples) = (BTreeMap::new(), BTreeMap::new());
    p.families = BTreeMap::new();
    for (_, e) in entries {
        for (k, n) in &e.errors_by_kind {
            *p.errors_by_kind.entry(*k).or_default() += n;
        }
        for (k, ex) in &e.error_examples {
            p.error_examples.entry(*k).or_insert_with(|| ex.clone());
        }
        for (f, r) in &e.families {
            p.families.entry(*f).or_insert(FamilyRecord { requests: 0, ttft_p95: r.ttft_p95 }).requests += r.requests;
        }
    }
    let header = entries.iter().all(|(_, e)| e.attribution == Attribution::ResponseHeader);
    p.family_attribution_available = header;
}

/// Errored when no shard's request succeeded and some failed (as a phase's own rule).
fn status(entries: &[(u32, &RoutingPhase)], p: &RoutingPhase) -> AttemptStatus {
    match (p.success, p.errors) {
        (0, e) if e > 0 => AttemptStatus::Errored,
        _ if entries.iter().all(|(_, e)| e.status == AttemptStatus::Errored) => AttemptStatus::Errored,
        _ => AttemptStatus::Measured,
    }
}

/// Per replica: the requests each shard's responses attributed, and their families, add
/// (with header attribution on every shard; else the engine's count, which is server-wide);
/// the engine's counters and peaks are the `server` shard's.
fn replicas(entries: &[(u32, &RoutingPhase)], server: &RoutingPhase) -> BTreeMap<String, ReplicaRecord> {
    let header = entries.iter().all(|(_, e)| e.attribution == Attribution::ResponseHeader);
    let mut out = server.replicas.clone();
    for (_, e) in entries {
        for name in e.replicas.keys() {
            out.entry(name.clone()).or_default();
        }
    }
    for (name, r) in out.iter_mut() {
        let of = || entries.iter().filter_map(|(_, e)| e.replicas.get(name));
        if header {
            r.requests = Some(of().filter_map(|x| x.requests).sum());
            let mut fams: BTreeMap<u32, u64> = BTreeMap::new();
            for (f, n) in of().flat_map(|x| x.family_counts.iter().flatten()) {
                *fams.entry(*f).or_default() += n;
            }
            r.family_counts = Some(fams);
            // Each shard saw only its own requests in flight: the largest shard's peak.
            r.gateway_outstanding_at_selection_peak =
                of().filter_map(|x| x.gateway_outstanding_at_selection_peak).max();
        }
    }
    out
}

/// The latency figures from every shard's values together; left out (null, with a note) when
/// a shard wrote none.
fn latencies(entries: &[(u32, &RoutingPhase)], p: &mut RoutingPhase, notes: &mut Vec<String>) {
    let dists: Option<Vec<&PhaseShardDists>> = entries.iter().map(|(_, e)| e.shard_dists.as_ref()).collect();
    let Some(dists) = dists else {
        notes.push(format!(
            "routing phase {}: latency percentiles left out: a shard wrote no distributions (`shard_dists`)",
            p.phase
        ));
        (p.ttft, p.tpot, p.e2e, p.itl, p.schedule_lag_ms) = Default::default();
        p.families.values_mut().for_each(|f| f.ttft_p95 = None);
        return;
    };
    let held = |f: fn(&PhaseShardDists) -> &HeldValues| concat_whole(dists.iter().map(|d| f(d)));
    (p.ttft, p.tpot, p.e2e) = (pcts(held(|d| &d.ttft_s)), pcts(held(|d| &d.tpot_s)), pcts(held(|d| &d.e2e_s)));
    p.schedule_lag_ms = held(|d| &d.schedule_lag_ms).and_then(|h| h.values.into_iter().collect::<Samples>().summary());
    p.itl = match merge_gaps(dists.iter().map(|d| &d.itl_token_ms)) {
        Some(g) => {
            let s = |q: f64| g.percentile(q).map(|ms| ms / 1e3);
            PhaseLatency { p50: s(50.0), p95: s(95.0), p99: s(99.0) }
        }
        None => PhaseLatency::default(),
    };
    for (f, rec) in p.families.iter_mut() {
        let parts: Vec<&HeldValues> = dists.iter().filter_map(|d| d.family_ttft_s.get(f)).collect();
        rec.ttft_p95 = concat_whole(parts).and_then(|h| h.values.into_iter().collect::<Samples>().percentile(95.0));
    }
}

fn pcts(held: Option<HeldValues>) -> PhaseLatency {
    let Some(h) = held else { return PhaseLatency::default() };
    let p = h.values.into_iter().collect::<Samples>().p50_p95_p99();
    PhaseLatency { p50: p.map(|p| p.p50), p95: p.map(|p| p.p95), p99: p.map(|p| p.p99) }
}
