//! The headline figures the monitor and the log show for a serve attempt.

use crate::cell::headline::Headline;
use crate::report::serve::ServeAttempt;

/// The headline figures of a serve attempt: output tok/s, median TTFT, ITL (vLLM's, per
/// chunk) and TPOT, and the good requests under `--goodput`.
pub(crate) fn headline(a: &ServeAttempt) -> Headline {
    let m = &a.metrics;
    let requests = m.completed + m.failed;
    Headline {
        tps: m.output_throughput,
        requested: a.num_prompts,
        // A refused probe fails no planned request but is the attempt's one error.
        errors: m.failed.max(a.errors.values().sum()),
        ttft_p50_ms: m.median_ttft_ms,
        itl_p50_ms: m.median_itl_ms,
        tpot_p50_ms: m.median_tpot_ms,
        good: m.request_goodput.map(|g| ((g * m.duration_s).round() as u64, requests)),
        status: a.status,
        hit_ratio: a.prefix_cache.map(|p| p.hit_ratio),
        warm_cache: a.prefix_cache.is_some_and(|p| p.warm),
        ..Headline::default()
    }
}
