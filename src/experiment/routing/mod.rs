//! Prefix-cache routing experiments (`tests/fixtures/seed_002.json`): the same open-loop traffic sent through a
//! gateway under several routing strategies and cache scenarios, every request attributed to
//! the replica that served it, every replica's counters joined to the client's view.

pub mod attribution;
pub mod early;
pub mod env;
pub mod family_map;
pub mod headline;
pub mod measured;
pub mod phase;
pub mod plan;
pub mod policy;
pub mod preflight;
pub mod priming;
pub mod prompts;
pub mod report;
pub mod report_replicas;
pub mod schedule;
pub mod section;
pub mod setup;
pub mod spread;

pub use crate::config::routing::{Arrival, RoutingConfig, Scenario};
pub use env::RoutingEnv;
pub use section::Routing;
pub use setup::RoutingSetup;
