//! The per-replica part of a routing phase entry: requests, engine counters, peaks, families.

use super::attribution::outstanding_peaks;
use super::measured::PhaseData;
use crate::metrics::CounterDeltas;
use crate::report::phase::ReplicaRecord;
use std::collections::BTreeMap;

fn deltas(d: &PhaseData<'_>, name: &str) -> Option<CounterDeltas> {
    let a = d.before?.replica(name)?.sample.as_ref()?;
    let b = d.after?.replica(name)?.sample.as_ref()?;
    Some(b.delta(a))
}

fn ratio(hits: Option<f64>, queries: Option<f64>) -> Option<f64> {
    hits.zip(queries).filter(|(_, q)| *q > 0.0).map(|(h, q)| h / q)
}

/// Every replica's entry. With header attribution, `requests`, `family_counts` and the
/// outstanding peak come from the responses; otherwise `requests` is the engine's own count
/// of finished requests and per-family attribution is unavailable (null), never guessed.
pub(crate) fn replicas(
    d: &PhaseData<'_>,
    owners: &[Option<String>],
    by_header: bool,
) -> BTreeMap<String, ReplicaRecord> {
    let peaks = outstanding_peaks(d.samples, owners);
    let mut names: Vec<String> = d.replicas.iter().map(|r| r.name.clone()).collect();
    for o in owners.iter().flatten() {
        if !names.contains(o) {
            names.push(o.clone());
        }
    }
    let mut out = BTreeMap::new();
    for name in names {
        let delta = deltas(d, &name);
        let served: Vec<u32> =
            d.samples.iter().zip(owners).filter(|(_, o)| o.as_deref() == Some(&name)).map(|(s, _)| s.tag).collect();
        let mut families: BTreeMap<u32, u64> = BTreeMap::new();
        for f in &served {
            *families.entry(*f).or_default() += 1;
        }
        let engine_completed = delta.as_ref().and_then(|x| x.requests_finished);
        let requests = if by_header { Some(served.len() as f64) } else { engine_completed };
        let win = d.window.and_then(|w| w.replicas.iter().find(|r| r.name == name));
        let (hits, queries) =
            (delta.as_ref().and_then(|x| x.prefix_hits_tokens), delta.as_ref().and_then(|x| x.prefix_queries_tokens));
        let record = ReplicaRecord {
            requests: requests.map(|r| r as u64),
            engine_completed,
            cache_queries_tokens: queries,
            cache_hit_tokens: hits,
            cache_hit_ratio: ratio(hits, queries),
            waiting_peak: win.and_then(|w| w.waiting_peak),
            running_peak: win.and_then(|w| w.running_peak),
            family_counts: by_header.then_some(families),
            kv_usage_peak: win.and_then(|w| w.kv_usage_peak),
            preemptions: delta.as_ref().and_then(|x| x.preemptions),
            gateway_outstanding_at_selection_peak: by_header.then(|| peaks.get(&name).copied().unwrap_or(0)),
        };
        out.insert(name, record);
    }
    out
}

/// Prefix-cache hit ratio of the phase over all replicas (hit tokens / queried tokens).
pub(crate) fn phase_hit_ratio(d: &PhaseData<'_>) -> Option<f64> {
    let (mut h, mut q) = (0.0, 0.0);
    for r in d.replicas {
        if let Some(x) = deltas(d, &r.name) {
            h += x.prefix_hits_tokens.unwrap_or(0.0);
            q += x.prefix_queries_tokens.unwrap_or(0.0);
        }
    }
    (q > 0.0).then(|| h / q)
}
