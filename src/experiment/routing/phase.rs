//! One routing phase: reset caches, prime (warm/hot), then the open-loop traffic under the
//! phase's routing strategy, with the live view of families and replicas kept current.

use super::attribution::resolve;
use super::env::RoutingEnv;
use super::plan::PhaseSpec;
use super::priming::{prime, reset_caches};
use super::report::{PhaseData, Setup, phase_entry};
use super::schedule::{arrivals, families_for};
use super::shard_phase;
use crate::cell::attempt_loop::{AttemptLoop, Tally};
use crate::cell::context::CellEnv;
use crate::cell::control::{FamilyLive, LiveAttempt, Phase};
use crate::cell::publisher::LivePublisher;
use crate::config::routing::RoutingConfig;
use crate::load::live::LiveCounters;
use crate::load::request::{BodyOptions, BodyTemplate};
use crate::load::sample::RequestSample;
use crate::load::worker::{Planned, run_open_loop};
use crate::metrics::gateway::deltas;
use crate::metrics::window::window_stats;
use crate::report::phase::RoutingPhase;
use reqwest::header::{HeaderMap, HeaderValue};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use xxhash_rust::xxh64::xxh64;

/// Requests of the phase as (offset, family), the same for every route of a scenario in a
/// round (the seed covers round and scenario, not route), so strategies see the same traffic.
pub(crate) fn traffic(r: &RoutingEnv, spec: &PhaseSpec) -> Vec<(Duration, u32)> {
    traffic_of(&r.cfg, spec)
}

/// [`traffic`] from the settings alone (a sharded session's slots are computed before setup).
pub(crate) fn traffic_of(cfg: &RoutingConfig, spec: &PhaseSpec) -> Vec<(Duration, u32)> {
    let seed = spec.seed ^ xxh64(spec.scenario.name.as_bytes(), 0);
    let offsets = arrivals(cfg.count, cfg.rps, cfg.arrival, seed);
    let fams = families_for(cfg.count, cfg.families, spec.scenario.hot_fraction, seed);
    offsets.into_iter().zip(fams).collect()
}

fn route_headers(env: &CellEnv, route: &str) -> HeaderMap {
    let mut h = env.target.headers.clone();
    if let Ok(v) = HeaderValue::from_str(route) {
        h.insert("routing-strategy", v);
    }
    h
}

fn unix_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// Seeds the family rows of the live view from the priming result.
fn initial_families(r: &RoutingEnv, spec: &PhaseSpec, setup: Option<&Setup>) -> Vec<FamilyLive> {
    (0..r.cfg.families)
        .map(|f| {
            let cand = setup.and_then(|s| s.family_map.get(f as usize).copied());
            let owner = setup
                .zip(cand)
                .and_then(|(s, c)| s.owners.iter().find(|(_, cs)| cs.contains(&c)).map(|(n, _)| n.clone()));
            FamilyLive { family: f, owner, hot: f == 0 && spec.scenario.hot_fraction > 0.0, ..FamilyLive::default() }
        })
        .collect()
}

/// Attributes each finished request to a replica and its prompt family.
struct FamilyTally<'a> {
    r: &'a RoutingEnv,
}

impl Tally for FamilyTally<'_> {
    fn replica(&self, s: &RequestSample) -> Option<String> {
        s.served_by.as_deref().map(|v| resolve(v, &self.r.replicas))
    }

    fn extra(&mut self, s: &RequestSample, replica: Option<&str>, live: &mut LiveAttempt) {
        if let (Some(pod), Some(f)) = (replica, live.families.get_mut(s.tag as usize)) {
            *f.served.entry(pod.to_string()).or_default() += 1;
            f.owner = Some(pod.to_string());
        }
    }
}

/// Runs one phase until its traffic is done or `cancel` fires; returns the seed-layout entry.
/// In a sharded session (`shard_phase`), `measured_at` is when its measured part starts on
/// every shard (its slot on the timeline).
pub(crate) async fn run_phase(
    env: &CellEnv,
    r: &RoutingEnv,
    (cell, measured_at): (usize, Option<Instant>),
    spec: &PhaseSpec,
    cancel: &CancellationToken,
) -> RoutingPhase {
    let slice = env.cfg.slice();
    let measured_at = match (slice.is_whole(), measured_at) {
        (true, _) => None,
        (false, Some(at)) => Some(at),
        (false, None) => return RoutingPhase::not_run(&spec.name, shard_phase::NO_SLOT),
    };
    let mut publisher = LivePublisher::new(cell, spec.name.clone(), slice.count_of(u64::from(r.cfg.count)) as u32);
    publisher.phase(env, Phase::Priming, None);
    let headers = route_headers(env, &spec.route);
    // Resets are server-wide: shard 0's alone, or they would wipe what it primed.
    let cache_reset = match slice.is_first() {
        true => reset_caches(env, r).await,
        false => Default::default(),
    };
    let setup = match (spec.scenario.primed && !cancel.is_cancelled(), measured_at) {
        (false, _) => None,
        (true, None) => Some(prime(env, r, spec, &headers, cancel).await),
        (true, Some(at)) => shard_phase::prime_first(env, r, spec, &headers, cancel, at).await,
    };
    shard_phase::say_owners_on_shard_0(env, spec);
    publisher.live_mut().families = initial_families(r, spec, setup.as_ref());
    let salt = r.prefix_set(&spec.name);
    let identity: Vec<usize> = (0..r.cfg.families as usize).collect();
    let fmap = setup.as_ref().map_or(&identity, |s| &s.family_map);
    let opts = BodyOptions {
        endpoint: env.cfg.endpoint,
        model: env.facts.model.clone(),
        max_tokens: r.cfg.output,
        ignore_eos: true,
    };
    let traffic = traffic(r, spec);
    let turns = super::conversation::turns_of(&traffic.iter().map(|t| t.1).collect::<Vec<_>>());
    // Arrival k of the one seeded schedule is shard k mod N's (src/load/slice.rs).
    let plan: Vec<Planned> = traffic
        .into_iter()
        .enumerate()
        .filter(|(i, _)| slice.takes(*i as u64))
        .map(|(i, (offset, f))| {
            let c = fmap.get(f as usize).copied().unwrap_or(f as usize);
            let prompt = match spec.scenario.conversation {
                true => super::conversation::turn_prompt(&r.families, c, &salt, f, turns[i]),
                false => r.families.prompt(c, &salt, &spec.name, i, f),
            };
            Planned { offset, body: BodyTemplate::new(&opts, &prompt).render(""), tag: f }
        })
        .collect();
    let span = plan.last().map(|p| p.offset);
    if let Some(at) = measured_at {
        shard_phase::await_measured(at, cancel).await;
    }
    let before = env.metrics_now().await;
    let live = Arc::new(LiveCounters::default());
    let first_token = Some(env.cfg.idle_timeout);
    let ctx = Arc::new(env.worker_ctx(live.clone(), r.cfg.output, Some(headers), first_token, 0));
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut lp = AttemptLoop::new(env, rx, live, publisher, FamilyTally { r });
    lp.baseline(before.clone());
    lp.phase(Phase::Measuring, span);
    let (start, started_at) = match measured_at {
        Some(at) => (at, unix_now() + at.saturating_duration_since(Instant::now()).as_secs_f64()),
        None => (Instant::now() + Duration::from_millis(20), unix_now()),
    };
    lp.run_until(run_open_loop(ctx, start, plan, tx, cancel.clone())).await;
    let end = Instant::now();
    // The closing scrape before the loop's last publish, so the panels end on the counters
    // the report keeps (the gateway panel read 89 of a phase's 91 requests at DONE).
    let after = env.metrics_now().await;
    let (samples, _) = lp.finish();
    let planned = slice.count_of(u64::from(r.cfg.count)) as u32;
    let measured = Measured { env, r, samples, planned };
    let mut entry = finish(measured, spec, setup, before, after, (start, end, started_at), cache_reset);
    entry.prefix_set = Some(salt);
    if !slice.is_first() {
        // Shard 0 reset the caches; this shard's report says nothing of it.
        entry.caches_reset = None;
    }
    if !slice.is_whole() {
        shard_phase::judge_prefix_cache_whole(&mut entry, &r.cfg, spec);
    }
    check_route(env, &mut entry);
    super::prefix::warn_if_warm(env, &entry);
    entry
}

/// Records the policy the gateway's counters say it applied, and warns when it is not the
/// asked route (a fixed-policy router ignores `routing-strategy`, docs/protocol.md §8.8).
fn check_route(env: &CellEnv, p: &mut RoutingPhase) {
    let Some(applied) = p.routing_counter_deltas.as_deref().and_then(super::policy::applied_policy) else { return };
    let ok = super::policy::route_matches(&p.route, &applied);
    if !ok {
        env.warn(format!(
            "{}: asked route `{}` was not applied; the gateway's counters show policy `{applied}`",
            p.phase, p.route
        ));
    }
    (p.applied_policy, p.route_applied) = (Some(applied), Some(ok));
}

type Span = (Instant, Instant, f64);

/// What the phase's traffic left: its samples, with the context to report them.
struct Measured<'a> {
    env: &'a CellEnv,
    r: &'a RoutingEnv,
    samples: Vec<RequestSample>,
    /// Requests of the schedule that are this process's.
    planned: u32,
}

fn finish(
    t: Measured<'_>,
    spec: &PhaseSpec,
    setup: Option<Setup>,
    before: Option<Arc<crate::metrics::poller::MetricsSnapshot>>,
    after: Option<Arc<crate::metrics::poller::MetricsSnapshot>>,
    (start, end, started_at): Span,
    cache_reset: std::collections::BTreeMap<String, String>,
) -> RoutingPhase {
    let history = t.env.poller.as_ref().map(|p| p.history());
    let window = history.as_ref().map(|h| window_stats(h, start, end));
    let n = super::early::early_count(t.r.cfg.count);
    let early = super::early::from_usage(&t.samples, n)
        .or_else(|| history.as_ref().and_then(|h| super::early::from_counters(h, &t.samples, n, start)));
    let routing_deltas =
        match (before.as_ref().and_then(|b| b.gateway.as_ref()), after.as_ref().and_then(|a| a.gateway.as_ref())) {
            (Some(a), Some(b)) => Some(deltas(&a.series, &b.series)),
            _ => None,
        };
    let data = PhaseData {
        spec,
        cfg: &t.r.cfg,
        repeat: t.r.families.repeat,
        setup: setup.as_ref(),
        samples: &t.samples,
        planned: t.planned,
        replicas: &t.r.replicas,
        before: before.as_deref(),
        after: after.as_deref(),
        window: window.as_ref(),
        routing_deltas,
        started_at,
        finished_at: started_at + end.saturating_duration_since(start).as_secs_f64(),
        cache_reset,
    };
    let mut entry = phase_entry(&data);
    entry.early_cache_hit_ratio = early;
    // A shard keeps the values behind its figures for `report merge` (src/report/phase_shard.rs).
    entry.shard_dists = t.env.cfg.shard.is_some().then(|| shard_phase::dists(&data));
    entry
}
