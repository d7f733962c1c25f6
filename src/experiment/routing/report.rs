//! Builds the report entry of one routing phase ([`RoutingPhase`], the layout of
//! `tests/fixtures/seed_002.json`) from what the phase measured. Times in this layout are
//! seconds (as in that report), not milliseconds.

use super::attribution::attribute;
pub(crate) use super::measured::{PhaseData, Setup};
use crate::cell::sample_window::per_token_gaps;
use crate::load::sample::{ErrorKind, RequestSample, TokenSource};
use crate::report::phase::{Attribution, FamilyRecord, PhaseConfig, PhaseLatency, RoutingPhase};
use crate::report::status::AttemptStatus;
use crate::stats::{Samples, Slo};
use std::collections::{BTreeMap, BTreeSet};

fn pcts(s: &mut Samples) -> PhaseLatency {
    let p = s.p50_p95_p99();
    PhaseLatency { p50: p.map(|p| p.p50), p95: p.map(|p| p.p95), p99: p.map(|p| p.p99) }
}

fn secs(d: std::time::Duration) -> f64 {
    d.as_secs_f64()
}

/// `config` of the seed layout.
fn config(d: &PhaseData<'_>) -> PhaseConfig {
    let s = d.spec;
    let mut c = PhaseConfig {
        repeat: d.repeat as u64,
        output: d.cfg.output,
        count: d.cfg.count,
        rps: d.cfg.rps,
        seed: s.seed,
        phase: s.name.clone(),
        route: s.route.clone(),
        scenario: s.scenario.name.clone(),
        hot_fraction: s.scenario.hot_fraction,
        ..PhaseConfig::default()
    };
    if let Some(setup) = d.setup {
        c.setup_attempt = Some(setup.attempt);
        c.family_map = Some(setup.family_map.iter().enumerate().map(|(f, c)| (f as u32, *c)).collect());
        c.priming_candidates = Some(d.cfg.priming_candidates);
        c.initial_owners = Some(setup.owners.clone());
        c.balanced = Some(setup.balanced);
        if s.scenario.hot_fraction > 0.0 {
            c.hot_initial_replica = Some(initial_owner(setup, 0));
        }
    }
    c
}

fn initial_owner(setup: &Setup, family: usize) -> Option<String> {
    let cand = *setup.family_map.get(family)?;
    setup.owners.iter().find(|(_, cs)| cs.contains(&cand)).map(|(n, _)| n.clone())
}

/// Client-side totals: counts, good, latency distributions, families.
fn client_side(d: &PhaseData<'_>, slo: &Slo, p: &mut RoutingPhase) {
    let (mut ttft, mut tpot, mut e2e) = (Samples::new(), Samples::new(), Samples::new());
    let (mut success, mut errors, mut cut, mut good, mut tokens) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut fam: BTreeMap<u32, (u64, Samples)> = BTreeMap::new();
    for s in d.samples {
        tokens += s.output_tokens;
        let entry = fam.entry(s.tag).or_insert_with(|| (0, Samples::new()));
        entry.0 += 1;
        match (s.completed(), s.error_kind()) {
            (true, _) => {
                success += 1;
                let t = s.ttft();
                let p = t.and_then(|t| crate::stats::tpot(s.e2e(), t, s.output_tokens));
                if let Some(t) = t {
                    ttft.push(secs(t));
                    entry.1.push(secs(t));
                }
                if let Some(p) = p {
                    tpot.push(secs(p));
                }
                e2e.push(secs(s.e2e()));
                good += u64::from(slo.is_met(t, p, Some(s.e2e())));
            }
            (false, Some(_)) => errors += 1,
            (false, None) => cut += 1,
        }
    }
    let dropped = u64::from(d.planned).saturating_sub(d.samples.len() as u64) + cut;
    let elapsed = (d.finished_at - d.started_at).max(0.0);
    p.families =
        fam.iter_mut().map(|(f, (n, t))| (*f, FamilyRecord { requests: *n, ttft_p95: t.percentile(95.0) })).collect();
    (p.planned, p.requests, p.success, p.errors) = (d.planned, success + errors + dropped, success, errors);
    (p.dropped, p.good) = (dropped, good);
    p.output_tokens_per_second = if elapsed > 0.0 { tokens as f64 / elapsed } else { 0.0 };
    (p.ttft, p.tpot, p.e2e) = (pcts(&mut ttft), pcts(&mut tpot), pcts(&mut e2e));
    p.itl = itl_secs(d.samples);
}

/// Per-token ITL of the completed requests (the gaps bursts summarise), seconds.
fn itl_secs(samples: &[RequestSample]) -> PhaseLatency {
    let gaps_ms = per_token_gaps(samples.iter().filter(|s| s.completed()));
    let s = |q: f64| gaps_ms.percentile(q).map(|ms| ms / 1e3);
    PhaseLatency { p50: s(50.0), p95: s(95.0), p99: s(99.0) }
}

/// The phase entry. `status` is `measured` unless the runner says otherwise.
pub(crate) fn phase_entry(d: &PhaseData<'_>) -> RoutingPhase {
    let mut p = RoutingPhase {
        phase: d.spec.name.clone(),
        scenario: d.spec.scenario.name.clone(),
        route: d.spec.route.clone(),
        config: config(d),
        started_at: d.started_at,
        finished_at: d.finished_at,
        elapsed: (d.finished_at - d.started_at).max(0.0),
        ..RoutingPhase::default()
    };
    client_side(d, &d.cfg.slo, &mut p);
    let owners = attribute(d.samples, d.replicas);
    let verified = owners.iter().filter(|o| o.is_some()).count();
    let by_header = verified > 0;
    p.replicas = super::report_replicas::replicas(d, &owners, by_header);
    p.cache_hit_ratio = super::report_replicas::phase_hit_ratio(d);
    p.prefix_cache = super::prefix::check(d);
    p.input_tokens_range = input_range(d.samples);
    p.initial_prefix_owners = initial_prefix_owners(d);
    p.owner_hit_ratio = super::owner_hits::owner_hit_ratio(&p.replicas, &p.initial_prefix_owners);
    p.routing_counter_deltas = d.routing_deltas.clone();
    p.gateway_verified_requests = verified as u64;
    extras(d, by_header, &mut p);
    p
}

fn input_range(samples: &[RequestSample]) -> Option<[u64; 2]> {
    let p: Vec<u64> = samples.iter().filter_map(|s| s.prompt_tokens).collect();
    Some([*p.iter().min()?, *p.iter().max()?])
}

fn initial_prefix_owners(d: &PhaseData<'_>) -> BTreeMap<u32, Vec<String>> {
    let Some(setup) = d.setup else { return BTreeMap::new() };
    (0..setup.family_map.len()).map(|f| (f as u32, initial_owner(setup, f).into_iter().collect())).collect()
}

/// Fields beyond the seed's: attribution source, errors by kind, schedule lag, token sources.
fn extras(d: &PhaseData<'_>, by_header: bool, p: &mut RoutingPhase) {
    let mut kinds: BTreeMap<ErrorKind, u64> = BTreeMap::new();
    let mut lag = Samples::new();
    let mut sources = BTreeSet::new();
    for s in d.samples {
        if let Some((k, detail)) = s.failure() {
            *kinds.entry(k).or_default() += 1;
            p.error_examples.entry(k).or_insert_with(|| detail.to_string());
        }
        if let Some(l) = s.schedule_lag() {
            lag.push(secs(l) * 1e3);
        }
        if s.token_source != TokenSource::None {
            sources.insert(s.token_source);
        }
    }
    p.attribution = if by_header {
        Attribution::ResponseHeader
    } else if d.after.is_some() {
        Attribution::CounterDeltas
    } else {
        Attribution::Unavailable
    };
    p.status = if p.success == 0 && p.errors > 0 { AttemptStatus::Errored } else { AttemptStatus::Measured };
    p.family_attribution_available = by_header;
    p.errors_by_kind = kinds;
    p.reconnects = d.samples.iter().map(|s| u64::from(s.reconnects)).sum();
    p.schedule_lag_ms = lag.summary();
    // Listed by name, as the report always has.
    let mut sources: Vec<TokenSource> = sources.into_iter().collect();
    sources.sort_by_key(|s| s.as_str());
    p.token_sources = sources;
    p.cache_reset = d.cache_reset.clone();
    p.caches_reset = Some(super::priming::all_reset(&d.cache_reset));
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
