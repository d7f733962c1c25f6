//! The ranges of `run`'s numeric flags (and so of a `--config` file's keys), checked before
//! any load is sent: each refusal is one line naming the flag and what it takes. Durations
//! are capped by [`crate::units::parse_duration`] (365 days) and rates by
//! [`crate::config::Rate`]; the counts and factors here are bounded so that nothing the
//! session derives from them (schedules, prompts, deadlines) can overflow or exhaust memory.

use super::run::RunArgs;
use crate::units::{format_size, in_range};
use std::time::Duration;

/// The most tokens a token-count flag takes (`--ctx`, `--output`, `--prompt-tokens`, ...): 64m,
/// above the longest context of any served model.
pub(crate) const MAX_TOKENS: u64 = 64 * 1024 * 1024;
/// The most streams `--conc` takes.
pub(crate) const MAX_CONC: u32 = 1_000_000;
/// A measurement window spans at least this many metric polls (`--poll-interval`).
pub(crate) const WINDOW_POLLS: u32 = 4;
/// The most requests per routing phase or serve cell (`--count`).
const MAX_COUNT: u32 = 1_000_000;
/// The most routing rounds (`--rounds`).
const MAX_ROUNDS: u32 = 1_000;
/// The most prompt families per phase (`--families`).
const MAX_FAMILIES: u32 = 10_000;
/// The most priming candidates (`--priming-candidates`).
const MAX_CANDIDATES: u32 = 100_000;

/// A token count (`0`, `16k`, `1m`) of at most [`MAX_TOKENS`].
pub(crate) fn tokens(s: &str) -> Result<u64, String> {
    let n = crate::units::parse_size(s)?;
    match n <= MAX_TOKENS {
        true => Ok(n),
        false => Err(format!("`{s}` is more than {} tokens, the most a token count takes", format_size(MAX_TOKENS))),
    }
}

/// An output length (`--max-tokens`, `--burst-tokens`, `--output`): a token count of at
/// least 1, since a server refuses `max_tokens` 0 (HTTP 400) and every request would fail.
pub(crate) fn output_tokens(s: &str) -> Result<u64, String> {
    match tokens(s)? {
        0 => Err("an output length must be at least 1 token (servers refuse max_tokens 0)".into()),
        n => Ok(n),
    }
}

/// A stream count from 1 to [`MAX_CONC`].
pub(crate) fn streams(s: &str) -> Result<u32, String> {
    let n: u32 = s.trim().parse().map_err(|_| format!("`{s}` is not a stream count"))?;
    match n {
        0 => Err("concurrency must be at least 1".into()),
        n if n > MAX_CONC => Err(format!("`{s}`: concurrency must be at most {MAX_CONC} streams")),
        n => Ok(n),
    }
}

/// The shortest `--window` the poll interval allows: [`WINDOW_POLLS`] polls.
pub(crate) fn shortest_window(poll: Duration) -> Duration {
    poll.saturating_mul(WINDOW_POLLS)
}

/// Checks the ranges of `args` that clap's parsers leave open.
pub(crate) fn check(args: &RunArgs) -> Result<(), String> {
    let floor = shortest_window(args.poll_interval);
    if args.window < floor {
        return Err(format!(
            "--window {} is shorter than {WINDOW_POLLS} metric polls ({} at --poll-interval {}); \
             lower --poll-interval (down to 50ms) for a shorter window",
            humantime::format_duration(args.window),
            humantime::format_duration(floor),
            humantime::format_duration(args.poll_interval),
        ));
    }
    in_range("--burstiness", args.burstiness, 0.001, 1000.0)?;
    in_range("--rps", args.rps, crate::config::rate::MIN_RATE, crate::config::rate::MAX_RATE)?;
    let counts = [
        ("--count", args.count, MAX_COUNT),
        ("--rounds", args.rounds, MAX_ROUNDS),
        ("--families", args.families, MAX_FAMILIES),
        ("--priming-candidates", args.priming_candidates, MAX_CANDIDATES),
    ];
    if let Some((flag, v, most)) = counts.iter().find(|(_, v, most)| v > most) {
        return Err(format!("{flag} {v} is more than {most}, the most it takes"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_and_streams_are_bounded() {
        assert_eq!(tokens("64m"), Ok(MAX_TOKENS));
        assert!(tokens("65m").unwrap_err().contains("more than 64m tokens"));
        assert!(tokens("1e300").is_err() && tokens("-1").is_err() && tokens("nan").is_err());
        assert_eq!(streams("1000000"), Ok(MAX_CONC));
        assert!(streams("1000001").unwrap_err().contains("at most 1000000"));
        assert!(streams("0").is_err() && streams("4294967296").is_err());
    }

    #[test]
    fn the_shortest_window_is_four_polls() {
        assert_eq!(shortest_window(Duration::from_millis(250)), Duration::from_secs(1));
        assert_eq!(shortest_window(Duration::from_millis(50)), Duration::from_millis(200));
        assert_eq!(shortest_window(crate::units::LONGEST), crate::units::LONGEST * 4, "no overflow");
    }
}
