//! The report entry of one routing phase, in the field names and nesting of `tests/fixtures/seed_002.json`.
//! Times in this layout are seconds (as in the seed), not milliseconds.

use super::RoutingConfig;
use super::attribution::{ReplicaRef, attribute};
use super::family_map::Owners;
use super::plan::PhaseSpec;
use crate::load::sample::{RequestSample, TokenSource};
use crate::metrics::gateway::CounterDelta;
use crate::metrics::poller::MetricsSnapshot;
use crate::metrics::window::WindowStats;
use crate::stats::{Samples, Slo};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// How the phase's caches were prepared.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Setup {
    /// Priming attempts used (1 = the first pick was balanced).
    pub attempt: u32,
    /// Family -> candidate.
    pub family_map: Vec<usize>,
    /// Candidates each replica served while priming.
    pub owners: Owners,
    /// A balanced pick was found.
    pub balanced: bool,
}

/// Everything the phase measured.
pub struct PhaseData<'a> {
    /// The phase.
    pub spec: &'a PhaseSpec,
    /// Experiment settings.
    pub cfg: &'a RoutingConfig,
    /// Times each family block is repeated.
    pub repeat: usize,
    /// Priming result, for warm and hot scenarios.
    pub setup: Option<&'a Setup>,
    /// Samples of the measured traffic (tag = family).
    pub samples: &'a [RequestSample],
    /// Requests planned.
    pub planned: u32,
    /// The replicas.
    pub replicas: &'a [ReplicaRef],
    /// Metrics round before the measured traffic.
    pub before: Option<&'a MetricsSnapshot>,
    /// Metrics round after it.
    pub after: Option<&'a MetricsSnapshot>,
    /// Peaks and averages over the traffic.
    pub window: Option<&'a WindowStats>,
    /// Gateway counter changes (None without gateway metrics).
    pub routing_deltas: Option<Vec<CounterDelta>>,
    /// Unix seconds at the first send and after the last response.
    pub started_at: f64,
    /// Unix seconds after the last response.
    pub finished_at: f64,
    /// How each replica's prefix cache was reset.
    pub cache_reset: BTreeMap<String, String>,
}

fn pcts(s: &mut Samples) -> Value {
    match s.p50_p95_p99() {
        Some(p) => json!({"p50": p.p50, "p95": p.p95, "p99": p.p99}),
        None => json!({"p50": null, "p95": null, "p99": null}),
    }
}

fn secs(d: std::time::Duration) -> f64 {
    d.as_secs_f64()
}

/// `config` of the seed layout.
fn config(d: &PhaseData<'_>) -> Value {
    let s = d.spec;
    let mut c = json!({
        "repeat": d.repeat, "output": d.cfg.output, "count": d.cfg.count, "rps": d.cfg.rps, "seed": s.seed,
        "phase": s.name, "route": s.route, "scenario": s.scenario.name, "hot_fraction": s.scenario.hot_fraction,
    });
    if let (Some(setup), Some(obj)) = (d.setup, c.as_object_mut()) {
        let fmap: Map<String, Value> =
            setup.family_map.iter().enumerate().map(|(f, c)| (f.to_string(), json!(c))).collect();
        obj.insert("setup_attempt".into(), json!(setup.attempt));
        obj.insert("family_map".into(), Value::Object(fmap));
        obj.insert("priming_candidates".into(), json!(d.cfg.priming_candidates));
        obj.insert("initial_owners".into(), json!(setup.owners));
        obj.insert("balanced".into(), json!(setup.balanced));
        if s.scenario.hot_fraction > 0.0 {
            obj.insert("hot_initial_replica".into(), json!(initial_owner(setup, 0)));
        }
    }
    c
}

fn initial_owner(setup: &Setup, family: usize) -> Option<String> {
    let cand = *setup.family_map.get(family)?;
    setup.owners.iter().find(|(_, cs)| cs.contains(&cand)).map(|(n, _)| n.clone())
}

/// Client-side totals: counts, good, latency distributions, families.
fn client_side(d: &PhaseData<'_>, slo: &Slo, obj: &mut Map<String, Value>) {
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
    let families: Map<String, Value> = fam
        .iter_mut()
        .map(|(f, (n, t))| (f.to_string(), json!({"requests": n, "ttft_p95": t.percentile(95.0)})))
        .collect();
    obj.insert("planned".into(), json!(d.planned));
    obj.insert("requests".into(), json!(success + errors + dropped));
    obj.insert("success".into(), json!(success));
    obj.insert("errors".into(), json!(errors));
    obj.insert("dropped".into(), json!(dropped));
    obj.insert("good".into(), json!(good));
    obj.insert("output_tokens_per_second".into(), json!(if elapsed > 0.0 { tokens as f64 / elapsed } else { 0.0 }));
    obj.insert("ttft".into(), pcts(&mut ttft));
    obj.insert("tpot".into(), pcts(&mut tpot));
    obj.insert("e2e".into(), pcts(&mut e2e));
    obj.insert("families".into(), Value::Object(families));
}

/// The phase entry. `status` is `measured` unless the runner says otherwise.
pub fn phase_entry(d: &PhaseData<'_>) -> Value {
    let mut obj = Map::new();
    obj.insert("phase".into(), json!(d.spec.name));
    obj.insert("scenario".into(), json!(d.spec.scenario.name));
    obj.insert("route".into(), json!(d.spec.route));
    obj.insert("config".into(), config(d));
    obj.insert("started_at".into(), json!(d.started_at));
    obj.insert("finished_at".into(), json!(d.finished_at));
    obj.insert("elapsed".into(), json!((d.finished_at - d.started_at).max(0.0)));
    client_side(d, &d.cfg.slo, &mut obj);
    let owners = attribute(d.samples, d.replicas);
    let verified = owners.iter().filter(|o| o.is_some()).count();
    let by_header = verified > 0;
    obj.insert("replicas".into(), super::report_replicas::replicas(d, &owners, by_header));
    obj.insert("cache_hit_ratio".into(), super::report_replicas::phase_hit_ratio(d));
    obj.insert("input_tokens_range".into(), input_range(d.samples));
    obj.insert("initial_prefix_owners".into(), initial_prefix_owners(d));
    obj.insert("routing_counter_deltas".into(), d.routing_deltas.as_ref().map_or(Value::Null, |v| json!(v)));
    obj.insert("gateway_verified_requests".into(), json!(verified));
    extras(d, by_header, &mut obj);
    Value::Object(obj)
}

fn input_range(samples: &[RequestSample]) -> Value {
    let p: Vec<u64> = samples.iter().filter_map(|s| s.prompt_tokens).collect();
    match (p.iter().min(), p.iter().max()) {
        (Some(a), Some(b)) => json!([a, b]),
        _ => Value::Null,
    }
}

fn initial_prefix_owners(d: &PhaseData<'_>) -> Value {
    let Some(setup) = d.setup else { return json!({}) };
    let m: Map<String, Value> = (0..setup.family_map.len())
        .map(|f| (f.to_string(), json!(initial_owner(setup, f).into_iter().collect::<Vec<_>>())))
        .collect();
    Value::Object(m)
}

/// Fields beyond the seed's: attribution source, errors by kind, schedule lag, token sources.
fn extras(d: &PhaseData<'_>, by_header: bool, obj: &mut Map<String, Value>) {
    let mut kinds: BTreeMap<&str, u64> = BTreeMap::new();
    let mut lag = Samples::new();
    let mut sources = BTreeSet::new();
    for s in d.samples {
        if let Some(k) = s.error_kind() {
            *kinds.entry(k.as_str()).or_default() += 1;
        }
        if let Some(l) = s.schedule_lag() {
            lag.push(secs(l) * 1e3);
        }
        if s.token_source != TokenSource::None {
            sources.insert(s.token_source.as_str());
        }
    }
    let attribution = if by_header {
        "response_header"
    } else if d.after.is_some() {
        "counter_deltas"
    } else {
        "unavailable"
    };
    let (success, errors) = (obj.get("success").and_then(Value::as_u64), obj.get("errors").and_then(Value::as_u64));
    let status = if success == Some(0) && errors.unwrap_or(0) > 0 { "errored" } else { "measured" };
    obj.insert("status".into(), json!(status));
    obj.insert("attribution".into(), json!(attribution));
    obj.insert("family_attribution_available".into(), json!(by_header));
    obj.insert("errors_by_kind".into(), json!(kinds));
    obj.insert("schedule_lag_ms".into(), json!(lag.summary()));
    obj.insert("token_sources".into(), json!(sources));
    obj.insert("cache_reset".into(), json!(d.cache_reset));
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
