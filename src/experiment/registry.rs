//! The registry: the built-in kinds of experiment, one line each. A kind from outside the
//! built-in set is handed to `session::plan::start_with_setups` instead.

use super::interface::Experiments;
use super::prepare::Setup;
use super::{burst, decode, routing, serve};
use crate::config::{PlanKind, RunConfig};
use std::sync::Arc;

/// Every built-in kind, each preparing its `--plan` kind.
pub fn builtin() -> Vec<Arc<dyn Setup>> {
    vec![Arc::new(decode::DecodeSetup), Arc::new(routing::RoutingSetup), Arc::new(serve::ServeSetup)]
}

/// The experiments `cfg` plans that need no target to be built (decode, burst, serve, against
/// a KV capacity of `kv_capacity` tokens): what a configuration derives before any load is
/// sent, for tests of the plan and its ETA.
pub fn offline(cfg: &RunConfig, kv_capacity: Option<u64>) -> Experiments {
    let mut out: Experiments = Vec::new();
    for kind in &cfg.plans {
        match kind {
            PlanKind::Decode => {
                out.push(Arc::new(decode::Decode::new(cfg, kv_capacity)));
                if cfg.decode.run_burst {
                    out.push(Arc::new(burst::Burst::new(cfg, kv_capacity)));
                }
            }
            PlanKind::Routing => {}
            PlanKind::Serve => out.push(Arc::new(serve::Serve::new(cfg))),
        }
    }
    out
}
