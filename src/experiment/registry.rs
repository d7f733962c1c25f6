//! The registry: the built-in kinds of experiment, one line each. A kind from outside the
//! built-in set is handed to `session::plan::start_with_setups` instead.

use super::prepare::Setup;
use super::{conversation, decode, routing, serve, slo_search};
use std::sync::Arc;

/// Every built-in kind, each preparing its `--plan` kind.
pub(crate) fn builtin() -> Vec<Arc<dyn Setup>> {
    vec![
        Arc::new(decode::DecodeSetup),
        Arc::new(routing::RoutingSetup),
        Arc::new(serve::ServeSetup),
        Arc::new(conversation::ConversationSetup),
        Arc::new(slo_search::SloSearchSetup),
    ]
}

/// The experiments `cfg` plans that need no target to be built (decode, burst, serve, against
/// a KV capacity of `kv_capacity` tokens): what a configuration derives before any load is
/// sent, for tests of the plan and its ETA.
#[cfg(test)]
pub(crate) fn offline(cfg: &crate::config::RunConfig, kv_capacity: Option<u64>) -> super::interface::Experiments {
    let mut out: super::interface::Experiments = Vec::new();
    for kind in &cfg.plans {
        match kind {
            crate::config::PlanKind::Decode => {
                out.push(Arc::new(decode::Decode::new(cfg, kv_capacity)));
                if cfg.decode.run_burst {
                    out.push(Arc::new(super::burst::Burst::new(cfg, kv_capacity)));
                }
            }
            crate::config::PlanKind::Routing => {}
            crate::config::PlanKind::Serve if cfg.slo_search.is_some() => {
                out.push(Arc::new(slo_search::SloSearch::new(cfg, None)))
            }
            crate::config::PlanKind::Serve => out.push(Arc::new(serve::Serve::new(cfg))),
            crate::config::PlanKind::Conversation => out.push(Arc::new(conversation::Conversations::new(cfg))),
        }
    }
    out
}
