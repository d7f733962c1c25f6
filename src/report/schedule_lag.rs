//! How late a serve attempt's requests were sent against their schedule (issue 24): each
//! request's `schedule_lag_ms` (its send minus its arrival on the schedule: a trace's time, or
//! the gamma arrivals of `--request-rate`), summed up with who held the late ones. A late
//! request that arrived with every `--max-concurrency` slot taken was held by the cap, as
//! `vllm bench serve` holds it; one that arrived with a slot free was late because the client
//! fell behind, and the report says so.

use serde::{Deserialize, Serialize};

/// A request sent more than this after its arrival is late, ms: above the timer's
/// granularity and a loaded machine's wake-up jitter.
pub const LATE_MS: f64 = 10.0;

/// One request's place on the schedule, ms after the attempt's start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slot {
    /// When the schedule wanted it sent.
    pub due_ms: f64,
    /// When it was sent.
    pub sent_ms: f64,
    /// When it ended.
    pub end_ms: f64,
}

/// The schedule lag of an attempt's requests.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct ScheduleLag {
    /// Median lag, ms.
    pub p50_ms: f64,
    /// 99th percentile lag (numpy's linear method), ms.
    pub p99_ms: f64,
    /// Largest lag, ms.
    pub max_ms: f64,
    /// Requests sent more than `late_ms` after their arrival.
    pub late: u64,
    /// Of those, the ones that arrived with every `--max-concurrency` slot taken.
    pub held: u64,
    /// Of those, the ones that arrived with a slot free: the client fell behind its schedule.
    pub behind: u64,
    /// The lateness threshold, ms ([`LATE_MS`]).
    pub late_ms: f64,
}

impl ScheduleLag {
    /// The lag of `slots` under a cap of `cap` requests in flight; None without a request.
    pub fn of(slots: &[Slot], cap: u32) -> Option<Self> {
        if slots.is_empty() {
            return None;
        }
        let mut lags = crate::stats::Samples::new();
        slots.iter().for_each(|s| lags.push((s.sent_ms - s.due_ms).max(0.0)));
        let mut sent: Vec<f64> = slots.iter().map(|s| s.sent_ms).collect();
        let mut ended: Vec<f64> = slots.iter().map(|s| s.end_ms).collect();
        sent.sort_by(f64::total_cmp);
        ended.sort_by(f64::total_cmp);
        // In flight at `t`: sent at or before it and not yet ended.
        let in_flight = |t: f64| sent.partition_point(|x| *x <= t) - ended.partition_point(|x| *x <= t);
        let late: Vec<&Slot> = slots.iter().filter(|s| s.sent_ms - s.due_ms > LATE_MS).collect();
        let held = late.iter().filter(|s| in_flight(s.due_ms) >= cap.max(1) as usize).count() as u64;
        Some(Self {
            p50_ms: lags.percentile(50.0).unwrap_or(0.0),
            p99_ms: lags.percentile(99.0).unwrap_or(0.0),
            max_ms: lags.percentile(100.0).unwrap_or(0.0),
            late: late.len() as u64,
            held,
            behind: late.len() as u64 - held,
            late_ms: LATE_MS,
        })
    }

    /// What a replay the client could not keep up with says: `the client fell behind the
    /// schedule: 3 requests sent over 10 ms late with a slot free (worst 24 ms)`; None when it
    /// kept up.
    pub fn behind_note(&self) -> Option<String> {
        (self.behind > 0).then(|| {
            format!(
                "the client fell behind the schedule: {} request{} sent over {} ms late with a slot free (worst {:.0} ms)",
                self.behind,
                if self.behind == 1 { "" } else { "s" },
                self.late_ms,
                self.max_ms
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(due_ms: f64, sent_ms: f64, end_ms: f64) -> Slot {
        Slot { due_ms, sent_ms, end_ms }
    }

    #[test]
    fn on_time_requests_are_not_late() {
        let l = ScheduleLag::of(&[slot(0.0, 0.4, 50.0), slot(100.0, 101.0, 150.0)], 8).unwrap();
        assert_eq!((l.late, l.held, l.behind), (0, 0, 0));
        assert_eq!(l.max_ms, 1.0);
        assert_eq!(l.behind_note(), None);
        assert_eq!(ScheduleLag::of(&[], 1), None);
    }

    #[test]
    fn a_request_waiting_for_the_cap_is_held_and_one_with_a_free_slot_is_behind() {
        // Cap 1: the second arrives at 10 ms while the first runs to 100 ms: held until then.
        let held = ScheduleLag::of(&[slot(0.0, 0.1, 100.0), slot(10.0, 100.2, 200.0)], 1).unwrap();
        assert_eq!((held.late, held.held, held.behind), (1, 1, 0));
        // Cap 4: the same second request had three slots free: the client was behind.
        let behind = ScheduleLag::of(&[slot(0.0, 0.1, 100.0), slot(10.0, 100.2, 200.0)], 4).unwrap();
        assert_eq!((behind.late, behind.held, behind.behind), (1, 0, 1));
        assert_eq!(
            behind.behind_note().unwrap(),
            "the client fell behind the schedule: 1 request sent over 10 ms late with a slot free (worst 90 ms)"
        );
    }

    #[test]
    fn a_send_before_its_time_counts_as_no_lag() {
        let l = ScheduleLag::of(&[slot(5.0, 4.0, 9.0)], 1).unwrap();
        assert_eq!((l.p50_ms, l.max_ms), (0.0, 0.0));
    }
}
