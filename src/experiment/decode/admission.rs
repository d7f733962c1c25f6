//! Deciding when the engine has admitted the requested concurrency (end of warmup).
//!
//! Admitted in full: every requested stream has its first token. Admitted at capacity: the
//! server keeps requests waiting while its running count has stopped growing and every
//! running request already streams (checked on Prometheus: `running` unchanged for
//! [`STABLE_POLLS`] polls, `waiting > 0`); without Prometheus, the count of streaming requests
//! has not grown for [`STABLE_WITHOUT_METRICS`] while all streams are in flight. A stream
//! that is still prefilling counts as running but not as streaming, so a long prefill never
//! looks like a plateau.

use std::time::Duration;
use tokio::time::Instant;

/// Polls of an unchanged running count that make a plateau.
pub const STABLE_POLLS: u32 = 4;
/// How long the streaming count must stay flat without Prometheus.
pub const STABLE_WITHOUT_METRICS: Duration = Duration::from_secs(2);

/// Outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Keep warming.
    NotYet,
    /// Every stream is producing tokens.
    Full,
    /// The engine runs fewer requests than asked for and keeps the rest waiting.
    AtCapacity,
}

/// What one check looks at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observation {
    /// Requested streams.
    pub requested: u32,
    /// Client streams in flight.
    pub in_flight: i64,
    /// Client streams that have their first token.
    pub streaming: i64,
    /// The latest metrics round: (sequence number, running sum, waiting sum), when any.
    pub metrics: Option<(u64, f64, f64)>,
    /// Now.
    pub now: Instant,
}

/// Remembers what earlier checks saw.
#[derive(Debug, Clone, Default)]
pub struct AdmissionTracker {
    last_seq: Option<u64>,
    last_running: Option<f64>,
    stable_polls: u32,
    last_streaming: i64,
    streaming_since: Option<Instant>,
}

impl AdmissionTracker {
    /// Checks one observation.
    pub fn check(&mut self, o: &Observation) -> Admission {
        if o.streaming >= i64::from(o.requested) {
            return Admission::Full;
        }
        match o.metrics {
            Some((seq, running, waiting)) => self.check_metrics(o, seq, running, waiting),
            None => self.check_client(o),
        }
    }

    fn check_metrics(&mut self, o: &Observation, seq: u64, running: f64, waiting: f64) -> Admission {
        if self.last_seq != Some(seq) {
            self.last_seq = Some(seq);
            self.stable_polls = if self.last_running == Some(running) { self.stable_polls + 1 } else { 0 };
            self.last_running = Some(running);
        }
        let all_running_stream = o.streaming as f64 >= running - 0.5;
        if waiting > 0.0 && running >= 1.0 && all_running_stream && self.stable_polls >= STABLE_POLLS {
            Admission::AtCapacity
        } else {
            Admission::NotYet
        }
    }

    fn check_client(&mut self, o: &Observation) -> Admission {
        if o.streaming != self.last_streaming || self.streaming_since.is_none() {
            self.last_streaming = o.streaming;
            self.streaming_since = Some(o.now);
            return Admission::NotYet;
        }
        let flat = self.streaming_since.is_some_and(|t| o.now.saturating_duration_since(t) >= STABLE_WITHOUT_METRICS);
        if flat && o.streaming >= 1 && o.in_flight >= i64::from(o.requested) {
            Admission::AtCapacity
        } else {
            Admission::NotYet
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(streaming: i64, metrics: Option<(u64, f64, f64)>, now: Instant) -> Observation {
        Observation { requested: 16, in_flight: 16, streaming, metrics, now }
    }

    #[test]
    fn full_when_every_stream_streams() {
        let mut t = AdmissionTracker::default();
        let now = Instant::now();
        assert_eq!(
            t.check(&Observation { requested: 4, in_flight: 4, streaming: 4, metrics: None, now }),
            Admission::Full
        );
    }

    #[test]
    fn plateau_with_a_queue_is_capacity() {
        let mut t = AdmissionTracker::default();
        let now = Instant::now();
        for seq in 0..4 {
            assert_eq!(t.check(&obs(8, Some((seq, 8.0, 8.0)), now)), Admission::NotYet);
        }
        assert_eq!(t.check(&obs(8, Some((4, 8.0, 8.0)), now)), Admission::AtCapacity);
    }

    #[test]
    fn a_prefilling_stream_is_not_a_plateau() {
        let mut t = AdmissionTracker::default();
        let now = Instant::now();
        for seq in 0..10 {
            // Six running, but one of them still prefills: five stream.
            assert_eq!(t.check(&obs(5, Some((seq, 6.0, 10.0)), now)), Admission::NotYet);
        }
    }

    #[test]
    fn growth_resets_the_plateau_and_repeated_rounds_do_not_count() {
        let mut t = AdmissionTracker::default();
        let now = Instant::now();
        for _ in 0..10 {
            assert_eq!(t.check(&obs(8, Some((1, 8.0, 8.0)), now)), Admission::NotYet, "same round seen again");
        }
        for seq in 2..6 {
            t.check(&obs(8, Some((seq, 8.0, 8.0)), now));
        }
        assert_eq!(t.check(&obs(9, Some((6, 9.0, 7.0)), now)), Admission::NotYet);
    }

    #[test]
    fn without_metrics_a_flat_streaming_count_is_capacity() {
        let mut t = AdmissionTracker::default();
        let t0 = Instant::now();
        assert_eq!(t.check(&obs(8, None, t0)), Admission::NotYet);
        assert_eq!(t.check(&obs(8, None, t0 + Duration::from_secs(1))), Admission::NotYet);
        assert_eq!(t.check(&obs(8, None, t0 + Duration::from_secs(3))), Admission::AtCapacity);
    }
}
