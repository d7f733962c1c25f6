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

fn observe(data: &[u8], sent_at: Instant, at: Instant) {
    if !ENABLED.load(Ordering::Relaxed) {
        return;
    }
    if let Some(sent) = stamp_of(data) {
        let (i0, u0) = *ANCHOR;
        let client = u0 + at.saturating_duration_since(i0).as_nanos() as u64;
        TOOL_LAG.record(client, sent);
        super::fidelity::observe(data, sent, sent_at, at);
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
