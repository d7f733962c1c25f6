//! `run --shard i/N`, `--shards N`, `--session-id ID`, `--start-at T` (issue 27): one process's
//! slice of a session run by N copies of the binary (a Kubernetes Indexed Job, Slurm's srun,
//! ssh). Checked here, before any load: a bad value is one line and exit 2.

use crate::config::shard::ShardSpec;
use clap::Args;
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Farthest ahead `--start-at` may be.
pub(crate) const START_AT_AHEAD_MAX: Duration = Duration::from_secs(24 * 3600);
/// Farthest in the past `--start-at` may be (a pod that starts a little late still runs; the
/// first cell then starts late, which the report records).
pub(crate) const START_AT_PAST_MAX: Duration = Duration::from_secs(5);

/// The sharding flags of `run`.
#[derive(Debug, Clone, Default, Args)]
pub struct ShardFlags {
    /// This process's shard of a sharded session, `i/N`, 0-based (`0/4` to `3/4`). Every shard
    /// builds the same plan and sends its slice: closed loop floor(conc/N) streams, plus one for
    /// the first conc mod N shards; open loop (--request-rate), serve, conversation and routing
    /// (priming on shard 0 only) arrival k of the one seeded schedule on shard k mod N. Shards of one session must get the same
    /// flags otherwise (the session id and the seed are derived from them)
    #[arg(long, value_name = "i/N")]
    pub shard: Option<ShardSpec>,
    /// Shards in the session, this one's index read from JOB_COMPLETION_INDEX (a Kubernetes
    /// Indexed Job) or else SLURM_PROCID (srun); instead of --shard
    #[arg(long, value_name = "N")]
    pub shards: Option<u32>,
    /// The session's id, the same in every shard (report `shard.session_id`, `report merge`)
    /// [default in a sharded run: a hash of the plan's settings and --start-at, which every
    /// shard given the same flags computes alike]
    #[arg(long, value_name = "ID")]
    pub session_id: Option<String>,
    /// Wall-clock instant the session's cells start at, unix seconds (e.g. `$(( $(date +%s) +
    /// 60 ))`) or RFC 3339 (`2026-12-06T08:00:00Z`), with --shard/--shards: the run waits until
    /// then, then starts every decode cell at its fixed slot of a timeline every shard computes
    /// alike (--warmup-timeout, then the window, then a 14 s drain allowance; the window opens
    /// when the warmup ends, at the same instant on every shard, so every warmup lasts
    /// --warmup-timeout); a routing phase's slot is shard 0's priming (--priming-slot), then its
    /// measured part from the same instant on every shard; serve and conversation cells get
    /// slots with --request-timeout (else they start when the one before ends). At most a day
    /// ahead; a shard started up to 5 s after it still runs (its first cell late, recorded in the
    /// report's `shard.timeline`), later is exit 2. With --resume: a new instant for a resumed
    /// shard, replacing the saved one
    #[arg(long, value_name = "T", value_parser = parse_start_at)]
    pub start_at: Option<SystemTime>,
    /// Longest a serve, conversation or burst request may take from its send; past it the
    /// request is cut (recorded `cut`, not completed). On the --start-at timeline it bounds those
    /// cells' slots: 3 s lead, the schedule's last arrival, this (per turn for a conversation,
    /// plus the longest think time between turns), then 4 s for the closing scrapes [default:
    /// no limit]
    #[arg(long, value_name = "D", value_parser = crate::units::parse_duration)]
    pub request_timeout: Option<Duration>,
}

/// What the flags resolve to.
#[derive(Debug, Clone, PartialEq)]
pub struct Sharding {
    /// This process's shard, None unsharded.
    pub shard: Option<ShardSpec>,
    /// The session id given (derived later, from the settings, when None in a sharded run).
    pub session_id: Option<String>,
    /// `--start-at`.
    pub start_at: Option<SystemTime>,
    /// `--request-timeout`.
    pub request_timeout: Option<Duration>,
}

impl ShardFlags {
    /// Checks the flags against the environment `var` reads and the time `now`.
    pub fn resolve(&self, var: impl Fn(&str) -> Option<String>, now: SystemTime) -> Result<Sharding, String> {
        let shard = match (self.shard, self.shards) {
            (Some(_), Some(_)) => return Err("give --shard i/N or --shards N, not both".into()),
            (Some(s), None) => Some(s),
            (None, Some(n)) => Some(from_env(n, &var)?),
            (None, None) => None,
        };
        if let Some(id) = &self.session_id {
            check_session_id(id)?;
        }
        if let Some(t) = self.start_at {
            check_start_at(t, now)?;
        }
        if self.request_timeout.is_some_and(|t| t.is_zero()) {
            return Err("--request-timeout must be longer than 0".into());
        }
        let (session_id, start_at, request_timeout) = (self.session_id.clone(), self.start_at, self.request_timeout);
        Ok(Sharding { shard, session_id, start_at, request_timeout })
    }
}

/// `--shards N`: the index from JOB_COMPLETION_INDEX, else SLURM_PROCID.
fn from_env(count: u32, var: &impl Fn(&str) -> Option<String>) -> Result<ShardSpec, String> {
    if count == 0 {
        return Err("--shards must be at least 1".into());
    }
    let (name, value) = ["JOB_COMPLETION_INDEX", "SLURM_PROCID"]
        .into_iter()
        .find_map(|n| var(n).map(|v| (n, v)))
        .ok_or("--shards: neither JOB_COMPLETION_INDEX nor SLURM_PROCID is set (or give --shard i/N)")?;
    let index: u32 = value.trim().parse().map_err(|_| format!("--shards: {name}={value:?} is not a shard index"))?;
    if index >= count {
        return Err(format!("--shards {count}: {name}={index} is not below {count} (shards are 0-based)"));
    }
    ShardSpec::new(index, count)
}

/// A session id: 1 to 64 of `A-Z a-z 0-9 . _ -` (it labels metrics and names files).
fn check_session_id(id: &str) -> Result<(), String> {
    let ok = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
    match id.is_empty() || id.len() > 64 || !id.chars().all(ok) {
        true => Err(format!("--session-id {id:?}: use 1 to 64 letters, digits, `.`, `_` or `-`")),
        false => Ok(()),
    }
}

/// `--start-at`: unix seconds (fractions allowed) or RFC 3339.
pub(crate) fn parse_start_at(s: &str) -> Result<SystemTime, String> {
    let t = s.trim();
    if let Ok(secs) = t.parse::<f64>() {
        return match (0.0..1e11).contains(&secs) {
            true => Ok(UNIX_EPOCH + Duration::from_secs_f64(secs)),
            false => Err(format!("`{s}` is not a unix time in seconds")),
        };
    }
    humantime::parse_rfc3339_weak(t)
        .ok()
        .or_else(|| with_offset(t))
        .ok_or_else(|| format!("`{s}` is neither unix seconds nor an RFC 3339 time (2026-12-06T08:00:00Z)"))
}

/// An RFC 3339 time with a numeric offset (`...T17:02:56+05:30`), which humantime reads only
/// as `Z`: the time at UTC, less the offset.
fn with_offset(t: &str) -> Option<SystemTime> {
    let (base, off) = t.split_at_checked(t.len().checked_sub(6)?)?;
    let b = off.as_bytes();
    if !matches!(b[0], b'+' | b'-') || b[3] != b':' || !base.contains('T') {
        return None;
    }
    let (h, m): (u64, u64) = (off[1..3].parse().ok()?, off[4..6].parse().ok()?);
    if h > 23 || m > 59 {
        return None;
    }
    let utc = humantime::parse_rfc3339_weak(&format!("{base}Z")).ok()?;
    let d = Duration::from_secs(h * 3600 + m * 60);
    if b[0] == b'+' { utc.checked_sub(d) } else { utc.checked_add(d) }
}

/// Whether `t` is at most a day ahead of `now` and at most a few seconds behind it.
fn check_start_at(t: SystemTime, now: SystemTime) -> Result<(), String> {
    let shown = unix_s(t);
    match t.duration_since(now) {
        Ok(ahead) if ahead > START_AT_AHEAD_MAX => {
            Err(format!("--start-at {shown:.3} is {:.0} h away; at most 24 h ahead", ahead.as_secs_f64() / 3600.0))
        }
        Ok(_) => Ok(()),
        Err(e) if e.duration() > START_AT_PAST_MAX => Err(format!(
            "--start-at {shown:.3} passed {:.1} s ago (this machine's clock); give a time ahead",
            e.duration().as_secs_f64()
        )),
        Err(_) => Ok(()),
    }
}

/// Seconds since the unix epoch.
pub(crate) fn unix_s(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// The session id every shard derives alike from the plan's `settings` (the seed left out:
/// it may itself be derived from the id) and `--start-at`: `s-` and 12 hex digits.
pub(crate) fn derived_session_id(settings: &BTreeMap<String, String>, start_at: Option<SystemTime>) -> String {
    let mut text = String::new();
    for (k, v) in settings.iter().filter(|(k, _)| !matches!(k.as_str(), "seed" | "shard" | "session-id")) {
        text.push_str(&format!("{k}={v}\n"));
    }
    if let Some(t) = start_at {
        text.push_str(&format!("start-at={:.3}\n", unix_s(t)));
    }
    let h = xxhash_rust::xxh64::xxh64(text.as_bytes(), 27);
    format!("s-{:012x}", h >> 16)
}

/// The seed of a sharded session given no `--seed`: the same on every shard, from its id.
pub(crate) fn derived_seed(session_id: &str) -> u64 {
    // Below 2^32 as a drawn seed is, so it prints and parses back like one.
    xxhash_rust::xxh64::xxh64(session_id.as_bytes(), 0x5eed) >> 32
}

#[cfg(test)]
#[path = "shard_flags_tests.rs"]
mod tests;
