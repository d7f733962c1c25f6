//! The slots of open-loop cells on the session's timeline (`run --start-at`, issue 27): a serve
//! or conversation cell's requests arrive on one seeded global schedule that every shard
//! builds alike (src/experiment/serve/schedule.rs, src/load/slice.rs), so its slot is known
//! from the plan and the flags alone: a lead for the work before the load, the schedule's last
//! arrival, the longest the last request (or conversation) may then take under
//! `--request-timeout`, and the closing scrapes. Without `--request-timeout` a request has no
//! time limit (its first-token wait restarts while others stream, and the idle timeout is per
//! read), so such a cell has no slot, and the reason is said.

use crate::config::Rate;
use crate::config::RunConfig;
use crate::config::conversation::ThinkTime;
use std::time::Duration;

/// From a slot's start to its schedule's start: the work before the load (the scrape of the
/// server's counters, bounded by the poller's 2 s request timeout, and the first serve cell's
/// vocabulary probe). The schedule starts at this instant on every shard.
pub(crate) const SCHEDULE_LEAD: Duration = Duration::from_secs(3);

/// What a serve or conversation slot leaves after its last request: the closing scrapes (the
/// server's token count and the prefix-cache check), each bounded by the poller's 2 s request
/// timeout.
pub(crate) const CLOSE_ALLOWANCE: Duration = Duration::from_secs(4);

/// A slot: its length and when the cell's schedule (its window) opens in it; or why the cell
/// has none.
pub(crate) type SlotShape = Result<(Duration, Option<Duration>), String>;

/// The slot of a serve cell at `rate`: lead + the schedule's last arrival + `--request-timeout`
/// + the closing allowance.
pub(crate) fn serve_slot(cfg: &RunConfig, rate: Rate) -> SlotShape {
    let limit = request_limit(cfg)?;
    let last = match &cfg.serve.trace {
        Some(t) => crate::experiment::serve::trace::offsets(t, cfg.serve.num_prompts as usize).last().copied(),
        None => Some(last_arrival(cfg.serve.num_prompts, rate)),
    };
    Ok(shape(last.unwrap_or(Duration::ZERO).saturating_add(limit)))
}

/// The slot of a burst cell: lead + `--request-timeout` (every request is sent at the
/// schedule's start) + the closing allowance.
pub(crate) fn burst_slot(cfg: &RunConfig) -> SlotShape {
    Ok(shape(request_limit(cfg)?))
}

/// The slot of a conversation cell at `rate`: lead + the last conversation's arrival + its
/// turns, each within `--request-timeout`, with the longest think time between them + the
/// closing allowance. None for an unbounded think time (`exp:`).
pub(crate) fn conversation_slot(cfg: &RunConfig, rate: Rate) -> SlotShape {
    let limit = request_limit(cfg)?;
    let c = &cfg.conversation;
    let think = longest_think(c.think).ok_or_else(|| {
        format!("its think time ({}) has no upper bound, so a conversation's length has none", c.think)
    })?;
    let turns = c.turns.max(1);
    let one = limit.saturating_mul(turns).saturating_add(think.saturating_mul(turns - 1));
    Ok(shape(last_arrival(c.conversations, rate).saturating_add(one)))
}

/// `--request-timeout`, or why there is no bound without it.
fn request_limit(cfg: &RunConfig) -> Result<Duration, String> {
    cfg.request_timeout.ok_or_else(|| "its requests have no time limit (--request-timeout)".to_string())
}

/// The slot around a schedule whose requests all end within `span` of its start.
fn shape(span: Duration) -> (Duration, Option<Duration>) {
    (SCHEDULE_LEAD.saturating_add(span).saturating_add(CLOSE_ALLOWANCE), Some(SCHEDULE_LEAD))
}

/// The last of `n` arrivals at `rate` after the schedule's start: n / rate (the schedule is
/// scaled to land there, `schedule::arrival_offsets`), rounded up to the millisecond (at most
/// [`crate::units::LONGEST`]); 0 at `inf`.
pub(crate) fn last_arrival(n: u32, rate: Rate) -> Duration {
    match rate {
        Rate::PerSecond(r) if n > 0 => crate::units::secs((f64::from(n) / r * 1e3).ceil() / 1e3),
        _ => Duration::ZERO,
    }
}

/// The longest pause between two turns, when it is bounded.
fn longest_think(t: ThinkTime) -> Option<Duration> {
    match t {
        ThinkTime::None => Some(Duration::ZERO),
        ThinkTime::Fixed(d) => Some(d),
        ThinkTime::Uniform(a, b) => Some(a.max(b)),
        ThinkTime::Exponential(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::serve::schedule::arrival_offsets;
    use proptest::prelude::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    fn config(timeout: Option<Duration>) -> RunConfig {
        let mut cfg = crate::cli::run::tests_support::config();
        cfg.request_timeout = timeout;
        cfg.serve.num_prompts = 40;
        cfg
    }

    #[test]
    fn a_serve_slot_is_lead_last_arrival_timeout_and_close() {
        let cfg = config(Some(S(30)));
        let (len, opens) = serve_slot(&cfg, Rate::PerSecond(4.0)).unwrap();
        assert_eq!(opens, Some(SCHEDULE_LEAD));
        assert_eq!(len, SCHEDULE_LEAD + S(10) + S(30) + CLOSE_ALLOWANCE, "40 requests at 4/s: the last at 10 s");
        let (inf, _) = serve_slot(&cfg, Rate::Inf).unwrap();
        assert_eq!(inf, SCHEDULE_LEAD + S(30) + CLOSE_ALLOWANCE, "at inf every request arrives at once");
    }

    #[test]
    fn without_a_request_timeout_there_is_no_slot_and_the_reason_names_the_flag() {
        let cfg = config(None);
        let why = serve_slot(&cfg, Rate::PerSecond(4.0)).unwrap_err();
        assert!(why.contains("--request-timeout"), "{why}");
        assert!(conversation_slot(&cfg, Rate::Inf).is_err());
    }

    #[test]
    fn a_conversation_slot_spans_every_turn_and_the_longest_think_time() {
        let mut cfg = config(Some(S(10)));
        (cfg.conversation.conversations, cfg.conversation.turns) = (6, 3);
        cfg.conversation.think = ThinkTime::Uniform(S(1), S(2));
        let (len, opens) = conversation_slot(&cfg, Rate::PerSecond(2.0)).unwrap();
        // The last conversation arrives at 3 s, then 3 turns of 10 s and 2 pauses of 2 s.
        assert_eq!((len, opens), (SCHEDULE_LEAD + S(3) + S(34) + CLOSE_ALLOWANCE, Some(SCHEDULE_LEAD)));
        cfg.conversation.think = ThinkTime::Exponential(S(1));
        let why = conversation_slot(&cfg, Rate::Inf).unwrap_err();
        assert!(why.contains("no upper bound"), "{why}");
    }

    proptest! {
        /// The slot's last arrival is never before the schedule's, whatever the seed or shape,
        /// and at most a millisecond after.
        #[test]
        fn the_last_arrival_bounds_every_schedule(n in 1u32..3_000, rate in 0.01f64..500.0, b in 0.1f64..8.0, seed in 0u64..1_000) {
            let at = arrival_offsets(n as usize, Rate::PerSecond(rate), b, seed);
            let last = *at.last().unwrap();
            let bound = last_arrival(n, Rate::PerSecond(rate));
            prop_assert!(bound >= last, "{bound:?} < {last:?}");
            prop_assert!(bound - last <= Duration::from_millis(1) + Duration::from_nanos(10));
        }
    }
}
