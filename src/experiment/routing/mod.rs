//! Prefix-cache routing experiments (`tests/fixtures/seed_002.json`): the same open-loop traffic sent through a
//! gateway under several routing strategies and cache scenarios, every request attributed to
//! the replica that served it, every replica's counters joined to the client's view.

pub(crate) mod attribution;
pub(crate) mod conversation;
pub(crate) mod early;
pub(crate) mod env;
pub(crate) mod family_map;
pub(crate) mod headline;
pub(crate) mod measured;
pub(crate) mod owner_hits;
pub(crate) mod phase;
pub(crate) mod plan;
pub(crate) mod policy;
pub(crate) mod prefix;
pub(crate) mod preflight;
pub(crate) mod priming;
pub(crate) mod prompts;
pub(crate) mod report;
pub(crate) mod report_replicas;
pub(crate) mod schedule;
pub(crate) mod section;
pub(crate) mod setup;
pub(crate) mod shard_phase;
pub(crate) mod shard_slot;
pub(crate) mod spread;

pub use crate::config::routing::{Arrival, RoutingConfig, Scenario};
pub use env::RoutingEnv;
pub use section::Routing;
pub use setup::RoutingSetup;
