//! Settings of a prefix-cache routing experiment: scenarios, arrivals, routes and sizes.

use crate::stats::Slo;
use std::fmt;
use std::str::FromStr;

/// A cache scenario: how requests spread over prompt families and whether caches are primed.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Name (`cold-uniform`, `warm-uniform`, `hot50`, `hot90`, `hotNN`).
    pub name: String,
    /// Fraction of requests sent to family 0, 0..1.
    pub hot_fraction: f64,
    /// Prime the caches with candidate prefixes before the phase.
    pub primed: bool,
    /// Each family is a conversation: its k-th request of the phase is turn k, holding the
    /// earlier turns (`experiment::routing::conversation`).
    pub conversation: bool,
}

impl FromStr for Scenario {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let name = s.trim().to_ascii_lowercase();
        let scenario =
            |hot_fraction, primed| Ok(Scenario { name: name.clone(), hot_fraction, primed, conversation: false });
        match name.as_str() {
            "conversation" => Ok(Scenario { name: name.clone(), hot_fraction: 0.0, primed: false, conversation: true }),
            "cold-uniform" => scenario(0.0, false),
            "warm-uniform" => scenario(0.0, true),
            hot if hot.starts_with("hot") => match hot[3..].parse::<u32>() {
                Ok(p) if (1..=100).contains(&p) => scenario(f64::from(p) / 100.0, true),
                _ => Err(format!("`{s}`: hot scenarios are hotNN with NN a percentage, e.g. hot90")),
            },
            _ => Err(format!(
                "unknown scenario `{s}` (known: cold-uniform, warm-uniform, hot50, hot90, hotNN, conversation)"
            )),
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// How arrivals are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Arrival {
    /// Exponential gaps at the mean rate (a Poisson process), seeded.
    #[default]
    Poisson,
    /// Exactly 1/rps apart.
    Constant,
}

/// Settings of a routing experiment.
#[derive(Debug, Clone)]
pub struct RoutingConfig {
    /// Routing strategies, sent as the `routing-strategy` header.
    pub routes: Vec<String>,
    /// Cache scenarios.
    pub scenarios: Vec<Scenario>,
    /// Rounds; each has its own seed and order of routes.
    pub rounds: u32,
    /// Requests per phase.
    pub count: u32,
    /// Mean arrival rate, requests/s.
    pub rps: f64,
    /// Arrival process.
    pub arrival: Arrival,
    /// Output tokens per request.
    pub output: u64,
    /// Target length of a family prefix, tokens.
    pub prompt_tokens: u64,
    /// Prompt families.
    pub families: u32,
    /// Candidate prefixes sent per priming attempt, at least
    /// (`family_map::candidates_per_attempt` raises it for a fleet).
    pub priming_candidates: u32,
    /// Service-level objective that makes a request `good`: the session's
    /// (`RunConfig::slo`), set from it when the experiment is set up.
    pub slo: Slo,
    /// Base seed; round r uses `seed + r`.
    pub seed: u64,
    /// The gateway's Prometheus page.
    pub gateway_metrics: Option<String>,
    /// Priming attempts before settling for an unbalanced family map.
    pub max_setup_attempts: u32,
    /// Sharded sessions (`--priming-slot`): how long shard 0 has for a phase's cache resets
    /// and priming before the measured part (None: the bound `routing::shard_slot` computes).
    pub priming_slot: Option<std::time::Duration>,
}

impl Default for RoutingConfig {
    fn default() -> Self {
        let scenarios =
            ["cold-uniform", "warm-uniform", "hot50", "hot90"].iter().filter_map(|s| s.parse().ok()).collect();
        Self {
            routes: vec!["random".into(), "least-request".into(), "prefix-cache".into()],
            scenarios,
            rounds: 2,
            count: 96,
            rps: 1.6,
            arrival: Arrival::Poisson,
            output: 128,
            prompt_tokens: 5000,
            families: 8,
            priming_candidates: 16,
            slo: Slo { ttft: Some(std::time::Duration::from_secs(2)), tpot: None, e2e: None },
            seed: 101,
            gateway_metrics: None,
            max_setup_attempts: 3,
            priming_slot: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_parse() {
        let hot: Scenario = "hot90".parse().unwrap();
        assert_eq!((hot.hot_fraction, hot.primed), (0.9, true));
        let cold: Scenario = "cold-uniform".parse().unwrap();
        assert_eq!((cold.hot_fraction, cold.primed), (0.0, false));
        assert!("warm-uniform".parse::<Scenario>().unwrap().primed);
        assert!("hot0".parse::<Scenario>().is_err());
        assert!("lukewarm".parse::<Scenario>().is_err());
        assert_eq!(RoutingConfig::default().scenarios.len(), 4);
    }
}
