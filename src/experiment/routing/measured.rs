//! What one routing phase measured, as its report builders read it.

use super::attribution::ReplicaRef;
use super::family_map::Owners;
use super::plan::PhaseSpec;
use crate::config::routing::RoutingConfig;
use crate::load::sample::RequestSample;
use crate::metrics::gateway::CounterDelta;
use crate::metrics::poller::MetricsSnapshot;
use crate::metrics::window::WindowStats;
use std::collections::BTreeMap;

/// How the phase's caches were prepared.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Setup {
    /// Priming attempts used (1 = the first pick was balanced).
    pub attempt: u32,
    /// Family -> candidate.
    pub family_map: Vec<usize>,
    /// Candidates each replica served while priming.
    pub owners: Owners,
    /// A balanced pick was found.
    pub balanced: bool,
}

/// Everything the phase measured.
pub(crate) struct PhaseData<'a> {
    /// The phase.
    pub spec: &'a PhaseSpec,
    /// Experiment settings.
    pub cfg: &'a RoutingConfig,
    /// Times each family block is repeated.
    pub repeat: usize,
    /// Priming result, for warm and hot scenarios.
    pub setup: Option<&'a Setup>,
    /// Samples of the measured traffic (tag = family).
    pub samples: &'a [RequestSample],
    /// Requests planned.
    pub planned: u32,
    /// The replicas.
    pub replicas: &'a [ReplicaRef],
    /// Metrics round before the measured traffic.
    pub before: Option<&'a MetricsSnapshot>,
    /// Metrics round after it.
    pub after: Option<&'a MetricsSnapshot>,
    /// Peaks and averages over the traffic.
    pub window: Option<&'a WindowStats>,
    /// Gateway counter changes (None without gateway metrics).
    pub routing_deltas: Option<Vec<CounterDelta>>,
    /// Unix seconds at the first send and after the last response.
    pub started_at: f64,
    /// Unix seconds after the last response.
    pub finished_at: f64,
    /// How each replica's prefix cache was reset.
    pub cache_reset: BTreeMap<String, String>,
}
