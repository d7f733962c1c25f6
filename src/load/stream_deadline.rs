//! A request's deadlines while it streams: the wait for its first token (queued behind other
//! streams or facing a silent server) and the idle timeout once tokens flow.

use super::StreamSpec;
use super::StreamState;
use crate::load::classify::failure;
use crate::load::live::LiveCounters;
use crate::load::sample::{ErrorKind, Outcome};
use std::sync::atomic::Ordering;
use tokio::time::Instant;

/// The wait of a request for its first token (response head included): since when it counts,
/// and the attempt's token count then, to tell a queued request from a silent server.
pub(super) struct FirstTokenClock {
    sent: Instant,
    since: Instant,
    tokens: u64,
}

impl FirstTokenClock {
    pub(super) fn new(sent: Instant, live: &LiveCounters) -> Self {
        Self { sent, since: sent, tokens: live.tokens.load(Ordering::Relaxed) }
    }

    /// The first deadline, if the wait is bounded.
    pub(super) fn first(&self, spec: &StreamSpec<'_>) -> Option<Instant> {
        spec.first_token_timeout.map(|l| self.since + l)
    }

    /// At `now`, still without a first token: the next deadline, or the timeout.
    pub(super) fn check(
        &mut self,
        spec: &StreamSpec<'_>,
        live: &LiveCounters,
        now: Instant,
    ) -> Result<Option<Instant>, Outcome> {
        let Some(limit) = spec.first_token_timeout else { return Ok(None) };
        if self.since + limit > now {
            return Ok(Some(self.since + limit));
        }
        let tokens = live.tokens.load(Ordering::Relaxed);
        if spec.queued_waits && tokens != self.tokens {
            // Other streams received tokens meanwhile: this one is queued behind them.
            (self.since, self.tokens) = (now, tokens);
            return Ok(Some(now + limit));
        }
        let waited = now.saturating_duration_since(self.sent).as_secs_f64();
        Err(failure(ErrorKind::FirstTokenTimeout, &format!("no first token after {waited:.1} s")))
    }
}

/// The request's next deadline once its timer fired at `now`, or the failure it ran into:
/// stalled (silent past the idle timeout once tokens flow) or no first token in time.
pub(super) fn next_deadline(
    st: &StreamState<'_>,
    spec: &StreamSpec<'_>,
    last_data: Instant,
    clock: &mut FirstTokenClock,
    now: Instant,
) -> Result<Option<Instant>, Outcome> {
    if st.sample.marks.is_empty() {
        return clock.check(spec, st.live, now);
    }
    let due = last_data + spec.idle_timeout;
    if due > now {
        return Ok(Some(due));
    }
    let quiet = now.saturating_duration_since(last_data).as_secs_f64();
    Err(failure(ErrorKind::Stalled, &format!("no data for {quiet:.1} s")))
}
