//! Deciding when the engine has admitted the requested concurrency (end of warmup).
//!
//! Admitted in full: every requested stream has its first token. Admitted at capacity: the
//! server keeps requests waiting while its running count has stopped growing and every
//! running request already streams, and that plateau has held for longer than a prefill
//! takes. A fixed number of polls is not enough: with long prompts an engine prefills one
//! prompt at a time under its token budget (running rises 1, 2, 3 one prefill apart, the rest
//! wait; docs/protocol.md §8.6), and its running gauge is written after each step,
//! so during a long prefill step it still shows the streams that already decode. The plateau
//! must therefore outlast the longest TTFT observed so far times [`PLATEAU_MARGIN`] (and at
//! least [`STABLE_POLLS`] polls). On Prometheus: `running` unchanged, `waiting > 0`; without
//! Prometheus, the count of streaming requests has not grown for [`STABLE_WITHOUT_METRICS`]
//! (or the same TTFT-based hold) while all streams are in flight.
//!
//! Short requests (`--max-tokens 16`) never have every stream past its first token at once:
//! each slot is between requests part of the time. Once the attempt has finished as many
//! requests as it keeps streams (each slot turned over once: a steady state), the check
//! reads the queue instead: no request waiting is admitted in full; a queue with a flat
//! running count is a limit, prefills in progress or not; without Prometheus the turnover
//! itself ends the warmup, since nothing else can tell a queue from a slot between requests.
//!
//! A shard (`run --shard i/N`) sees only its own streams while the server's counts hold every
//! shard's, so there the plateau alone makes a limit (`Observation::sharded`).

use std::time::Duration;
use tokio::time::Instant;

/// Polls of an unchanged running count that make a plateau, at least.
pub(crate) const STABLE_POLLS: u32 = 4;
/// How long the streaming count must stay flat without Prometheus, at least.
pub(crate) const STABLE_WITHOUT_METRICS: Duration = Duration::from_secs(2);
/// A plateau must last this many times the longest TTFT seen (a prefill takes at most that).
pub(crate) const PLATEAU_MARGIN: f64 = 1.5;

/// Outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Keep warming.
    NotYet,
    /// Every stream is producing tokens.
    Full,
    /// The engine runs fewer requests than asked for and keeps the rest waiting.
    AtCapacity,
}

/// What one check looks at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Observation {
    /// Requested streams.
    pub requested: u32,
    /// Client streams in flight.
    pub in_flight: i64,
    /// Client streams that have their first token.
    pub streaming: i64,
    /// Requests of the attempt the server has finished.
    pub completed: u64,
    /// Longest time to first token among the attempt's requests so far (None before any).
    pub max_ttft: Option<Duration>,
    /// The latest metrics round: (sequence number, running sum, waiting sum), when any.
    pub metrics: Option<(u64, f64, f64)>,
    /// Now.
    pub now: Instant,
    /// A shard's attempt (`run --shard i/N`): the server's running and waiting counts hold every
    /// shard's streams, and this shard sees only its own streaming, so whether every running
    /// request already streams cannot be told; the plateau (held longer than a prefill takes)
    /// decides alone.
    pub sharded: bool,
}

impl Observation {
    /// How long a plateau must hold, at least `floor`: the longest TTFT x [`PLATEAU_MARGIN`].
    fn hold(&self, floor: Duration) -> Duration {
        self.max_ttft.map_or(floor, |t| crate::units::secs(t.as_secs_f64() * PLATEAU_MARGIN).max(floor))
    }
}

/// Remembers what earlier checks saw.
#[derive(Debug, Clone, Default)]
pub(crate) struct AdmissionTracker {
    last_seq: Option<u64>,
    last_running: Option<f64>,
    stable_polls: u32,
    plateau_since: Option<Instant>,
    last_streaming: i64,
    streaming_since: Option<Instant>,
}

impl AdmissionTracker {
    /// Checks one observation.
    pub(crate) fn check(&mut self, o: &Observation) -> Admission {
        if o.streaming >= i64::from(o.requested) {
            return Admission::Full;
        }
        let turned_over = o.completed >= u64::from(o.requested);
        match o.metrics {
            Some((seq, running, waiting)) if turned_over => self.check_turnover(o, seq, running, waiting),
            Some((seq, running, waiting)) => self.check_metrics(o, seq, running, waiting),
            None if turned_over => Admission::Full,
            None => self.check_client(o),
        }
    }

    /// Steady state of short requests: the queue decides, not the streaming count.
    fn check_turnover(&mut self, o: &Observation, seq: u64, running: f64, waiting: f64) -> Admission {
        if waiting <= 0.0 {
            return Admission::Full;
        }
        self.observe_round(o, seq, running, waiting);
        if running >= 1.0 && self.stable_polls >= STABLE_POLLS && self.held(o) {
            Admission::AtCapacity
        } else {
            Admission::NotYet
        }
    }

    /// Counts a new metrics round toward (or against) a plateau; a repeated round is ignored.
    fn observe_round(&mut self, o: &Observation, seq: u64, running: f64, waiting: f64) {
        if self.last_seq == Some(seq) {
            return;
        }
        self.last_seq = Some(seq);
        let same = self.last_running == Some(running) && waiting > 0.0;
        self.stable_polls = if same { self.stable_polls + 1 } else { 0 };
        if !same {
            self.plateau_since = Some(o.now);
        }
        self.last_running = Some(running);
    }

    /// True once the plateau has lasted longer than a prefill takes.
    fn held(&self, o: &Observation) -> bool {
        self.plateau_since.is_some_and(|t| o.now.saturating_duration_since(t) >= o.hold(Duration::ZERO))
    }

    fn check_metrics(&mut self, o: &Observation, seq: u64, running: f64, waiting: f64) -> Admission {
        self.observe_round(o, seq, running, waiting);
        let all_running_stream = o.sharded || o.streaming as f64 >= running - 0.5;
        if waiting > 0.0 && running >= 1.0 && all_running_stream && self.stable_polls >= STABLE_POLLS && self.held(o) {
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
        let hold = o.hold(STABLE_WITHOUT_METRICS);
        let flat = self.streaming_since.is_some_and(|t| o.now.saturating_duration_since(t) >= hold);
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
        Observation {
            requested: 16,
            in_flight: 16,
            streaming,
            completed: 0,
            max_ttft: None,
            metrics,
            now,
            sharded: false,
        }
    }

    #[test]
    fn full_when_every_stream_streams() {
        let mut t = AdmissionTracker::default();
        let now = Instant::now();
        assert_eq!(
            t.check(&Observation {
                requested: 4,
                in_flight: 4,
                streaming: 4,
                completed: 0,
                max_ttft: None,
                metrics: None,
                now,
                sharded: false,
            }),
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

    /// Shard 1 of 2 at conc 8 against a server capped at 4: the server runs 4 (3 of the other
    /// shard's, 1 of this one's) and queues 4. Its own 1 streaming of 4 is no sign of a prefill,
    /// so the plateau is the limit (unsharded, 1 streaming of 4 running would be).
    #[test]
    fn a_shard_judges_the_plateau_without_the_other_shards_streams() {
        let o = |seq: u64, sharded: bool| Observation {
            requested: 4,
            in_flight: 4,
            sharded,
            ..obs(1, Some((seq, 4.0, 4.0)), Instant::now())
        };
        let (mut shard, mut whole) = (AdmissionTracker::default(), AdmissionTracker::default());
        for seq in 0..STABLE_POLLS as u64 {
            assert_eq!(shard.check(&o(seq, true)), Admission::NotYet);
        }
        assert_eq!(shard.check(&o(STABLE_POLLS as u64, true)), Admission::AtCapacity);
        for seq in 0..=STABLE_POLLS as u64 {
            assert_eq!(whole.check(&o(seq, false)), Admission::NotYet, "three running would still prefill");
        }
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

    #[test]
    fn a_plateau_shorter_than_a_prefill_is_not_capacity() {
        // docs/protocol.md §8.6: 8k prompts at conc 4, one prefill about 16 s. The second
        // stream streams after 32 s; while the third prefills, the gauge still says running 2,
        // waiting 2. Polls every 250 ms for the 16 s of that prefill never make a plateau.
        let mut t = AdmissionTracker::default();
        let t0 = Instant::now();
        let ttft = Some(Duration::from_secs(32));
        let o = |seq: u64, at: Duration, streaming: i64, running: f64, waiting: f64| Observation {
            requested: 4,
            in_flight: 4,
            streaming,
            completed: 0,
            max_ttft: ttft,
            metrics: Some((seq, running, waiting)),
            now: t0 + at,
            sharded: false,
        };
        for seq in 0..64 {
            let at = Duration::from_millis(250 * seq);
            assert_eq!(t.check(&o(seq, at, 2, 2.0, 2.0)), Admission::NotYet, "{at:?} into the prefill");
        }
        // A plateau that outlasts 1.5 x the longest TTFT (48 s) is a limit.
        let mut seq = 64;
        let mut last = Admission::NotYet;
        while seq < 250 {
            last = t.check(&o(seq, Duration::from_millis(250 * seq), 2, 2.0, 2.0));
            if last == Admission::AtCapacity {
                break;
            }
            seq += 1;
        }
        assert_eq!(last, Admission::AtCapacity);
        assert!(Duration::from_millis(250 * seq) >= Duration::from_secs(48), "opened at poll {seq}");
    }

    #[test]
    fn without_metrics_the_hold_follows_the_ttft() {
        let mut t = AdmissionTracker::default();
        let t0 = Instant::now();
        let o = |at: u64| Observation {
            requested: 4,
            in_flight: 4,
            streaming: 1,
            completed: 0,
            max_ttft: Some(Duration::from_secs(16)),
            metrics: None,
            now: t0 + Duration::from_secs(at),
            sharded: false,
        };
        assert_eq!(t.check(&o(0)), Admission::NotYet);
        assert_eq!(t.check(&o(3)), Admission::NotYet, "2 s is shorter than a 16 s prefill");
        assert_eq!(t.check(&o(20)), Admission::NotYet);
        assert_eq!(t.check(&o(24)), Admission::AtCapacity);
    }

    /// `--max-tokens 16` at 8 streams: some slot is always between requests, so the streaming
    /// count never reaches 8; once every slot turned over, an empty queue is full admission.
    #[test]
    fn short_requests_turn_over_into_full_admission() {
        let mut t = AdmissionTracker::default();
        let now = Instant::now();
        let o = |completed: u64, seq: u64, waiting: f64| Observation {
            requested: 8,
            in_flight: 8,
            streaming: 6,
            completed,
            max_ttft: None,
            metrics: Some((seq, 7.0, waiting)),
            now,
            sharded: false,
        };
        assert_eq!(t.check(&o(3, 0, 0.0)), Admission::NotYet, "not yet turned over");
        assert_eq!(t.check(&o(8, 1, 0.0)), Admission::Full);
        let mut t = AdmissionTracker::default();
        assert_eq!(t.check(&Observation { metrics: None, ..o(8, 0, 0.0) }), Admission::Full, "no metrics");
    }

    /// Short requests against a server that keeps a queue: a flat running count with waiting
    /// requests is a limit even while some running requests prefill.
    #[test]
    fn short_requests_with_a_queue_are_capacity() {
        let mut t = AdmissionTracker::default();
        let now = Instant::now();
        let o = |seq: u64| Observation {
            requested: 16,
            in_flight: 16,
            streaming: 3,
            completed: 40,
            max_ttft: None,
            metrics: Some((seq, 4.0, 12.0)),
            now,
            sharded: false,
        };
        for seq in 0..STABLE_POLLS as u64 {
            assert_eq!(t.check(&o(seq)), Admission::NotYet);
        }
        assert_eq!(t.check(&o(STABLE_POLLS as u64)), Admission::AtCapacity);
    }
}
