//! The headline figures the monitor and the log show for a burst attempt.

use crate::cell::headline::Headline;
use crate::report::json::BurstAttempt;

/// The headline figures of a burst attempt.
pub(crate) fn headline(b: &BurstAttempt) -> Headline {
    Headline {
        tps: b.output_tps,
        requested: b.requests as u32,
        errors: b.error_count,
        ttft_p50_ms: b.ttft_ms.map(|s| s.p50),
        ttft_p95_ms: b.ttft_ms.map(|s| s.p95),
        itl_p50_ms: b.itl_token_ms.map(|s| s.p50),
        tpot_p50_ms: b.tpot_ms.map(|s| s.p50),
        status: b.status,
        good: b.goodput.map(|g| (g.good, g.judged)),
        ..Headline::default()
    }
}
