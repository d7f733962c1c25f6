//! Client event-loop lag probe: a ticker that records how late each tick wakes up. A loaded or
//! starved client shows up here before it distorts latencies.

use crate::load::live::LiveCounters;
use crate::stats::{Reservoir, Ring};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Ticks of lateness the probe holds (a uniform sample beyond): 164 s of 10 ms ticks, 128 KB,
/// reached within minutes so a long attempt's memory stops growing early.
pub const LAG_SAMPLE_CAP: usize = 1 << 14;

/// Starts the probe; the task returns the lateness of the ticks, ms (a bounded [`Reservoir`],
/// so a long attempt keeps a fixed amount), when `cancel` fires, and
/// keeps `live.lag_recent_us` at the worst lateness of the last second.
pub fn spawn(interval: Duration, cancel: CancellationToken, live: Arc<LiveCounters>) -> JoinHandle<Reservoir> {
    tokio::spawn(async move {
        let mut lag = Reservoir::new(LAG_SAMPLE_CAP);
        let per_second = (Duration::from_secs(1).as_micros() / interval.as_micros().max(1)).max(1) as usize;
        let mut recent = Ring::new(per_second);
        let mut next = Instant::now() + interval;
        loop {
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = tokio::time::sleep_until(next) => {}
            }
            let now = Instant::now();
            let late = now.saturating_duration_since(next);
            lag.push(late.as_secs_f64() * 1e3);
            recent.push(late.as_micros() as u64);
            live.lag_recent_us.store(recent.iter().max().unwrap_or(0), Ordering::Relaxed);
            next += interval;
            if next < now {
                next = now + interval;
            }
        }
        lag
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn an_idle_runtime_has_no_lag() {
        let cancel = CancellationToken::new();
        let h = spawn(Duration::from_millis(10), cancel.clone(), Arc::default());
        tokio::time::sleep(Duration::from_millis(105)).await;
        cancel.cancel();
        let lag = h.await.unwrap().summary().unwrap();
        assert_eq!(lag.count, 10);
        assert_eq!((lag.max, lag.p99), (0.0, 0.0));
    }
}
