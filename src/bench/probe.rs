//! The tool's measurement lag, read through the stream reader's tap (src/load/tap.rs): for
//! every data event, the reader's own timestamp of its read minus the server's send time
//! (`bench_sent_unix_ns`). The reader's clock is monotonic; one anchor taken when the probe is
//! installed maps it to unix time, the clock of the server's stamps. The same events feed the
//! timing-fidelity probe (src/bench/fidelity.rs).

use super::lag::LagHist;
use super::template::stamp_of;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::time::Instant;

/// A monotonic instant and the unix time (ns) at it.
static ANCHOR: LazyLock<(Instant, u64)> = LazyLock::new(|| (Instant::now(), super::sysinfo::unix_ns()));

/// Whether lags are counted now (paced runs only: firehose stamps whole writes).
static ENABLED: AtomicBool = AtomicBool::new(false);

/// The tool's lags while enabled.
pub(crate) static TOOL_LAG: LazyLock<LagHist> = LazyLock::new(LagHist::default);

/// Test-only knob of the CI ratio smoke (tests/cli/bench_smoke.rs): `LLM_DECODE_BENCH_TEST_BURN_NS`
/// makes the tool spin that long on every data event it reads, to show the smoke fails when the
/// client does more work per token. Unset (always, outside that test): no extra work.
static BURN: LazyLock<Option<std::time::Duration>> = LazyLock::new(|| {
    let ns = std::env::var("LLM_DECODE_BENCH_TEST_BURN_NS").ok()?.parse::<u64>().ok()?;
    Some(std::time::Duration::from_nanos(ns))
});

fn observe(data: &[u8], sent_at: Instant, at: Instant) {
    if let Some(burn) = *BURN {
        let t = std::time::Instant::now();
        while t.elapsed() < burn {
            std::hint::spin_loop();
        }
    }
    if !ENABLED.load(Ordering::Relaxed) {
        return;
    }
    if let Some(sent) = stamp_of(data) {
        let (i0, u0) = *ANCHOR;
        let client = u0 + at.saturating_duration_since(i0).as_nanos() as u64;
        TOOL_LAG.record(client, sent);
        super::fidelity::observe(data, sent, client, sent_at, at);
    }
}

/// Installs the tap (once per process) and turns counting on or off; on empties the histogram.
pub(crate) fn enable(on: bool) {
    LazyLock::force(&ANCHOR);
    crate::load::tap::install(observe);
    if on {
        TOOL_LAG.reset();
    }
    ENABLED.store(on, Ordering::Relaxed);
}
