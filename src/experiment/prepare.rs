//! Preparing the experiments of a session: each registered kind checks, calibrates and sets up
//! what its cells need (through [`Setup::prepare`]) from what the session's own preflight found,
//! before any load is sent. The session knows a kind only through this and [`Experiment`].

use super::interface::{Experiment, Experiments};
use crate::cell::facts::{Facts, Prompt};
use crate::config::{MetricsEndpoint, PlanKind, RunConfig};
use crate::load::client::ApiClient;
use futures_util::future::BoxFuture;
use std::sync::Arc;

/// What a preparation can use.
#[derive(Clone, Copy)]
pub struct PrepareEnv<'a> {
    /// The validated run configuration.
    pub cfg: &'a RunConfig,
    /// The target (the gateway, for a routing session).
    pub client: &'a ApiClient,
    /// What the session's preflight found: the model, its context length, the replicas and
    /// their KV capacity.
    pub facts: &'a Facts,
    /// The replicas' metrics pages (`--metrics-url`, `--replica`).
    pub metrics: &'a [MetricsEndpoint],
}

/// What a preparation adds to the session.
#[derive(Default)]
pub struct Prepared {
    /// Its experiments, in run order (decode's preparation gives decode and burst).
    pub experiments: Experiments,
    /// Prompts it calibrated (the report's `calibration`).
    pub prompts: Vec<Prompt>,
    /// Problems that do not stop the session: said as warnings, kept in the report.
    pub warnings: Vec<String>,
    /// Lines to say as the session starts.
    pub notes: Vec<String>,
    /// The gateway's version, when it measures a gateway.
    pub gateway_version: Option<String>,
}

impl Prepared {
    /// A preparation that only builds `experiment`.
    pub fn of(experiment: Arc<dyn Experiment>) -> Self {
        Self { experiments: vec![experiment], ..Self::default() }
    }

    /// Adds what `other` prepared after what this one did.
    pub fn merge(&mut self, other: Prepared) {
        self.experiments.extend(other.experiments);
        self.prompts.extend(other.prompts);
        self.warnings.extend(other.warnings);
        self.notes.extend(other.notes);
        self.gateway_version = self.gateway_version.take().or(other.gateway_version);
    }
}

/// A kind of experiment as the registry holds it, before the session starts.
pub trait Setup: Send + Sync {
    /// The `--plan` kind it prepares; None for a kind registered from outside the built-in set
    /// (`session::plan::start_with_setups`), which runs after the planned kinds.
    fn plan(&self) -> Option<PlanKind>;

    /// Checks, calibrates and sets up its experiments against the target; an error ends the
    /// session before any load is sent.
    fn prepare<'a>(&'a self, env: PrepareEnv<'a>) -> BoxFuture<'a, anyhow::Result<Prepared>>;
}

/// The setups that run `cfg`'s plan: the built-in ones of each `--plan` kind in its order, then
/// `extra` in the order given.
pub(crate) fn for_plan(cfg: &RunConfig, builtin: Vec<Arc<dyn Setup>>, extra: &[Arc<dyn Setup>]) -> Vec<Arc<dyn Setup>> {
    let mut out: Vec<Arc<dyn Setup>> = Vec::new();
    for kind in &cfg.plans {
        out.extend(builtin.iter().filter(|s| s.plan() == Some(*kind)).cloned());
    }
    out.extend(extra.iter().cloned());
    out
}

/// Prepares every one of `setups` in order; the first error ends preparation.
pub(crate) async fn prepare_all(setups: &[Arc<dyn Setup>], env: PrepareEnv<'_>) -> anyhow::Result<Prepared> {
    let mut all = Prepared::default();
    for s in setups {
        all.merge(s.prepare(env).await?);
    }
    Ok(all)
}
