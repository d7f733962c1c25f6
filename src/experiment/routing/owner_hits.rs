//! How often a phase's requests reached the replica that owned their family's prefix when
//! the traffic started (`RoutingPhase.owner_hit_ratio`): per replica, the requests it served
//! of each family (header attribution) against the priming's owner map. Pure, so a phase and
//! `report merge` (every shard's counts against shard 0's map) compute it alike.

use crate::report::phase::ReplicaRecord;
use std::collections::BTreeMap;

/// Requests of families with an initial owner, and how many of them their owner served.
pub(crate) fn owner_hits(
    replicas: &BTreeMap<String, ReplicaRecord>,
    owners: &BTreeMap<u32, Vec<String>>,
) -> (u64, u64) {
    let (mut hits, mut total) = (0, 0);
    for (name, r) in replicas {
        for (f, n) in r.family_counts.iter().flatten() {
            let Some(own) = owners.get(f).filter(|o| !o.is_empty()) else { continue };
            total += n;
            hits += if own.contains(name) { *n } else { 0 };
        }
    }
    (hits, total)
}

/// [`owner_hits`] as a ratio, None when no request of an owned family was attributed.
pub(crate) fn owner_hit_ratio(
    replicas: &BTreeMap<String, ReplicaRecord>,
    owners: &BTreeMap<u32, Vec<String>>,
) -> Option<f64> {
    let (hits, total) = owner_hits(replicas, owners);
    (total > 0).then(|| hits as f64 / total as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(counts: &[(u32, u64)]) -> ReplicaRecord {
        ReplicaRecord { family_counts: Some(counts.iter().copied().collect()), ..ReplicaRecord::default() }
    }

    #[test]
    fn requests_count_as_hits_on_their_familys_owner_only() {
        let replicas = BTreeMap::from([
            ("a".to_string(), served(&[(0, 3), (1, 1)])),
            ("b".to_string(), served(&[(1, 4), (2, 5)])),
        ]);
        let owners = BTreeMap::from([(0, vec!["a".to_string()]), (1, vec!["b".to_string()]), (2, vec![])]);
        assert_eq!(owner_hits(&replicas, &owners), (7, 8), "family 2 has no owner: not counted");
        assert_eq!(owner_hit_ratio(&replicas, &owners), Some(7.0 / 8.0));
        assert_eq!(owner_hit_ratio(&replicas, &BTreeMap::new()), None, "not primed");
        let no_header = BTreeMap::from([("a".to_string(), ReplicaRecord::default())]);
        assert_eq!(owner_hit_ratio(&no_header, &owners), None, "no family counts: unknown, never guessed");
    }
}
