//! The phases of a routing experiment: rounds x scenarios x routes, each round with its own
//! seed and its own order of routes (so order effects do not pass for strategy effects).

use crate::config::routing::{RoutingConfig, Scenario};

/// One phase to run.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseSpec {
    /// 1-based round.
    pub round: u32,
    /// Cache scenario.
    pub scenario: Scenario,
    /// Routing strategy.
    pub route: String,
    /// `r{round}-{scenario}-{route}`.
    pub name: String,
    /// Seed of this round.
    pub seed: u64,
}

/// Order of the routes in round `round` (1-based): odd rounds go forward, even rounds backward,
/// and every second pair of rounds starts one route later, so R rounds see up to 2R orders.
pub(crate) fn route_order(routes: &[String], round: u32) -> Vec<String> {
    if routes.is_empty() {
        return Vec::new();
    }
    let shift = ((round.saturating_sub(1) / 2) as usize) % routes.len();
    let mut order: Vec<String> = routes.iter().cycle().skip(shift).take(routes.len()).cloned().collect();
    if round.is_multiple_of(2) {
        order.reverse();
    }
    order
}

/// Every phase in run order: rounds, then scenarios, then routes.
pub(crate) fn phases(cfg: &RoutingConfig) -> Vec<PhaseSpec> {
    let mut out = Vec::new();
    for round in 1..=cfg.rounds {
        for scenario in &cfg.scenarios {
            for route in route_order(&cfg.routes, round) {
                let name = format!("r{round}-{}-{route}", scenario.name);
                out.push(PhaseSpec {
                    round,
                    scenario: scenario.clone(),
                    route,
                    name,
                    seed: cfg.seed.wrapping_add(u64::from(round)),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_match_the_seed_order() {
        let cfg = RoutingConfig::default();
        let p = phases(&cfg);
        assert_eq!(p.len(), 24);
        assert_eq!(p[0].name, "r1-cold-uniform-random");
        assert_eq!(p[2].name, "r1-cold-uniform-prefix-cache");
        assert_eq!(p[12].name, "r2-cold-uniform-prefix-cache");
        assert_eq!(p[14].name, "r2-cold-uniform-random");
        assert_eq!((p[0].seed, p[12].seed), (102, 103));
    }

    #[test]
    fn later_rounds_rotate() {
        let routes: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        assert_eq!(route_order(&routes, 1), ["a", "b", "c"]);
        assert_eq!(route_order(&routes, 2), ["c", "b", "a"]);
        assert_eq!(route_order(&routes, 3), ["b", "c", "a"]);
        assert_eq!(route_order(&routes, 4), ["a", "c", "b"]);
        assert!(route_order(&[], 1).is_empty());
    }
}
