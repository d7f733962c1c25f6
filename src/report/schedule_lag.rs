//! How late a serve attempt's requests were sent against their schedule (issue 24): each
//! request's `schedule_lag_ms` (its send minus its arrival on the schedule: a trace's time, or
//! the gamma arrivals of `--request-rate`), summed up with who held the late ones. A late
//! request that waited with every `--max-concurrency` slot taken was held by the cap, as
//! `vllm bench serve` holds it; one that waited while a slot stayed free for longer than
//! [`LATE_MS`] was late because the client fell behind, and the report says so. (Judging by
//! the slots at its arrival alone filed every queued request of an `inf` cell as behind: all
//! arrive at 0 ms, before any is in flight.)

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
    /// Of those, the ones that waited while a slot stayed free: the client fell behind.
    pub behind: u64,
    /// The largest lag of the `behind` ones, ms (absent in reports that predate it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind_max_ms: Option<f64>,
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
        let flight = InFlight::of(slots);
        let late: Vec<&Slot> = slots.iter().filter(|s| s.sent_ms - s.due_ms > LATE_MS).collect();
        let behind: Vec<f64> = late
            .iter()
            .filter(|s| flight.free_while_waiting(s, cap.max(1) as usize))
            .map(|s| s.sent_ms - s.due_ms)
            .collect();
        let held = (late.len() - behind.len()) as u64;
        Some(Self {
            p50_ms: lags.percentile(50.0).unwrap_or(0.0),
            p99_ms: lags.percentile(99.0).unwrap_or(0.0),
            max_ms: lags.percentile(100.0).unwrap_or(0.0),
            late: late.len() as u64,
            held,
            behind: behind.len() as u64,
            behind_max_ms: behind.iter().copied().reduce(f64::max),
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
                self.behind_max_ms.unwrap_or(self.max_ms)
            )
        })
    }
}

/// The requests in flight over an attempt, as a step function of time.
struct InFlight {
    /// Every send (+1) and end (-1), in time order (an end before a send at the same instant).
    events: Vec<(f64, i64)>,
}

impl InFlight {
    fn of(slots: &[Slot]) -> Self {
        let mut events: Vec<(f64, i64)> = slots.iter().flat_map(|s| [(s.sent_ms, 1), (s.end_ms, -1)]).collect();
        events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        Self { events }
    }

    /// True when, between `s`'s arrival and its send, fewer than `cap` requests were in flight
    /// for longer than [`LATE_MS`] at a stretch: a slot stayed free while it waited.
    fn free_while_waiting(&self, s: &Slot, cap: usize) -> bool {
        let before = self.events.partition_point(|e| e.0 <= s.due_ms);
        let mut n: i64 = self.events[..before].iter().map(|e| e.1).sum();
        let mut from = s.due_ms;
        for &(t, d) in self.events[before..].iter().take_while(|e| e.0 < s.sent_ms) {
            if n < cap as i64 && t - from > LATE_MS {
                return true;
            }
            (n, from) = (n + d, t);
        }
        n < cap as i64 && s.sent_ms - from > LATE_MS
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
    fn requests_queued_at_inf_take_slots_as_they_free_and_are_held_not_behind() {
        // Cap 2, all due at 0: two run to 100 and 150 ms, the third goes at 100.1, the fourth
        // at 150.2, each as a slot frees (the real llama.cpp run read `behind 11` here).
        let s = [slot(0.0, 0.1, 100.0), slot(0.0, 0.2, 150.0), slot(0.0, 100.1, 300.0), slot(0.0, 150.2, 320.0)];
        let l = ScheduleLag::of(&s, 2).unwrap();
        assert_eq!((l.late, l.held, l.behind, l.behind_max_ms), (2, 2, 0, None));
        // The fourth sent 60 ms after a slot freed at 150: the client was behind, by 210 ms.
        let s = [slot(0.0, 0.1, 100.0), slot(0.0, 0.2, 150.0), slot(0.0, 100.1, 300.0), slot(0.0, 210.0, 320.0)];
        let l = ScheduleLag::of(&s, 2).unwrap();
        assert_eq!((l.held, l.behind, l.behind_max_ms), (1, 1, Some(210.0)));
        // The worst lag of the note is the behind one's, not a held one's.
        let s = [slot(0.0, 0.1, 900.0), slot(0.0, 900.1, 950.0), slot(1000.0, 1033.0, 1100.0)];
        let note = ScheduleLag::of(&s, 1).unwrap().behind_note().unwrap();
        assert!(note.contains("1 request sent over 10 ms late with a slot free (worst 33 ms)"), "{note}");
    }

    #[test]
    fn a_send_before_its_time_counts_as_no_lag() {
        let l = ScheduleLag::of(&[slot(5.0, 4.0, 9.0)], 1).unwrap();
        assert_eq!((l.p50_ms, l.max_ms), (0.0, 0.0));
    }
}
