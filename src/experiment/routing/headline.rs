//! The headline figures the monitor and the log show for a routing attempt.

use crate::cell::headline::Headline;
use crate::report::phase::RoutingPhase;

/// The headline figures of a routing phase.
pub(crate) fn headline(p: &RoutingPhase) -> Headline {
    Headline {
        tps: p.output_tokens_per_second,
        requested: p.planned,
        errors: p.errors,
        ttft_p50_ms: p.ttft.p50.map(|s| s * 1e3),
        ttft_p95_ms: p.ttft.p95.map(|s| s * 1e3),
        // Per-token ITL and per-request TPOT, as `vllm bench serve` names them (seconds in the phase).
        itl_p50_ms: p.itl.p50.map(|s| s * 1e3),
        tpot_p50_ms: p.tpot.p50.map(|s| s * 1e3),
        good: Some((p.good, p.requests)),
        replica_split: p.replicas.iter().map(|(k, r)| (k.clone(), r.requests.unwrap_or(0))).collect(),
        hit_ratio: p.cache_hit_ratio,
        warm_cache: p.prefix_cache.is_some_and(|c| c.warm),
        status: p.status,
        ..Headline::default()
    }
}
