//! Lock-free live counters the workers bump on the hot path and the monitor reads at its tick.

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
    /// Time to first token of every request that got one, ms. Locked once per request (at
    /// its first token), never per token.
    pub ttfts: Mutex<Vec<f32>>,
    /// Worst client event-loop lag over the last second, microseconds (set by the lag probe).
    pub lag_recent_us: AtomicU64,
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
        if let Ok(mut v) = self.ttfts.lock() {
            v.push(ms as f32);
        }
    }

    /// A copy of the TTFTs recorded so far, ms.
    pub fn ttfts(&self) -> Vec<f64> {
        self.ttfts.lock().map(|v| v.iter().map(|x| f64::from(*x)).collect()).unwrap_or_default()
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
