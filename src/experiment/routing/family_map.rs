//! Picking which primed candidate prefixes become the phase's families, so that initial
//! ownership is balanced across replicas.

use std::collections::BTreeMap;

/// Candidates each replica served while priming (candidate indices, ascending), by replica.
pub type Owners = BTreeMap<String, Vec<usize>>;

/// How many families each of `replicas` replicas should own: as equal as possible, the
/// first replicas (in name order) taking one more when it does not divide.
pub fn quotas(families: usize, replicas: usize) -> Vec<usize> {
    let r = replicas.max(1);
    (0..r).map(|i| families / r + usize::from(i < families % r)).collect()
}

/// Family f maps to the f-th smallest chosen candidate, where each replica contributes its
/// first quota candidates. None when some replica owns fewer candidates than its quota.
pub fn pick_balanced(owners: &Owners, replicas: &[String], families: usize) -> Option<Vec<usize>> {
    let mut chosen = Vec::with_capacity(families);
    for (name, quota) in replicas.iter().zip(quotas(families, replicas.len())) {
        let owned = owners.get(name).map(Vec::as_slice).unwrap_or_default();
        if owned.len() < quota {
            return None;
        }
        chosen.extend_from_slice(&owned[..quota]);
    }
    chosen.sort_unstable();
    Some(chosen)
}

/// The best pick when no balanced one exists: the first `families` candidates that were
/// served at all, in candidate order.
pub fn pick_any(owners: &Owners, families: usize) -> Vec<usize> {
    let mut all: Vec<usize> = owners.values().flatten().copied().collect();
    all.sort_unstable();
    all.truncate(families);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owners(pairs: &[(&str, &[usize])]) -> Owners {
        pairs.iter().map(|(n, c)| (n.to_string(), c.to_vec())).collect()
    }

    #[test]
    fn reproduces_the_seed_pick() {
        // tests/fixtures/seed_002.json, r2-hot90-random: B owned 0,1,2,3,5,7,8,14,15 and A owned 4,6,9..13.
        let o = owners(&[("L20-B", &[0, 1, 2, 3, 5, 7, 8, 14, 15]), ("L20-A", &[4, 6, 9, 10, 11, 12, 13])]);
        let map = pick_balanced(&o, &["L20-A".into(), "L20-B".into()], 8).unwrap();
        assert_eq!(map, vec![0, 1, 2, 3, 4, 6, 9, 10]);
    }

    #[test]
    fn unbalanced_ownership_has_no_pick() {
        let o = owners(&[("a", &[0, 1, 2, 3, 4, 5, 6]), ("b", &[7, 8, 9])]);
        assert_eq!(pick_balanced(&o, &["a".into(), "b".into()], 8), None);
        assert_eq!(pick_any(&o, 8), vec![0, 1, 2, 3, 4, 5, 6, 7]);
    }

    #[test]
    fn quotas_spread_the_remainder() {
        assert_eq!(quotas(8, 3), vec![3, 3, 2]);
        assert_eq!(quotas(8, 2), vec![4, 4]);
        let o = owners(&[("a", &[0, 3, 6]), ("b", &[1, 4, 7]), ("c", &[2, 5])]);
        assert_eq!(pick_balanced(&o, &["a".into(), "b".into(), "c".into()], 8).unwrap(), (0..8).collect::<Vec<_>>());
    }
}
