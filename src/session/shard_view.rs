//! What a shard's monitor shows of its place in a sharded session (`run --shard i/N`, issue
//! 27): which shard it is, the `--start-at` instant and its clock warning, what the runner
//! waits for before a slot of the timeline, and the note that answers the operator's keys a
//! shard does not apply (a paused or skipped attempt would leave the timeline every other
//! shard keeps).

use crate::cell::control::Command;
use crate::config::RunConfig;
use crate::report::shard::ClockReading;
use crate::session::clock::CLOCK_WARN_MS;
use std::time::{Duration, SystemTime};
use tokio::time::Instant;

/// The shard the monitor belongs to, as its header names it.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardView {
    /// This shard, 0-based.
    pub index: u32,
    /// Shards in the session.
    pub count: u32,
    /// The session id every shard shares (`--session-id`, or derived).
    pub session_id: String,
    /// The session's `--start-at`, wall clock.
    pub start_at: Option<SystemTime>,
    /// This machine's clock when `session::clock` warns about it, in a few words for the
    /// header (`clock off 1.5 ms`; the log has the whole warning).
    pub clock_warning: Option<String>,
}

impl ShardView {
    /// The view of a sharded `cfg` (None unsharded); reads this machine's clock.
    pub fn of(cfg: &RunConfig) -> Option<Self> {
        let shard = cfg.shard?;
        Some(Self {
            index: shard.index,
            count: shard.count,
            session_id: cfg.session_id.clone().unwrap_or_default(),
            start_at: cfg.start_at,
            clock_warning: clock_short(super::clock::now().as_ref()),
        })
    }

    /// The note that answers pause, skip, re-run and the knob in this shard's monitor.
    pub fn keys_note(&self) -> String {
        keys_note(self.index, self.count)
    }
}

/// The header's few words on a clock `session::clock::warning` warns about: unknown,
/// unsynchronised, or off (offset or estimated error above its 1 ms), None otherwise.
pub(crate) fn clock_short(r: Option<&ClockReading>) -> Option<String> {
    let Some(r) = r else { return Some("clock offset unknown".into()) };
    if !r.synced {
        return Some("clock unsynchronised".into());
    }
    let off = r.offset_ms.unwrap_or(0.0).abs().max(r.est_error_ms.unwrap_or(0.0));
    (off > CLOCK_WARN_MS).then(|| format!("clock off {off:.1} ms"))
}

/// The note that answers pause, skip, re-run and the knob in shard `index` of `count`.
pub fn keys_note(index: u32, count: u32) -> String {
    format!(
        "sharded run: pause/skip/re-run/knob are not applied, they would put shard {index}/{count} out of step with the others; q stops this shard"
    )
}

/// True for the commands a shard does not apply: each would move its attempts off the
/// session's timeline (a paused attempt is re-run later with no slot, a skipped or re-run
/// cell changes which attempt fills a slot, the knob changes this shard's load alone).
pub(crate) fn desyncs(cmd: &Command) -> bool {
    matches!(cmd, Command::Pause | Command::Resume | Command::Skip(_) | Command::Rerun(_) | Command::Knob(_))
}

/// True when a sharded session refuses `cmd` ([`desyncs`]); the refusal is said in the log.
/// The runner asks this of every command, whichever key or path sent it.
pub(crate) fn refuse(env: &crate::cell::context::CellEnv, cmd: &Command) -> bool {
    let Some(shard) = env.cfg.shard.filter(|_| desyncs(cmd)) else { return false };
    env.emit(crate::cell::control::RunnerEvent::Log(keys_note(shard.index, shard.count)));
    true
}

/// What the runner waits for before its next attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitFor {
    /// The session's `--start-at`.
    StartAt,
    /// The slot of the named cell on the timeline.
    Slot(String),
}

/// A wait of the runner for a wall-clock instant, as the Live panel shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineWait {
    /// What it waits for.
    pub what: WaitFor,
    /// The instant, wall clock (shown as UTC).
    pub due_wall: SystemTime,
    /// The same instant on the monotonic clock the monitor counts with.
    pub due: Instant,
}

impl TimelineWait {
    /// A wait for `due_wall`, read against the clocks now.
    pub fn new(what: WaitFor, due_wall: SystemTime) -> Self {
        Self { what, due_wall, due: instant_of(due_wall) }
    }

    /// The Live panel's line at `now`: `waiting for --start-at 10:31:05 (in 12 s)`,
    /// `ctx=0 conc=8: its slot opens in 4.2 s (10:31:40)` (UTC).
    pub fn line(&self, now: Instant) -> String {
        self.halves(now).join(" ")
    }

    /// [`Self::line`] in the two halves a narrow panel shows on two lines.
    pub fn halves(&self, now: Instant) -> [String; 2] {
        let left = self.due.saturating_duration_since(now);
        let (at, left) = (clock_utc(self.due_wall), in_text(left));
        match &self.what {
            WaitFor::StartAt => [format!("waiting for --start-at {at}"), format!("(in {left})")],
            WaitFor::Slot(label) => [format!("{label}:"), format!("its slot opens in {left} ({at})")],
        }
    }
}

/// The monotonic instant of wall-clock `t`, by the two clocks read now.
pub(crate) fn instant_of(t: SystemTime) -> Instant {
    let (now, wall) = (Instant::now(), SystemTime::now());
    match t.duration_since(wall) {
        Ok(ahead) => now + ahead,
        Err(e) => now.checked_sub(e.duration()).unwrap_or(now),
    }
}

/// `12 s` at 10 s and above, `4.2 s` below.
fn in_text(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 10.0 { format!("{s:.0} s") } else { format!("{s:.1} s") }
}

/// `10:31:05` UTC of `t`.
pub fn clock_utc(t: SystemTime) -> String {
    let s = t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs()) % 86_400;
    format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

/// The log line a shard starts with: which shard of which session, from when.
pub(crate) fn shard_line(cfg: &crate::config::RunConfig) -> Option<String> {
    let shard = cfg.shard?;
    let id = cfg.session_id.as_deref().unwrap_or("?");
    let from = match cfg.start_at {
        Some(t) => format!("from --start-at {}", humantime::format_rfc3339_seconds(t)),
        None => "without --start-at".into(),
    };
    Some(format!("shard {}/{} of session {id}, {from}", shard.index, shard.count))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::control::Knob;

    #[test]
    fn the_commands_that_move_a_shard_off_its_timeline_are_refused_and_the_rest_pass() {
        for cmd in [Command::Pause, Command::Resume, Command::Skip(None), Command::Rerun(2), Command::Knob(Knob::Up)] {
            assert!(desyncs(&cmd), "{cmd:?}");
        }
        assert!(!desyncs(&Command::Stop) && !desyncs(&Command::Save));
        let note = keys_note(1, 4);
        assert!(note.contains("shard 1/4 out of step") && note.contains("q stops this shard"), "{note}");
    }

    #[test]
    fn the_header_says_in_a_few_words_what_the_clock_warning_says() {
        let r = |synced, offset, err| ClockReading {
            source: "adjtimex".into(),
            synced,
            offset_ms: Some(offset),
            max_error_ms: None,
            est_error_ms: Some(err),
        };
        assert_eq!(clock_short(Some(&r(true, 0.2, 0.3))), None);
        assert_eq!(clock_short(Some(&r(true, -1.5, 0.1))).as_deref(), Some("clock off 1.5 ms"));
        assert_eq!(clock_short(Some(&r(true, 0.1, 2.26))).as_deref(), Some("clock off 2.3 ms"));
        assert_eq!(clock_short(Some(&r(false, 0.0, 0.0))).as_deref(), Some("clock unsynchronised"));
        assert_eq!(clock_short(None).as_deref(), Some("clock offset unknown"));
        // Each agrees with the log's warning: a few words exactly when it warns.
        for reading in [Some(r(true, 0.2, 0.3)), Some(r(true, 3.0, 0.0)), Some(r(false, 0.0, 0.0)), None] {
            let full = crate::session::clock::warning(reading.as_ref());
            assert_eq!(clock_short(reading.as_ref()).is_some(), full.is_some(), "{reading:?}");
        }
    }

    #[test]
    fn a_wait_says_what_for_when_and_how_long() {
        let due_wall = SystemTime::UNIX_EPOCH + Duration::from_secs(86_400 * 3 + 10 * 3600 + 31 * 60 + 5);
        let now = Instant::now();
        let start = TimelineWait { what: WaitFor::StartAt, due_wall, due: now + Duration::from_millis(12_300) };
        assert_eq!(start.line(now), "waiting for --start-at 10:31:05 (in 12 s)");
        let slot = TimelineWait { what: WaitFor::Slot("ctx=0 conc=8".into()), ..start };
        assert_eq!(slot.line(now + Duration::from_millis(8_100)), "ctx=0 conc=8: its slot opens in 4.2 s (10:31:05)");
        assert_eq!(slot.line(now + Duration::from_secs(60)), "ctx=0 conc=8: its slot opens in 0.0 s (10:31:05)");
    }

    #[test]
    fn wall_instants_map_onto_the_monotonic_clock() {
        let ahead = instant_of(SystemTime::now() + Duration::from_secs(30));
        let d = ahead.saturating_duration_since(Instant::now()).as_secs_f64();
        assert!((29.0..=30.0).contains(&d), "{d}");
        let behind = instant_of(SystemTime::now() - Duration::from_secs(30));
        assert!(behind <= Instant::now());
    }
}
