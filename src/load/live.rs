//! Lock-free live counters the workers bump on the hot path and the monitor reads at its tick.

use super::live_hist::LiveSeries;
use super::sample::RequestSample;
use super::slo::Slo;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;
use tokio::time::Instant;

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
    /// The session SLO in-flight streams are judged against from their tokens so far, as the
    /// experiment gives it; None: not judged.
    pub slo: Option<Slo>,
    /// In-flight streams judged so far ([`Self::judge_so_far`]), and the good ones among them.
    pub flight_judged: AtomicI64,
    /// In-flight streams whose tokens so far meet [`Self::slo`].
    pub flight_good: AtomicI64,
    /// When each stream still without its first token started waiting, by stream slot: kept
    /// only under a TTFT bound (locked twice per request, never per token), so a stream
    /// queued past the bound counts as not good before it has a token to judge.
    pub awaiting_first: Mutex<HashMap<u32, Instant>>,
    /// The attempt's latency histograms for the live `/metrics` page (`run --metrics-listen`):
    /// set before its first request when the page is served, else never (then nothing is
    /// observed: one atomic load per read).
    pub series: OnceLock<LiveSeries>,
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
        if let Some(series) = self.series.get() {
            series.ttft.observe((ms * 1e6) as u64);
        }
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

    /// Judges an in-flight stream on its tokens so far (TTFT, TPOT over the tokens after the
    /// first, time since its start against an end-to-end bound) and moves its contribution to
    /// the in-flight tally when the verdict changes: atomics only on a change, none per token
    /// otherwise. Called by the stream after each read that brought output.
    pub(crate) fn judge_so_far(&self, s: &mut RequestSample) {
        let Some(slo) = &self.slo else { return };
        // Without bounds every stream with a token is good: no timing to read.
        let verdict = if slo.is_unbounded() { s.marks.first().map(|_| true) } else { so_far(slo, s) };
        if verdict != s.live_verdict {
            self.move_verdict(s.live_verdict, verdict);
            s.live_verdict = verdict;
        }
    }

    /// Takes a settled stream's contribution back out of the in-flight tally.
    pub(crate) fn settle_verdict(&self, s: &RequestSample) {
        self.move_verdict(s.live_verdict, None);
        self.first_arrived(s);
    }

    /// Notes that `s`, just sent, waits for its first token (only under a TTFT bound).
    pub(crate) fn await_first(&self, s: &RequestSample) {
        if self.slo.is_some_and(|b| b.ttft.is_some()) {
            self.awaiting().insert(s.worker, s.start());
        }
    }

    /// `s` has its first token, or has ended.
    pub(crate) fn first_arrived(&self, s: &RequestSample) {
        if self.slo.is_some_and(|b| b.ttft.is_some()) {
            self.awaiting().remove(&s.worker);
        }
    }

    fn awaiting(&self) -> std::sync::MutexGuard<'_, HashMap<u32, Instant>> {
        self.awaiting_first.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn move_verdict(&self, from: Option<bool>, to: Option<bool>) {
        let n = |v: Option<bool>| (i64::from(v.is_some()), i64::from(v == Some(true)));
        let ((j0, g0), (j1, g1)) = (n(from), n(to));
        if j1 != j0 {
            Self::shift(&self.flight_judged, j1 - j0);
        }
        if g1 != g0 {
            Self::shift(&self.flight_good, g1 - g0);
        }
    }

    /// In-flight streams judged at `now` and the good ones among them: those with tokens on
    /// their tokens so far, and those still without a first token once they waited past the
    /// TTFT bound (not good, as the end of the attempt judges them).
    pub fn flight_goodput(&self, now: Instant) -> (u64, u64) {
        let read = |c: &AtomicI64| c.load(Ordering::Relaxed).max(0) as u64;
        let late = match self.slo.and_then(|b| b.ttft) {
            Some(bound) => self.awaiting().values().filter(|t| now.saturating_duration_since(**t) > bound).count(),
            None => 0,
        };
        (read(&self.flight_good), read(&self.flight_judged) + late as u64)
    }

    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn shift(counter: &AtomicI64, n: i64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

/// The verdict of a stream's tokens so far against `slo`; None before its first token.
fn so_far(slo: &Slo, s: &RequestSample) -> Option<bool> {
    let (first, last) = (s.marks.first()?, s.marks.last()?);
    let start = s.start();
    let ttft = s.mark_at(&first).saturating_duration_since(start);
    let decoded = last.tokens.saturating_sub(first.tokens);
    // One token so far has no TPOT yet: nothing to fail, unlike a finished one-token reply.
    let tpot = match decoded {
        0 => Duration::ZERO,
        n => Duration::from_micros(last.at_us - first.at_us) / n as u32,
    };
    let elapsed = s.mark_at(&last).saturating_duration_since(start);
    Some(slo.is_met(Some(ttft), Some(tpot), Some(elapsed)))
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

    #[test]
    fn running_streams_are_judged_on_their_tokens_so_far_and_settle_out() {
        use super::super::sample::Mark;
        let ms = Duration::from_millis;
        let slo = Slo { ttft: Some(ms(100)), tpot: Some(ms(20)), e2e: None };
        let live = LiveCounters { slo: Some(slo), ..LiveCounters::default() };
        let mut s = RequestSample::new(0, tokio::time::Instant::now());
        live.judge_so_far(&mut s);
        assert_eq!(live.flight_goodput(s.sent_at), (0, 0), "no token, no verdict");
        let push = |s: &mut RequestSample, at_ms: u64, tokens: u64| {
            s.marks.push(Mark { at_us: at_ms * 1000, tokens });
            live.judge_so_far(s);
        };
        push(&mut s, 80, 1);
        push(&mut s, 90, 2);
        let mut slow = RequestSample::new(1, s.sent_at);
        push(&mut slow, 50, 1);
        assert_eq!(live.flight_goodput(s.sent_at), (2, 2), "both met TTFT; 10 ms per token so far");
        push(&mut slow, 150, 3);
        assert_eq!(live.flight_goodput(s.sent_at), (1, 2), "50 ms per token now: past the 20 ms TPOT bound");
        push(&mut slow, 500, 100);
        assert_eq!(live.flight_goodput(s.sent_at), (2, 2), "back under the bound");
        live.settle_verdict(&slow);
        live.settle_verdict(&s);
        assert_eq!(live.flight_goodput(s.sent_at), (0, 0), "settled streams leave the in-flight tally");
        let late = Slo { ttft: Some(ms(10)), ..slo };
        assert_eq!(so_far(&late, &s), Some(false), "first token at 80 ms");
        let queued = RequestSample::new(7, s.sent_at);
        live.await_first(&queued);
        assert_eq!(live.flight_goodput(s.sent_at + ms(100)), (0, 0), "waiting, within the TTFT bound");
        assert_eq!(live.flight_goodput(s.sent_at + ms(101)), (0, 1), "past the bound before a token: not good");
        live.settle_verdict(&queued);
        assert_eq!(live.flight_goodput(s.sent_at + ms(500)), (0, 0), "ended: out of the in-flight tally");
        let unjudged = LiveCounters::default();
        unjudged.judge_so_far(&mut s);
        assert_eq!(unjudged.flight_goodput(s.sent_at), (0, 0), "without an SLO nothing is judged");
        let unbounded =
            LiveCounters { slo: Some(Slo { ttft: None, tpot: None, e2e: None }), ..LiveCounters::default() };
        let mut fresh = RequestSample::new(2, s.sent_at);
        unbounded.judge_so_far(&mut fresh);
        assert_eq!(unbounded.flight_goodput(s.sent_at), (0, 0), "no token yet: no verdict");
        fresh.marks.push(Mark { at_us: 900_000, tokens: 1 });
        unbounded.judge_so_far(&mut fresh);
        assert_eq!(unbounded.flight_goodput(s.sent_at), (1, 1), "without bounds a stream with tokens is good");
        assert_eq!(so_far(&Slo { ttft: None, tpot: None, e2e: None }, &fresh), Some(true), "as the timed verdict says");
    }
}
