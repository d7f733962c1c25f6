//! Tests of the routing part of `report merge` (`routing.rs`): counts add, every percentile
//! and the owner hit ratio come back from the shards exactly as from the whole phase, the
//! server's figures are one shard's.

use super::routing::merge_phase;
use crate::experiment::routing::owner_hits::owner_hit_ratio;
use crate::report::phase::{Attribution, FamilyRecord, PhaseLatency, RoutingPhase};
use crate::report::phase_shard::PhaseShardDists;
use crate::report::shard_dists::HeldValues;
use crate::report::status::AttemptStatus;
use crate::stats::Samples;
use proptest::prelude::*;
use std::collections::BTreeMap;

const NAMES: [&str; 3] = ["pod-a", "pod-b", "pod-c"];

/// One request: TTFT (s), family, index of the replica that served it.
type Req = (f64, u32, usize);

fn push(h: &mut HeldValues, v: f64) {
    h.count += 1;
    h.values.push(v);
}

fn pcts(values: &[f64]) -> PhaseLatency {
    let p = values.iter().copied().collect::<Samples>().p50_p95_p99();
    PhaseLatency { p50: p.map(|p| p.p50), p95: p.map(|p| p.p95), p99: p.map(|p| p.p99) }
}

/// A phase entry of `reqs` as a shard writes it; `owners` on the shard that primed.
fn phase_of(reqs: &[Req], owners: &BTreeMap<u32, Vec<String>>, finished_at: f64) -> RoutingPhase {
    let mut p = RoutingPhase {
        phase: "r1-hot90-prefix-cache".into(),
        attribution: Attribution::ResponseHeader,
        status: AttemptStatus::Measured,
        started_at: 100.0,
        finished_at,
        initial_prefix_owners: owners.clone(),
        ..RoutingPhase::default()
    };
    let mut d = PhaseShardDists::default();
    let mut fam_ttft: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for &(ttft, f, r) in reqs {
        push(&mut d.ttft_s, ttft);
        push(&mut d.e2e_s, ttft * 2.0);
        push(d.family_ttft_s.entry(f).or_default(), ttft);
        fam_ttft.entry(f).or_default().push(ttft);
        let rec = p.replicas.entry(NAMES[r].to_string()).or_default();
        *rec.requests.get_or_insert(0) += 1;
        *rec.family_counts.get_or_insert_with(BTreeMap::new).entry(f).or_default() += 1;
    }
    let all: Vec<f64> = reqs.iter().map(|r| r.0).collect();
    (p.ttft, p.e2e) = (pcts(&all), pcts(&all.iter().map(|t| t * 2.0).collect::<Vec<_>>()));
    p.families = fam_ttft
        .into_iter()
        .map(|(f, v)| {
            (
                f,
                FamilyRecord {
                    requests: v.len() as u64,
                    ttft_p95: v.into_iter().collect::<Samples>().percentile(95.0),
                },
            )
        })
        .collect();
    let n = reqs.len() as u64;
    (p.planned, p.requests, p.success, p.gateway_verified_requests) = (n as u32, n, n, n);
    p.owner_hit_ratio = owner_hit_ratio(&p.replicas, owners);
    p.shard_dists = Some(d);
    p
}

fn owners() -> BTreeMap<u32, Vec<String>> {
    (0..4).map(|f| (f, vec![NAMES[f as usize % 2].to_string()])).collect()
}

#[test]
fn counts_add_owner_hits_use_shard_0s_map_and_the_server_figures_are_the_last_shards() {
    let own = owners();
    let zero = phase_of(&[(0.1, 0, 0), (0.2, 1, 1), (0.3, 0, 1)], &own, 110.0);
    let mut one = phase_of(&[(0.4, 0, 0), (0.5, 1, 1), (0.6, 2, 1)], &BTreeMap::new(), 111.0);
    one.replicas.get_mut("pod-a").unwrap().engine_completed = Some(99.0);
    one.cache_hit_ratio = Some(0.75);
    assert_eq!(one.owner_hit_ratio, None, "a shard other than 0 has no owner map");
    let mut notes = Vec::new();
    let m = merge_phase(&[(0, &zero), (1, &one)], 2, &mut notes);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!((m.requests, m.success, m.planned, m.gateway_verified_requests), (6, 6, 6, 6));
    let a = &m.replicas["pod-a"];
    assert_eq!((a.requests, a.family_counts.clone()), (Some(2), Some(BTreeMap::from([(0, 2)]))));
    assert_eq!(m.replicas["pod-b"].family_counts, Some(BTreeMap::from([(0, 1), (1, 2), (2, 1)])));
    // Owners: family 0 pod-a, 1 pod-b, 2 pod-a. Hits: a/0 x2, b/1 x2 of 6.
    assert_eq!(m.owner_hit_ratio, Some(4.0 / 6.0));
    assert_eq!((a.engine_completed, m.cache_hit_ratio), (Some(99.0), Some(0.75)), "shard 1 ended last");
    assert_eq!(m.initial_prefix_owners, own, "shard 0's map");
    assert_eq!(m.ttft, pcts(&[0.1, 0.2, 0.3, 0.4, 0.5, 0.6]));
    assert_eq!(m.families[&0].requests, 3);
    assert_eq!((m.started_at, m.finished_at, m.elapsed), (100.0, 111.0, 11.0));
    assert!(m.shard_dists.is_none(), "a merged phase is no shard's");
}

#[test]
fn without_a_shards_values_the_percentiles_are_left_out_never_averaged() {
    let zero = phase_of(&[(0.1, 0, 0)], &owners(), 110.0);
    let mut one = phase_of(&[(0.4, 0, 0)], &BTreeMap::new(), 110.0);
    one.shard_dists = None;
    let mut notes = Vec::new();
    let m = merge_phase(&[(0, &zero), (1, &one)], 3, &mut notes);
    assert_eq!((m.ttft, m.families[&0].ttft_p95), (PhaseLatency::default(), None));
    assert_eq!(m.requests, 2);
    assert!(notes.iter().any(|n| n.contains("only shard 0, 1 of 3")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("latency percentiles left out")), "{notes:?}");
}

proptest! {
    /// Any phase dealt round robin over 1-5 shards (arrival k on shard k mod N, as a sharded
    /// phase sends it) merges back to the whole phase's counts, per-replica family counts,
    /// owner hit ratio and TTFT, E2E and per-family TTFT percentiles, exactly.
    #[test]
    fn a_phase_split_over_shards_merges_back_to_the_whole(
        reqs in proptest::collection::vec((0.001f64..30.0, 0u32..5, 0usize..3), 1..120),
        count in 1u32..6,
    ) {
        let (own, none) = (owners(), BTreeMap::new());
        let whole = phase_of(&reqs, &own, 120.0);
        let parts: Vec<RoutingPhase> = (0..count)
            .map(|i| {
                let mine: Vec<Req> = reqs.iter().enumerate().filter(|(k, _)| *k as u32 % count == i).map(|(_, r)| *r).collect();
                phase_of(&mine, if i == 0 { &own } else { &none }, 110.0 + f64::from(i))
            })
            .collect();
        let entries: Vec<(u32, &RoutingPhase)> = parts.iter().enumerate().map(|(i, p)| (i as u32, p)).collect();
        let m = merge_phase(&entries, count as usize, &mut Vec::new());
        prop_assert_eq!(m.requests, whole.requests);
        prop_assert_eq!(m.owner_hit_ratio, whole.owner_hit_ratio);
        prop_assert_eq!(&m.ttft, &whole.ttft);
        prop_assert_eq!(&m.e2e, &whole.e2e);
        prop_assert_eq!(&m.families, &whole.families);
        for name in NAMES {
            let (a, b) = (m.replicas.get(name), whole.replicas.get(name));
            prop_assert_eq!(a.and_then(|r| r.family_counts.clone()), b.and_then(|r| r.family_counts.clone()));
            prop_assert_eq!(a.and_then(|r| r.requests), b.and_then(|r| r.requests));
        }
    }
}
