//! The registry: which experiment runs which plan kind. A new experiment is one folder and
//! one line here.

use super::interface::Experiments;
use super::{burst, decode, routing, serve};
use crate::config::{PlanKind, RunConfig};
use std::sync::Arc;

/// What preflight prepared for the experiments of a plan.
pub struct Prepared {
    /// KV capacity of the target, tokens (None: unknown, no KV-fit skip).
    pub kv_capacity: Option<u64>,
    /// The routing experiment's shared state, when routing is planned.
    pub routing: Option<routing::RoutingEnv>,
}

/// The registry: the experiments that run the plan kinds of `cfg`, in order.
pub fn plan(cfg: &RunConfig, prepared: Prepared) -> Experiments {
    let mut out: Experiments = Vec::new();
    let mut routing = prepared.routing;
    for kind in &cfg.plans {
        match kind {
            PlanKind::Decode => {
                out.push(Arc::new(decode::Decode::new(cfg, prepared.kv_capacity)));
                if cfg.run_burst {
                    out.push(Arc::new(burst::Burst::new(cfg, prepared.kv_capacity)));
                }
            }
            PlanKind::Routing => {
                if let Some(env) = routing.take() {
                    out.push(Arc::new(routing::Routing::new(env)));
                }
            }
            PlanKind::Serve => out.push(Arc::new(serve::Serve::new(cfg))),
        }
    }
    out
}
