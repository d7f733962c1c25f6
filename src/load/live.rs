//! Lock-free live counters the workers bump on the hot path and the monitor reads at its tick.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// Counters of the running load. Workers only `fetch_add` (relaxed); readers take a
/// [`LiveTotals`] copy. No lock and no channel per token.
#[derive(Debug, Default)]
pub struct LiveCounters {
    /// Output tokens received, tokens.
    pub tokens: AtomicU64,
    /// Chunks that carried output.
    pub chunks: AtomicU64,
    /// Requests sent so far.
    pub started: AtomicU64,
    /// Requests in flight.
    pub in_flight: AtomicI64,
    /// Requests in flight that have received their first token.
    pub streaming: AtomicI64,
    /// Requests the server finished.
    pub completed: AtomicU64,
    /// Requests that failed.
    pub failed: AtomicU64,
    /// Times to first token, ms: the latest [`RECENT_TTFTS`] and the largest. Locked once per
    /// request (at its first token), never per token; bounded however long the attempt.
    pub ttfts: Mutex<Ttfts>,
    /// Worst client event-loop lag over the last second, microseconds (set by the lag probe).
    pub lag_recent_us: AtomicU64,
}

/// TTFTs the live view keeps: the live percentiles are of the latest this many requests.
pub const RECENT_TTFTS: usize = 8192;

/// The latest times to first token and the largest one, ms.
#[derive(Debug, Clone, Default)]
pub struct Ttfts {
    recent: VecDeque<f32>,
    max: Option<f32>,
}

/// A copy of [`LiveCounters`] at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LiveTotals {
    /// Output tokens received, tokens.
    pub tokens: u64,
    /// Chunks that carried output.
    pub chunks: u64,
    /// Requests sent.
    pub started: u64,
    /// Requests in flight.
    pub in_flight: i64,
    /// In-flight requests past their first token.
    pub streaming: i64,
    /// Requests finished by the server.
    pub completed: u64,
    /// Failed requests.
    pub failed: u64,
}

impl LiveCounters {
    /// Reads every counter.
    pub fn totals(&self) -> LiveTotals {
        LiveTotals {
            tokens: self.tokens.load(Ordering::Relaxed),
            chunks: self.chunks.load(Ordering::Relaxed),
            started: self.started.load(Ordering::Relaxed),
            in_flight: self.in_flight.load(Ordering::Relaxed),
            streaming: self.streaming.load(Ordering::Relaxed),
            completed: self.completed.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
        }
    }

    /// Records one request's time to first token.
    pub fn record_ttft(&self, ms: f64) {
        if let Ok(mut t) = self.ttfts.lock() {
            let ms = ms as f32;
            if t.recent.len() == RECENT_TTFTS {
                t.recent.pop_front();
            }
            t.recent.push_back(ms);
            t.max = Some(t.max.map_or(ms, |m| m.max(ms)));
        }
    }

    /// A copy of the latest [`RECENT_TTFTS`] TTFTs, oldest first, ms.
    pub fn ttfts(&self) -> Vec<f64> {
        self.ttfts.lock().map(|t| t.recent.iter().map(|x| f64::from(*x)).collect()).unwrap_or_default()
    }

    /// The largest TTFT recorded, ms.
    pub fn ttft_max_ms(&self) -> Option<f64> {
        self.ttfts.lock().ok().and_then(|t| t.max).map(f64::from)
    }

    /// Worst recent event-loop lag, ms.
    pub fn lag_recent_ms(&self) -> f64 {
        self.lag_recent_us.load(Ordering::Relaxed) as f64 / 1e3
    }

    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn shift(counter: &AtomicI64, n: i64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttfts_keep_the_latest_and_the_largest_only() {
        let live = LiveCounters::default();
        live.record_ttft(5000.0);
        for i in 0..(RECENT_TTFTS + 100) {
            live.record_ttft(i as f64);
        }
        let recent = live.ttfts();
        assert_eq!(recent.len(), RECENT_TTFTS, "bounded however many requests");
        assert_eq!(recent.first().copied(), Some(100.0), "the oldest went first");
        assert_eq!(live.ttft_max_ms(), Some((RECENT_TTFTS + 99) as f64));
    }
}
