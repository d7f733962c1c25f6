//! What every phase of a routing experiment shares: settings, prompt families, replicas, phases.

use super::attribution::ReplicaRef;
use super::plan::PhaseSpec;
use super::prompts::Families;
use crate::config::routing::RoutingConfig;
use crate::load::client::ApiClient;

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
    pub phases: Vec<PhaseSpec>,
}

impl RoutingEnv {
    /// The phase named `name`.
    pub fn phase(&self, name: &str) -> Option<PhaseSpec> {
        self.phases.iter().find(|p| p.name == name).cloned()
    }
}
