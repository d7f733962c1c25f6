//! Time-bucketed event counter answering "events per second lately" for live views.

use std::time::Duration;

const NANOS_PER_SEC: f64 = 1e9;

#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    /// Absolute bucket number: timestamp / bucket width.
    index: u64,
    count: u64,
}

/// Counts timestamped events (for example generated tokens) in fixed-width time buckets.
///
/// Timestamps are `Duration`s since an origin the caller chooses (typically the start of
/// the run). Only the newest `max_buckets` buckets are kept; events older than that are
/// counted in [`WindowCounter::total`] but can no longer be queried by time.
///
/// Queries treat the events of a bucket as spread evenly over it, so spans that cut a
/// bucket only count the overlapping share. The newest bucket is taken to end at the
/// latest recorded timestamp rather than at its nominal end, so a rate read "now" is not
/// diluted by the part of the current bucket that has not happened yet.
#[derive(Debug, Clone)]
pub struct WindowCounter {
    /// Bucket width in nanoseconds (at least 1).
    width_ns: u64,
    buckets: Vec<Bucket>,
    /// Index of the newest bucket that received an event.
    newest: Option<u64>,
    /// Latest recorded timestamp, in nanoseconds since the origin.
    latest_ns: u64,
    total: u64,
    dropped: u64,
}

impl WindowCounter {
    /// Creates a counter with buckets `bucket_width` wide (e.g. 250 ms) keeping at most
    /// `max_buckets` of them. A zero width is raised to 1 ns and zero buckets to one.
    pub fn new(bucket_width: Duration, max_buckets: usize) -> Self {
        Self {
            width_ns: nanos(bucket_width).max(1),
            buckets: vec![Bucket::default(); max_buckets.max(1)],
            newest: None,
            latest_ns: 0,
            total: 0,
            dropped: 0,
        }
    }

    /// Records `count` events that happened at `at` (time since the origin).
    ///
    /// Events older than the retained buckets are only added to the totals.
    pub fn record(&mut self, at: Duration, count: u64) {
        let ns = nanos(at);
        let index = ns / self.width_ns;
        self.total = self.total.saturating_add(count);
        if let Some(newest) = self.newest
            && index.saturating_add(self.slots()) <= newest
        {
            self.dropped = self.dropped.saturating_add(count);
            return;
        }
        let slot = self.slot(index);
        let bucket = &mut self.buckets[slot];
        if bucket.index != index {
            *bucket = Bucket { index, count: 0 };
        }
        bucket.count = bucket.count.saturating_add(count);
        self.newest = Some(self.newest.map_or(index, |n| n.max(index)));
        self.latest_ns = self.latest_ns.max(ns);
    }

    /// Events recorded within `[from, to)`, with partially covered buckets weighted by
    /// their overlap. Exact (an integer) when both ends fall on bucket boundaries.
    pub fn total_in(&self, from: Duration, to: Duration) -> f64 {
        self.total_in_ns(nanos(from), nanos(to))
    }

    /// Rate in events per second over the trailing span `last` ending at `now`.
    ///
    /// The span is shortened to what is actually known: it never starts before the
    /// origin nor before the oldest retained bucket, and the rate is divided by the
    /// shortened length. Returns 0 for an empty span.
    pub fn rate_over(&self, last: Duration, now: Duration) -> f64 {
        let now_ns = nanos(now);
        let known_from = self.newest.map_or(0, |n| self.horizon(n) * self.width_ns);
        let start = now_ns.saturating_sub(nanos(last)).max(known_from);
        if now_ns <= start {
            return 0.0;
        }
        let span_secs = (now_ns - start) as f64 / NANOS_PER_SEC;
        self.total_in_ns(start, now_ns) / span_secs
    }

    /// All events ever recorded, including those too old to be kept in a bucket.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Events that arrived older than the retained buckets and were not bucketed.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Width of one bucket.
    pub fn bucket_width(&self) -> Duration {
        Duration::from_nanos(self.width_ns)
    }

    /// Number of buckets kept.
    pub fn max_buckets(&self) -> usize {
        self.buckets.len()
    }

    /// Forgets every event and total, keeping width and bucket count.
    pub fn clear(&mut self) {
        self.buckets.fill(Bucket::default());
        self.newest = None;
        self.latest_ns = 0;
        self.total = 0;
        self.dropped = 0;
    }

    fn total_in_ns(&self, from: u64, to: u64) -> f64 {
        let Some(newest) = self.newest else {
            return 0.0;
        };
        if to <= from {
            return 0.0;
        }
        let first = (from / self.width_ns).max(self.horizon(newest));
        let last = ((to - 1) / self.width_ns).min(newest);
        (first..=last).map(|index| self.weighted(index, newest, from, to)).sum()
    }

    /// Share of bucket `index` falling within `[from, to)`.
    fn weighted(&self, index: u64, newest: u64, from: u64, to: u64) -> f64 {
        let bucket = self.buckets[self.slot(index)];
        if bucket.index != index || bucket.count == 0 {
            return 0.0;
        }
        let start = index * self.width_ns;
        let end = if index == newest { self.latest_ns.saturating_add(1) } else { start.saturating_add(self.width_ns) };
        let overlap = end.min(to).saturating_sub(start.max(from));
        if overlap == 0 {
            return 0.0;
        }
        bucket.count as f64 * (overlap as f64 / (end - start) as f64)
    }

    /// Oldest bucket index still retained given the newest one.
    fn horizon(&self, newest: u64) -> u64 {
        newest.saturating_sub(self.slots() - 1)
    }

    fn slots(&self) -> u64 {
        self.buckets.len() as u64
    }

    fn slot(&self, index: u64) -> usize {
        // The remainder is below `buckets.len()`, so it fits a usize.
        (index % self.slots()) as usize
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod unit {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn steady_stream_reads_its_rate_at_any_time() {
        // 100 events/s: one every 10 ms, starting at 5 ms.
        let mut w = WindowCounter::new(ms(250), 40);
        for i in 0..1000 {
            w.record(ms(5 + 10 * i), 1);
        }
        assert_eq!(w.total(), 1000);
        for now in [2_000, 3_333, 7_777, 9_996] {
            let r = w.rate_over(ms(1000), ms(now));
            assert!(close(r, 100.0, 2.0), "now={now} rate={r}");
        }
    }

    #[test]
    fn start_of_run_divides_by_elapsed_time() {
        let mut w = WindowCounter::new(ms(250), 40);
        w.record(ms(50), 10);
        w.record(ms(99), 10);
        // 20 events in the first 100 ms: 200/s, not 20/s over a 1 s window.
        assert!(close(w.rate_over(ms(1000), ms(100)), 200.0, 1e-9));
        assert_eq!(w.rate_over(ms(1000), Duration::ZERO), 0.0);
    }

    #[test]
    fn partial_buckets_are_weighted() {
        let mut w = WindowCounter::new(ms(100), 10);
        w.record(ms(0), 10); // bucket [0, 100)
        w.record(ms(150), 10); // bucket [100, 200)
        w.record(ms(250), 10); // newest bucket, known up to 250 ms
        assert_eq!(w.total_in(ms(0), ms(300)), 30.0);
        assert_eq!(w.total_in(ms(100), ms(200)), 10.0);
        assert!(close(w.total_in(ms(50), ms(200)), 15.0, 1e-9));
        assert!(close(w.total_in(ms(0), ms(125)), 12.5, 1e-9));
        assert_eq!(w.total_in(ms(200), ms(200)), 0.0);
        assert_eq!(w.total_in(ms(300), ms(200)), 0.0);
    }

    #[test]
    fn old_buckets_are_forgotten() {
        let mut w = WindowCounter::new(ms(100), 4);
        w.record(ms(10), 5);
        w.record(ms(1_000), 1);
        assert_eq!(w.total_in(ms(0), ms(2_000)), 1.0);
        w.record(ms(20), 7); // older than the retained 4 buckets
        assert_eq!(w.dropped(), 7);
        assert_eq!(w.total(), 13);
        w.record(ms(750), 2); // within the retained buckets
        assert_eq!(w.total_in(ms(700), ms(800)), 2.0);
        // A long span is cut at the oldest retained bucket (700 ms): 3 events in 301 ms.
        let r = w.rate_over(ms(10_000), ms(1_001));
        assert!(close(r, 3.0 / 0.301, 1e-6), "rate={r}");
    }

    #[test]
    fn degenerate_parameters_do_not_panic() {
        let mut w = WindowCounter::new(Duration::ZERO, 0);
        assert_eq!(w.max_buckets(), 1);
        assert_eq!(w.bucket_width(), Duration::from_nanos(1));
        w.record(Duration::MAX, u64::MAX);
        w.record(Duration::MAX, 1);
        assert_eq!(w.total(), u64::MAX);
        assert!(w.rate_over(Duration::MAX, Duration::MAX).is_finite());
        w.clear();
        assert_eq!(w.total(), 0);
        assert_eq!(w.rate_over(ms(1), ms(1)), 0.0);
    }
}
