//! Prefix-cache routing experiments (`tests/fixtures/seed_002.json`): the same open-loop traffic sent through a
//! gateway under several routing strategies and cache scenarios, every request attributed to
//! the replica that served it, every replica's counters joined to the client's view.

pub mod attribution;
pub mod family_map;
pub mod phase;
pub mod plan;
pub mod priming;
pub mod prompts;
pub mod report;
pub mod report_replicas;
pub mod schedule;
pub mod section;
pub mod setup;

pub use crate::config::routing::{Arrival, RoutingConfig, Scenario};
use crate::load::client::ApiClient;
use attribution::ReplicaRef;
use prompts::Families;
pub use section::Routing;

/// What every phase of an experiment shares.
#[derive(Debug, Clone)]
pub struct RoutingEnv {
    /// Experiment settings.
    pub cfg: RoutingConfig,
    /// The prompt families.
    pub families: Families,
    /// The replicas, in the order given.
    pub replicas: Vec<ReplicaRef>,
    /// A client per replica base URL (cache resets).
    pub replica_clients: Vec<ApiClient>,
    /// Every phase of the experiment, in run order.
    pub phases: Vec<plan::PhaseSpec>,
}

impl RoutingEnv {
    /// The phase named `name`.
    pub fn phase(&self, name: &str) -> Option<plan::PhaseSpec> {
        self.phases.iter().find(|p| p.name == name).cloned()
    }
}
