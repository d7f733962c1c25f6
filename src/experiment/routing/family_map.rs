//! Picking which primed candidate prefixes become the phase's families, so that initial
//! ownership is balanced across replicas, and how many candidates an attempt may spend on it.
//!
//! Balanced means every replica owns `families / replicas` families, rounded down or up;
//! with fewer families than replicas, each family has a replica of its own. The replicas
//! that own one more are those that served the most candidates (ties: name order), so no
//! particular replica has to win the router's draw.

use std::collections::BTreeMap;

/// Candidates each replica served while priming (candidate indices, ascending), by replica.
pub(crate) type Owners = BTreeMap<String, Vec<usize>>;

/// How many families each of `replicas` replicas should own: as equal as possible, the
/// first replicas (in name order) taking one more when it does not divide.
#[cfg(test)]
pub(crate) fn quotas(families: usize, replicas: usize) -> Vec<usize> {
    let r = replicas.max(1);
    (0..r).map(|i| families / r + usize::from(i < families % r)).collect()
}

/// The quota of each replica given who served what: `families / R` each, and one more for
/// the `families % R` replicas that served the most candidates (ties to name order).
fn quotas_by_supply(owners: &Owners, replicas: &[String], families: usize) -> Vec<usize> {
    let r = replicas.len().max(1);
    let supply = |i: usize| owners.get(&replicas[i]).map_or(0, Vec::len);
    let mut order: Vec<usize> = (0..replicas.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(supply(i)), i));
    let mut q = vec![families / r; replicas.len()];
    for &i in order.iter().take(families % r) {
        q[i] += 1;
    }
    q
}

/// Family f maps to the f-th smallest chosen candidate, where each replica contributes its
/// first quota candidates. None when some replica owns fewer candidates than its quota.
pub(crate) fn pick_balanced(owners: &Owners, replicas: &[String], families: usize) -> Option<Vec<usize>> {
    let mut chosen = Vec::with_capacity(families);
    for (name, quota) in replicas.iter().zip(quotas_by_supply(owners, replicas, families)) {
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
pub(crate) fn pick_any(owners: &Owners, families: usize) -> Vec<usize> {
    let mut all: Vec<usize> = owners.values().flatten().copied().collect();
    all.sort_unstable();
    all.truncate(families);
    all
}

/// Candidates one priming attempt may send: at least `configured` (`--priming-candidates`),
/// and enough that a router spreading them at random fills every quota with high
/// probability (R x (ln R + 2 quota + 3): the coupon collector's tail leaves about 1% of
/// attempts short). An
/// attempt stops as soon as a balanced map exists, so the bound costs only when needed.
pub(crate) fn candidates_per_attempt(configured: usize, families: usize, replicas: usize) -> usize {
    let r = replicas.max(1);
    let quota = families.div_ceil(r);
    let draws = (r as f64 * ((r as f64).ln() + 2.0 * quota as f64 + 3.0)).ceil() as usize;
    configured.max(families).max(if r > 1 { draws } else { families })
}

/// Where a priming attempt stands after `sent` candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    /// A balanced map exists: stop priming.
    Balanced,
    /// Every attributed candidate landed on one replica of several, `sent` is large enough
    /// to tell (a least-loaded router given one request at a time, docs/protocol.md §8.10):
    /// more of the same will not balance; the next attempt spreads with ballast streams.
    Piled,
    /// Keep priming.
    Continue,
}

/// Candidates after which a round that put all on one replica counts as [`Progress::Piled`].
pub(crate) fn pile_after(replicas: usize) -> usize {
    (2 * replicas).max(8)
}

/// The [`Progress`] of an attempt that sent `sent` candidates (`spread`: it already uses
/// ballast streams, so piling up is not given up on early).
pub(crate) fn progress(owners: &Owners, replicas: &[String], families: usize, sent: usize, spread: bool) -> Progress {
    if pick_balanced(owners, replicas, families).is_some() {
        return Progress::Balanced;
    }
    if !spread && replicas.len() > 1 && owners.len() == 1 && sent >= pile_after(replicas.len()) {
        return Progress::Piled;
    }
    Progress::Continue
}

#[cfg(test)]
#[path = "family_map_tests.rs"]
mod tests;
