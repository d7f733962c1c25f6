//! The runner on the session's timeline (`run --start-at`, issue 27): before each attempt that
//! has a slot it waits for the slot's wall-clock start, obeying commands meanwhile, then hands
//! the attempt the instant its window opens; afterwards it records how the attempt kept its
//! slot (`shard.timeline` in the report). An attempt that starts late is said and recorded.

use super::Control;
use crate::cell::context::CellEnv;
use crate::cell::control::{CellId, RunnerEvent};
use crate::cell::publisher::LivePublisher;
use crate::experiment::Experiments;
use crate::experiment::record::Attempt;
use crate::report::shard::SlotRecord;
use crate::session::shard_view::{TimelineWait, WaitFor};
use crate::session::timeline::{Slot, lateness};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

/// A start later than this after its slot's is said in the log and the report's warnings
/// (the timer's own lateness on a loaded machine stays well under it).
const LATE_SAID: Duration = Duration::from_millis(20);
/// A wait for a slot longer than this is said in the log.
const SAY_WAIT: Duration = Duration::from_secs(1);

/// How an attempt started on its slot.
pub(super) struct SlotStart {
    slot: Slot,
    due: SystemTime,
    started_wall: SystemTime,
    started: Instant,
    /// The instant its window opens, when that is still ahead.
    pub opens_at: Option<Instant>,
}

/// What waiting for a slot came to.
pub(super) enum SlotWait {
    /// The attempt has no slot: it starts at once.
    Off,
    /// Its slot began.
    Start(SlotStart),
    /// The operator paused or stopped the session meanwhile (the cell is queued again).
    Interrupted,
}

fn unix_s(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// The wall-clock instant of `at`, by the pair of clocks read at `anchor`.
fn wall_of(at: Instant, (anchor, wall): (Instant, SystemTime)) -> SystemTime {
    match at.checked_duration_since(anchor) {
        Some(d) => wall + d,
        None => wall - anchor.saturating_duration_since(at),
    }
}

impl Control {
    /// Waits for the slot of cell `id`'s next attempt, when the timeline gives it one; an
    /// attempt without a slot still waits for `--start-at` when it is the session's first.
    pub(super) async fn await_slot(&mut self, env: &Arc<CellEnv>, ex: &Experiments, id: CellId) -> SlotWait {
        let Some(t) = self.timeline.as_ref() else { return SlotWait::Off };
        let attempt = self.state.cells[id].attempts.len() as u32 + 1;
        let (slot, reached, start) = (t.slot(id, attempt), t.reached, t.start);
        let Some(slot) = slot else {
            let why = match &t.ends_before {
                Some((c, why)) if *c == id => why.clone(),
                Some((c, _)) => format!("the timeline ended before {}", self.state.cells[*c].label),
                None => "the timeline was planned without it".into(),
            };
            if !reached && !self.wait_for(env, ex, id, start).await {
                return SlotWait::Interrupted;
            }
            let label = &self.state.cells[id].label;
            env.emit(RunnerEvent::Log(format!(
                "{label}: no slot on the timeline ({why}); starts when the cell before ends"
            )));
            return SlotWait::Off;
        };
        let due = start + slot.offset;
        if !self.wait_for(env, ex, id, due).await {
            return SlotWait::Interrupted;
        }
        let (started_wall, started) = (SystemTime::now(), Instant::now());
        let late = lateness(due, started_wall);
        if late > LATE_SAID {
            let label = &self.state.cells[id].label;
            env.warn(format!(
                "{label}: started {:.0} ms after its slot on the timeline (the attempt before overran its slot, or --start-at was reached late)",
                late.as_secs_f64() * 1e3
            ));
        }
        let window_due = slot.window_at.map(|w| due + w);
        let opens_at = window_due.and_then(|w| w.duration_since(started_wall).ok()).map(|d| started + d);
        SlotWait::Start(SlotStart { slot, due, started_wall, started, opens_at })
    }

    /// Waits for `due`, saying so when the wait is long; false (cell `id` queued again) when the
    /// operator paused or stopped the session meanwhile.
    async fn wait_for(&mut self, env: &Arc<CellEnv>, ex: &Experiments, id: CellId, due: SystemTime) -> bool {
        if let Ok(left) = due.duration_since(SystemTime::now())
            && left > SAY_WAIT
        {
            let (at, secs) = (humantime::format_rfc3339_millis(due), left.as_secs_f64());
            let line = match self.timeline.as_ref().is_some_and(|t| t.reached) {
                false => format!("waiting for --start-at {at} ({secs:.1} s)"),
                true => {
                    format!("{}: waits {secs:.1} s for its slot on the timeline ({at})", self.state.cells[id].label)
                }
            };
            env.emit(RunnerEvent::Log(line));
            // The last attempt's view would read as still draining meanwhile; the Live panel
            // says what the runner waits for instead.
            LivePublisher::idle(env);
            let reached = self.timeline.as_ref().is_some_and(|t| t.reached);
            let what = if reached { WaitFor::Slot(self.state.cells[id].label.clone()) } else { WaitFor::StartAt };
            self.state.waiting = Some(TimelineWait::new(what, due));
            self.publish(env);
        }
        let slept = self.sleep_until_wall(env, ex, due).await;
        if self.state.waiting.take().is_some() {
            self.publish(env);
        }
        if !slept {
            self.state.requeue_front(id);
            return false;
        }
        if let Some(t) = self.timeline.as_mut() {
            t.reached = true;
        }
        true
    }

    /// Sleeps until the wall clock reads `due` (re-read as it nears, so a clock the NTP daemon
    /// slews meanwhile is followed), applying commands; false when paused or stopped meanwhile.
    async fn sleep_until_wall(&mut self, env: &Arc<CellEnv>, ex: &Experiments, due: SystemTime) -> bool {
        loop {
            let left = due.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO);
            if left.is_zero() {
                return true;
            }
            let step = if left > Duration::from_secs(1) { left - Duration::from_millis(500) } else { left };
            tokio::select! {
                _ = tokio::time::sleep(step) => {}
                cmd = self.commands.recv() => {
                    match cmd {
                        Some(cmd) => drop(self.command(env, ex, cmd, None)),
                        None => self.state.stopped = true,
                    }
                    if self.state.stopped || self.state.paused {
                        return false;
                    }
                }
            }
        }
    }

    /// Records how the attempt `ran` of cell `id` kept the slot it started on.
    pub(super) fn record_slot(&mut self, env: &CellEnv, id: CellId, s: &SlotStart, ran: &Attempt) {
        let anchor = (s.started, s.started_wall);
        // A decode window's opening; a serve, conversation or burst schedule's start.
        let opened_s = match ran {
            Attempt::Decode(d) => (d.window_s > 0.0).then_some(d.started_s + d.warmup_s),
            Attempt::Serve(a) => Some(a.started_s),
            Attempt::Burst(b) => Some(b.started_s),
            Attempt::Extension(e) => Some(e.started_s),
            _ => None,
        };
        let opened = opened_s.filter(|_| s.slot.window_at.is_some()).map(|at| {
            let at = env.started + Duration::from_secs_f64(at.max(0.0));
            unix_s(wall_of(at, anchor))
        });
        self.state.slots.push(SlotRecord {
            cell: self.state.cells[id].label.clone(),
            attempt: s.slot.attempt,
            slot_start_unix_s: unix_s(s.due),
            slot_s: s.slot.len.as_secs_f64(),
            started_unix_s: unix_s(s.started_wall),
            late_ms: lateness(s.due, s.started_wall).as_secs_f64() * 1e3,
            window_due_unix_s: s.slot.window_at.map(|w| unix_s(s.due + w)),
            window_opened_unix_s: opened,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_map_to_wall_clock_both_sides_of_the_anchor() {
        let (i, w) = (Instant::now(), UNIX_EPOCH + Duration::from_secs(1000));
        let ms = Duration::from_millis;
        assert_eq!(wall_of(i + ms(250), (i, w)), w + ms(250));
        assert_eq!(wall_of(i.checked_sub(ms(250)).unwrap(), (i, w)), w - ms(250));
    }
}
