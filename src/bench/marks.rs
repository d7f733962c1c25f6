//! The bench server's own record of a measurement window, opened by `POST /bench/mark` and read
//! by `GET /bench/window`: the tokens it wrote since the mark and the unix times of the first
//! and the last frame that carried one (the whole streaming window of a `run` process,
//! src/bench/whole.rs), its lateness against the paced schedule, and per paced request the send
//! time of the first token with the server's own time to first token, counted from the request's
//! arrival (the kernel's receive stamp, src/bench/arrival.rs), and the server's wake-up
//! (src/bench/fidelity.rs matches them to the client's).

use super::arrival::RequestTimes;
use super::lag::{LagFigures, LagHist};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Most first-token records kept per window (the rest are counted, not kept).
const MOST_FIRSTS: usize = 200_000;

/// A paced request's first token: its send time and the server's time to first token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct FirstToken {
    /// Send time of the first token (its `bench_sent_unix_ns`), unix ns.
    pub sent_ns: u64,
    /// From the request's arrival (the kernel's receive time of its last bytes) to that send,
    /// ns; from the handler having the request when the request carried no stamp.
    pub server_ttft_ns: u64,
    /// The server's wake-up: from the request's arrival to its handler having it, ns (None: no
    /// stamp, `server_ttft_ns` counts from the handler).
    #[serde(default)]
    pub wake_ns: Option<u64>,
}

/// What `GET /bench/window` answers.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct WindowFigures {
    /// Token events written since the mark.
    pub tokens: u64,
    /// Unix ns of the first frame since the mark that carried a token (0: none yet).
    pub first_unix_ns: u64,
    /// Unix ns of the last such frame (0: none yet).
    pub last_unix_ns: u64,
    /// Paced mode: send time minus the schedule's due time of each frame, ms.
    pub late: Option<LagFigures>,
    /// Paced mode: the first tokens of the requests answered since the mark.
    pub firsts: Vec<FirstToken>,
}

/// The counters behind [`WindowFigures`]; every method takes `&self` (any thread).
#[derive(Debug)]
pub(crate) struct Marks {
    tokens: AtomicU64,
    first_ns: AtomicU64,
    last_ns: AtomicU64,
    late: LagHist,
    firsts: Mutex<Vec<FirstToken>>,
}

impl Default for Marks {
    fn default() -> Self {
        Self {
            tokens: AtomicU64::new(0),
            first_ns: AtomicU64::new(0),
            last_ns: AtomicU64::new(0),
            // 10 us buckets up to 1 s: a late server on 2 cores is tens of ms late.
            late: LagHist::new(10_000, 100_000),
            firsts: Mutex::default(),
        }
    }
}

impl Marks {
    /// Opens a new window: every figure back to zero.
    pub(crate) fn mark(&self) {
        self.tokens.store(0, Ordering::Relaxed);
        self.first_ns.store(0, Ordering::Relaxed);
        self.last_ns.store(0, Ordering::Relaxed);
        self.late.reset();
        self.firsts.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// A frame carrying `tokens` token events went out at `now_ns` (unix).
    #[inline]
    pub(crate) fn sent(&self, tokens: usize, now_ns: u64) {
        if tokens == 0 {
            return;
        }
        self.tokens.fetch_add(tokens as u64, Ordering::Relaxed);
        let _ = self.first_ns.compare_exchange(0, now_ns, Ordering::Relaxed, Ordering::Relaxed);
        self.last_ns.fetch_max(now_ns, Ordering::Relaxed);
    }

    /// A paced frame went out `late_ns` after its due time.
    pub(crate) fn late(&self, late_ns: u64) {
        self.late.record(late_ns, 0);
    }

    /// A paced request's first token went out at `sent_ns`; the request arrived and its
    /// handler had it at `times`.
    pub(crate) fn first_token(&self, sent_ns: u64, times: RequestTimes) {
        let server_ttft_ns = sent_ns.saturating_sub(times.start_ns());
        let mut v = self.firsts.lock().unwrap_or_else(|e| e.into_inner());
        if v.len() < MOST_FIRSTS {
            v.push(FirstToken { sent_ns, server_ttft_ns, wake_ns: times.wake_ns() });
        }
    }

    /// The figures since the mark.
    pub(crate) fn figures(&self) -> WindowFigures {
        WindowFigures {
            tokens: self.tokens.load(Ordering::Relaxed),
            first_unix_ns: self.first_ns.load(Ordering::Relaxed),
            last_unix_ns: self.last_ns.load(Ordering::Relaxed),
            late: self.late.figures(),
            firsts: self.firsts.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_spans_the_first_and_last_token_frames_since_the_mark() {
        let m = Marks::default();
        m.sent(3, 100);
        m.mark();
        assert_eq!(m.figures().tokens, 0);
        m.sent(0, 150);
        m.sent(2, 200);
        m.sent(5, 400);
        m.sent(1, 300);
        m.late(2_000_000);
        m.first_token(400, RequestTimes::new(Some(320), 350));
        m.first_token(500, RequestTimes::new(None, 350));
        m.first_token(600, RequestTimes::new(Some(360), 350));
        let f = m.figures();
        assert_eq!((f.tokens, f.first_unix_ns, f.last_unix_ns), (8, 200, 400), "frames without tokens do not count");
        let first = |sent_ns, server_ttft_ns, wake_ns| FirstToken { sent_ns, server_ttft_ns, wake_ns };
        assert_eq!(
            f.firsts,
            vec![first(400, 80, Some(30)), first(500, 150, None), first(600, 250, None)],
            "from the arrival; from the handler without a stamp, or with one after the handler's start"
        );
        let late = f.late.expect("lateness counted");
        assert_eq!(late.count, 1);
        assert!((late.p99_ms - 2.0).abs() < 0.011, "{late:?}");
        m.mark();
        let f = m.figures();
        assert!(f.late.is_none() && f.firsts.is_empty() && f.first_unix_ns == 0);
    }
}
