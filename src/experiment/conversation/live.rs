//! The conversation attempt's live view: as each turn's request ends, its turn index's counts,
//! mean history, median TTFT and (where usage says) cached share, and the sessions that ended,
//! for the monitor's Turns panel.

use super::turns::TurnCounts;
use crate::cell::attempt_loop::Tally;
use crate::cell::control::{ConversationLive, LiveAttempt, TurnLive};
use crate::load::sample::RequestSample;

/// Tallies a conversation attempt's requests by turn as they end.
#[derive(Debug)]
pub(crate) struct TurnTally {
    /// Turns each session sends (its script's user messages).
    turns_of: Vec<u32>,
    turns: Vec<TurnCounts>,
    sessions_done: u32,
}

impl TurnTally {
    /// A tally for sessions sending `turns_of[i]` turns each.
    pub(crate) fn new(turns_of: Vec<u32>) -> Self {
        Self { turns_of, turns: Vec::new(), sessions_done: 0 }
    }
}

impl Tally for TurnTally {
    fn extra(&mut self, s: &RequestSample, _replica: Option<&str>, live: &mut LiveAttempt) {
        let k = s.tag as usize;
        if self.turns.len() <= k {
            self.turns.resize_with(k + 1, TurnCounts::default);
        }
        self.turns[k].add(s);
        let last = self.turns_of.get(s.worker as usize).is_some_and(|n| s.tag + 1 >= *n);
        self.sessions_done += u32::from(last || !s.completed());
        let turns = self.turns.iter_mut().enumerate().map(|(i, t)| view(t, i as u32 + 1)).collect();
        let sessions = self.turns_of.len() as u32;
        live.conversation = Some(ConversationLive { sessions, sessions_done: self.sessions_done, turns });
    }
}

/// The live row of turn `turn`.
fn view(t: &mut TurnCounts, turn: u32) -> TurnLive {
    TurnLive {
        turn,
        done: t.done,
        failed: t.failed,
        prompt_tokens_mean: t.prompt_mean(),
        ttft_p50_ms: t.ttft.percentile(50.0),
        cached_ratio: t.cached_ratio(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::sample::{ErrorKind, Mark, Outcome};
    use std::time::Duration;
    use tokio::time::Instant;

    fn sample(session: u32, turn: u32, ok: bool, prompt: u64, cached: Option<u64>) -> RequestSample {
        let mut s = RequestSample::new(session, Instant::now());
        s.tag = turn;
        s.marks.push(Mark { at_us: 50_000 * u64::from(turn + 1), tokens: 1 });
        s.ended_at = s.sent_at + Duration::from_millis(300);
        (s.prompt_tokens, s.cached_tokens) = (Some(prompt), cached);
        s.outcome = match ok {
            true => Outcome::Completed(None),
            false => Outcome::Failed { kind: ErrorKind::ServerError, detail: "x".into() },
        };
        s
    }

    #[test]
    fn turns_and_ended_sessions_are_counted_as_requests_end() {
        let mut t = TurnTally::new(vec![2, 2, 2]);
        let mut live = LiveAttempt::default();
        for s in [
            sample(0, 0, true, 100, Some(0)),
            sample(1, 0, true, 120, Some(0)),
            sample(0, 1, true, 300, Some(96)),
            sample(2, 0, false, 0, None),
        ] {
            t.extra(&s, None, &mut live);
        }
        let c = live.conversation.expect("published");
        assert_eq!((c.sessions, c.sessions_done), (3, 2), "session 0 ended its 2 turns, session 2 failed");
        assert_eq!(c.turns.len(), 2);
        assert_eq!((c.turns[0].turn, c.turns[0].done, c.turns[0].failed), (1, 2, 1));
        assert_eq!(c.turns[0].prompt_tokens_mean, Some(110.0));
        assert_eq!(c.turns[0].ttft_p50_ms, Some(50.0));
        assert_eq!(c.turns[1].cached_ratio, Some(0.32));
        assert_eq!(c.turns[1].ttft_p50_ms, Some(100.0));
    }
}
