//! Tests of the family-map pick, the candidate budget and the progress of an attempt.

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn owners(pairs: &[(&str, &[usize])]) -> Owners {
    pairs.iter().map(|(n, c)| (n.to_string(), c.to_vec())).collect()
}

fn names(n: usize) -> Vec<String> {
    (0..n).map(crate::sim::replica_name).collect()
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

#[test]
fn the_extra_family_goes_to_whoever_has_one_not_to_the_first_names() {
    // 8 families on 3 replicas: a has only 2, so b and c take the 3s.
    let o = owners(&[("a", &[0, 3]), ("b", &[1, 4, 6, 8]), ("c", &[2, 5, 7])]);
    assert_eq!(pick_balanced(&o, &["a".into(), "b".into(), "c".into()], 8).unwrap(), vec![0, 1, 2, 3, 4, 5, 6, 7]);
    // Fewer families than replicas: any 8 of 16 replicas, one family each.
    let n = names(16);
    let o: Owners = (0..8).map(|i| (n[15 - i].clone(), vec![i * 2, i * 2 + 1])).collect();
    assert_eq!(pick_balanced(&o, &n, 8).unwrap(), vec![0, 2, 4, 6, 8, 10, 12, 14]);
    let seven: Owners = o.into_iter().take(7).collect();
    assert_eq!(pick_balanced(&seven, &n, 8), None, "7 replicas cannot hold 8 families one each");
}

/// Random routing: how many candidates a balanced map took, or None within `budget`.
fn random_draws(rng: &mut StdRng, n: &[String], families: usize, budget: usize) -> Option<usize> {
    let mut o = Owners::new();
    for c in 0..budget {
        o.entry(n[rng.random_range(0..n.len())].clone()).or_default().push(c);
        if progress(&o, n, families, c + 1, false) == Progress::Balanced {
            return Some(c + 1);
        }
    }
    None
}

#[test]
fn random_routing_balances_within_the_budget_at_8_16_and_64_replicas() {
    let mut rng = StdRng::seed_from_u64(14);
    for (replicas, families) in [(8, 8), (8, 24), (16, 8), (16, 32), (64, 96), (64, 128)] {
        let n = names(replicas);
        let budget = candidates_per_attempt(16, families, replicas);
        let ok = (0..100).filter(|_| random_draws(&mut rng, &n, families, budget).is_some()).count();
        assert!(ok >= 95, "{replicas} replicas, {families} families, {budget} candidates: {ok}/100 balanced");
    }
}

#[test]
fn round_robin_balances_in_one_pass_at_64_replicas() {
    let n = names(64);
    for families in [64, 96, 128] {
        let mut o = Owners::new();
        let mut sent = 0;
        while progress(&o, &n, families, sent, false) != Progress::Balanced {
            o.entry(n[sent % 64].clone()).or_default().push(sent);
            sent += 1;
        }
        assert_eq!(sent, families, "no candidate wasted at {families} families");
        let map = pick_balanced(&o, &n, families).unwrap();
        assert_eq!(map, (0..families).collect::<Vec<_>>());
    }
}

#[test]
fn a_pile_on_one_replica_is_given_up_early_unless_spread() {
    let n = names(16);
    let piled: Owners = [(n[0].clone(), (0..32).collect())].into();
    assert_eq!(progress(&piled, &n, 32, 31, false), Progress::Continue);
    assert_eq!(progress(&piled, &n, 32, 32, false), Progress::Piled);
    assert_eq!(progress(&piled, &n, 32, 32, true), Progress::Continue);
    assert_eq!(pile_after(2), 8);
}

#[test]
fn the_budget_grows_with_the_fleet() {
    assert_eq!(candidates_per_attempt(16, 8, 1), 16);
    assert!(candidates_per_attempt(16, 8, 2) >= 16);
    assert!(candidates_per_attempt(16, 128, 64) >= 400, "{}", candidates_per_attempt(16, 128, 64));
    assert_eq!(candidates_per_attempt(1000, 8, 8), 1000, "the configured count is a floor");
}
