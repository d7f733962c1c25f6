//! The headline figures the monitor and the log show for a decode attempt.

use crate::cell::headline::Headline;
use crate::report::json::DecodeAttempt;

/// The headline figures of a decode attempt.
pub(crate) fn headline(d: &DecodeAttempt) -> Headline {
    Headline {
        tps: d.aggregate_tps,
        running_avg: d.running_avg,
        requested: d.running_requested(),
        limit: crate::report::text::format::LimitMark::of(d),
        errors: d.error_count,
        ttft_p50_ms: d.ttft_ms.map(|s| s.p50),
        ttft_p95_ms: d.ttft_ms.map(|s| s.p95),
        // vLLM's names (docs/reports.md §1.2): ITL is per token gap, TPOT per stream over the
        // window ((last - first) / (n - 1)), which sustained streams have without completing.
        itl_p50_ms: d.itl_token_ms.map(|s| s.p50),
        tpot_p50_ms: d.itl_ms.or(d.tpot_ms).map(|s| s.p50),
        status: d.status,
        good: d.goodput.map(|g| (g.good, g.judged)),
        hit_ratio: d.prefix_cache.map(|p| p.hit_ratio),
        warm_cache: d.prefix_cache.is_some_and(|p| p.warm),
        ..Headline::default()
    }
}
