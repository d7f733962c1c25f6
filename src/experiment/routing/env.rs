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
    /// Per replica (same order), the cache-reset path preflight found working, if any.
    pub reset_paths: Vec<Option<&'static str>>,
    /// Drawn once per session, so no two sessions share a prefix set either.
    pub nonce: u64,
}

impl RoutingEnv {
    /// The phase named `name`.
    pub fn phase(&self, name: &str) -> Option<PhaseSpec> {
        self.phases.iter().find(|p| p.name == name).cloned()
    }

    /// The prefix set of phase `name`: the session's nonce and the phase's place in the run,
    /// so no phase of the session sends a prefix an earlier one sent.
    pub fn prefix_set(&self, name: &str) -> String {
        let index = self.phases.iter().position(|p| p.name == name).unwrap_or(self.phases.len());
        format!("{:08x}-{index}", self.nonce & 0xffff_ffff)
    }
}
