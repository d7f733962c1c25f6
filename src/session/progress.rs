//! Session progress for the monitor header and the headless heartbeat: cell i of N, the time
//! so far and an ETA. The ETA is the planned length of every cell still to run (decode: settle
//! plus window; routing: count / rps; see `Experiment::planned`), scaled by how long the
//! finished cells of the same kind took against their plan; a kind without a plan (bursts)
//! counts its finished cells' mean length, and until one has finished the ETA is a lower bound.
//!
//! The running cell counts what its phase says is still to come ([`PhaseNow`]): a window that
//! has not opened (warming, e.g. waiting for a first token) is all still to come, however long
//! the wait has lasted, and the ETA is then a lower bound once the wait runs past the estimate;
//! an open window counts the rest of it.
//!
//! On the `--start-at` timeline (`session::timeline`) the cells with a slot end when their last
//! slot does, whatever they take: the wait for the start and between slots included, so those
//! cells count the time to the end of the last slot instead of their estimates.

use crate::cell::control::{CellId, LiveAttempt, Phase};
use crate::report::kind::ExperimentKind;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;
use tokio::time::Instant;

/// How long cells are planned to take and took.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timing {
    /// Planned length of each cell, seconds (None: no plan).
    pub planned: Vec<Option<f64>>,
    /// Length of each cell's last attempt that ran to its end, seconds.
    pub actual: Vec<Option<f64>>,
    /// The running cell and when its attempt started.
    pub running: Option<(CellId, Instant)>,
    /// The `--start-at` timeline's slots, when the session has one.
    pub timeline: Option<TimelineEta>,
}

/// The cell timeline as the estimate sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineEta {
    /// When its last slot ends.
    pub end: Instant,
    /// The cells with a slot on it.
    pub cells: Vec<CellId>,
}

impl TimelineEta {
    /// The estimate's view of `t` (None without a slot), its end read against the clocks now.
    pub(crate) fn of(t: &super::timeline::Timeline) -> Option<Self> {
        let last = t.slots.last()?;
        let end = super::shard_view::instant_of(t.start + last.offset + last.len);
        Some(Self { end, cells: t.slots.iter().map(|s| s.cell).collect() })
    }
}

/// Where the session stands, for display.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// 1-based position of the running cell (finished cells + 1), or the finished count.
    pub position: usize,
    /// Cells in the plan.
    pub total: usize,
    /// Cells skipped without running (no KV or context fit), counted among the finished.
    pub skipped: usize,
    /// Time left, when any of it can be estimated.
    pub eta: Option<Duration>,
    /// True when some remaining cell could not be estimated: the ETA is a lower bound.
    pub lower_bound: bool,
}

/// The running cell's phase, from its live view.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhaseNow {
    /// The cell.
    pub cell: CellId,
    /// Its phase.
    pub phase: Phase,
    /// When the phase began.
    pub since: Instant,
    /// Planned length of the phase, if bounded.
    pub len: Option<Duration>,
}

impl PhaseNow {
    /// The phase of the running cell `live` shows (None between cells).
    pub fn of(live: &LiveAttempt) -> Option<Self> {
        Some(Self { cell: live.cell?, phase: live.phase, since: live.phase_started?, len: live.phase_len })
    }

    /// Seconds of the cell still to come at `now` whatever its estimate says (planned length
    /// `planned`, seconds), and whether the phase is a wait of unknown length (warming).
    fn floor(&self, planned: Option<f64>, now: Instant) -> (f64, bool) {
        match (self.phase, self.len) {
            (Phase::Warming, _) => (planned.unwrap_or(0.0), true),
            (Phase::Measuring, Some(len)) => {
                (len.saturating_sub(now.saturating_duration_since(self.since)).as_secs_f64(), false)
            }
            _ => (0.0, false),
        }
    }
}

/// One cell as the estimate sees it.
#[derive(Debug, Clone, Copy)]
pub struct CellView {
    /// Experiment kind.
    pub kind: ExperimentKind,
    /// True once the cell has an outcome.
    pub done: bool,
    /// Skipped without running (no KV or context fit): a finished step of `cell i/N`, said
    /// beside it (`2 skipped`).
    pub skipped: bool,
    /// Runs of the cell still to come, the running one included (`--num-runs`; 1 without
    /// repetitions): each is one planned length.
    pub runs_left: u32,
}

impl Timing {
    /// Timing of cells planned to take `planned` seconds each.
    pub fn new(planned: Vec<Option<f64>>) -> Self {
        let actual = vec![None; planned.len()];
        Self { planned, actual, running: None, timeline: None }
    }

    /// Cell `id` starts an attempt at `at`.
    pub fn start(&mut self, id: CellId, at: Instant) {
        self.running = Some((id, at));
    }

    /// The running attempt ends at `at`; `ran_to_end` is false for one paused, skipped or
    /// stopped, whose length says nothing about the plan.
    pub fn finish(&mut self, at: Instant, ran_to_end: bool) {
        if let Some((id, since)) = self.running.take()
            && ran_to_end
            && let Some(slot) = self.actual.get_mut(id)
        {
            *slot = Some(at.saturating_duration_since(since).as_secs_f64());
        }
    }

    /// Progress of `cells` at `now`, the running cell in `phase`.
    pub fn progress(&self, cells: &[CellView], now: Instant, phase: Option<PhaseNow>) -> Progress {
        // `cell i/N` counts every planned cell, so N holds still when a cell turns out not to
        // fit (context skips are found only once a prompt is calibrated); skipped cells are
        // finished steps, and the line says how many there were.
        let total = cells.len();
        let skipped = cells.iter().filter(|c| c.skipped).count();
        let done = cells.iter().filter(|c| c.done).count();
        let running = self.running.filter(|(id, _)| cells.get(*id).is_some_and(|c| !c.done));
        let position = (done + usize::from(running.is_some())).min(total);
        let scale = self.scales(cells);
        // A cell still to run on the timeline: its slots end when the timeline does.
        let slotted = |id: CellId| self.timeline.as_ref().is_some_and(|t| t.cells.contains(&id));
        let on_timeline = cells.iter().enumerate().any(|(id, c)| !c.done && slotted(id));
        let timeline_left =
            self.timeline.as_ref().filter(|_| on_timeline).map(|t| t.end.saturating_duration_since(now));
        let mut left = timeline_left.map_or(0.0, |d| d.as_secs_f64());
        let (mut unknown, mut any) = (false, timeline_left.is_some());
        for (id, c) in cells.iter().enumerate().filter(|(id, c)| !c.done && !slotted(*id)) {
            let Some(&(ratio, mean)) = scale.get(&c.kind) else { continue };
            let est = match self.planned.get(id).copied().flatten() {
                Some(p) => Some(p * ratio),
                None => mean,
            };
            let Some(mut est) = est else {
                unknown = true;
                continue;
            };
            // The runs after the next (or running) one, each a whole estimate.
            let more = f64::from(c.runs_left.max(1) - 1) * est;
            if let Some((_, since)) = running.filter(|(r, _)| *r == id) {
                est = (est - now.saturating_duration_since(since).as_secs_f64()).max(0.0);
                if let Some(p) = phase.filter(|p| p.cell == id) {
                    let (floor, open_ended) = p.floor(self.planned.get(id).copied().flatten(), now);
                    unknown |= open_ended && est <= floor;
                    est = est.max(floor);
                }
            }
            est += more;
            (left, any) = (left + est, true);
        }
        let eta = (any || !unknown).then(|| crate::units::secs(left));
        Progress { position, total, skipped, eta, lower_bound: unknown }
    }

    /// Per kind: actual / planned over its finished cells (1 when none), and their mean length.
    fn scales(&self, cells: &[CellView]) -> BTreeMap<ExperimentKind, (f64, Option<f64>)> {
        let mut sums: BTreeMap<ExperimentKind, (f64, f64, f64, u32)> = BTreeMap::new();
        for (id, c) in cells.iter().enumerate() {
            let s = sums.entry(c.kind).or_default();
            let Some(a) = self.actual.get(id).copied().flatten() else { continue };
            if let Some(p) = self.planned.get(id).copied().flatten().filter(|p| *p > 0.0) {
                (s.0, s.1) = (s.0 + a, s.1 + p);
            }
            (s.2, s.3) = (s.2 + a, s.3 + 1);
        }
        let scale = |(a, p, total, n): (f64, f64, f64, u32)| {
            let ratio = if p > 0.0 { a / p } else { 1.0 };
            (ratio, (n > 0).then(|| total / f64::from(n)))
        };
        sums.into_iter().map(|(k, s)| (k, scale(s))).collect()
    }
}

/// `1h02m`, `4m10s`, `12s`.
pub(crate) fn short_duration(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s / 60) % 60),
    }
}

impl fmt::Display for Progress {
    /// `cell 3/12, ETA 4m10s` (`cell 7/14, 2 skipped, ETA …`; `ETA ≥ …` for a lower bound,
    /// `ETA ?` when unknown).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cell {}/{}, ", self.position, self.total)?;
        if self.skipped > 0 {
            write!(f, "{} skipped, ", self.skipped)?;
        }
        f.write_str("ETA ")?;
        match self.eta {
            Some(d) if self.lower_bound => write!(f, "≥ {}", short_duration(d)),
            Some(d) => f.write_str(&short_duration(d)),
            None => f.write_str("?"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::report::kind::ExperimentKind::{Burst, Decode};

    fn views(kinds: &[ExperimentKind], done: usize) -> Vec<CellView> {
        kinds
            .iter()
            .enumerate()
            .map(|(i, &kind)| CellView { kind, done: i < done, skipped: false, runs_left: 1 })
            .collect()
    }

    #[test]
    fn the_plan_is_scaled_by_what_finished_cells_took() {
        let t0 = Instant::now();
        let mut t = Timing::new(vec![Some(10.0); 4]);
        let cells = views(&[Decode; 4], 0);
        let p = t.progress(&cells, t0, None);
        assert_eq!((p.position, p.total, p.eta, p.lower_bound), (0, 4, Some(Duration::from_secs(40)), false));
        t.start(0, t0);
        t.finish(t0 + Duration::from_secs(15), true);
        t.start(1, t0 + Duration::from_secs(15));
        // Cell 0 took 1.5x its plan: 15 s each; cell 1 has run 5 s of its 15.
        let p = t.progress(&views(&[Decode; 4], 1), t0 + Duration::from_secs(20), None);
        assert_eq!((p.position, p.eta), (2, Some(Duration::from_secs(40))));
        assert_eq!(p.to_string(), "cell 2/4, ETA 40s");
    }

    #[test]
    fn every_run_still_to_come_counts_one_planned_length() {
        let t0 = Instant::now();
        let mut t = Timing::new(vec![Some(10.0); 2]);
        let mut cells = views(&[Decode; 2], 0);
        (cells[0].runs_left, cells[1].runs_left) = (3, 3);
        assert_eq!(t.progress(&cells, t0, None).eta, Some(Duration::from_secs(60)));
        // Cell 0 is in its second run of three, 4 s in: 6 s of it and one more run to come.
        cells[0].runs_left = 2;
        t.start(0, t0);
        let p = t.progress(&cells, t0 + Duration::from_secs(4), None);
        assert_eq!(p.eta, Some(Duration::from_secs(46)));
    }

    #[test]
    fn kinds_without_a_plan_use_their_mean_or_make_a_lower_bound() {
        let t0 = Instant::now();
        let mut t = Timing::new(vec![Some(60.0), None, None]);
        let kinds = [Decode, Burst, Burst];
        let p = t.progress(&views(&kinds, 0), t0, None);
        assert_eq!((p.eta, p.lower_bound), (Some(Duration::from_secs(60)), true));
        assert_eq!(p.to_string(), "cell 0/3, ETA ≥ 1m00s");
        t.actual = vec![Some(60.0), Some(8.0), None];
        let p = t.progress(&views(&kinds, 2), t0, None);
        assert_eq!((p.position, p.eta, p.lower_bound), (2, Some(Duration::from_secs(8)), false));
        let p = t.progress(&views(&kinds, 3), t0, None);
        assert_eq!((p.position, p.eta), (3, Some(Duration::ZERO)));
    }

    #[test]
    fn interrupted_attempts_do_not_count_and_unknown_is_a_question_mark() {
        let t0 = Instant::now();
        let mut t = Timing::new(vec![None]);
        t.start(0, t0);
        t.finish(t0 + Duration::from_secs(3), false);
        assert_eq!(t.actual, vec![None]);
        let p = t.progress(&views(&[Burst], 0), t0, None);
        assert_eq!(p.to_string(), "cell 0/1, ETA ?");
        assert_eq!(short_duration(Duration::from_secs(3725)), "1h02m");
    }

    #[test]
    fn a_skipped_cell_is_a_finished_step_said_beside_the_count() {
        let t0 = Instant::now();
        let mut t = Timing::new(vec![Some(30.0); 3]);
        let mut cells = views(&[Decode; 3], 0);
        cells[0] = CellView { kind: Decode, done: true, skipped: true, runs_left: 1 };
        t.start(1, t0);
        assert_eq!(t.progress(&cells, t0, None).to_string(), "cell 2/3, 1 skipped, ETA 1m00s");
        // A context skip found late does not shrink the total.
        cells[2] = CellView { kind: Decode, done: true, skipped: true, runs_left: 1 };
        assert_eq!(t.progress(&cells, t0, None).to_string(), "cell 3/3, 2 skipped, ETA 30s");
    }

    #[test]
    fn a_cell_waiting_for_its_first_token_counts_its_window_still_to_come() {
        let t0 = Instant::now();
        let mut t = Timing::new(vec![Some(31.0); 3]);
        t.start(0, t0);
        t.finish(t0 + Duration::from_secs(40), true);
        let started = t0 + Duration::from_secs(40);
        t.start(1, started);
        let warming = PhaseNow { cell: 1, phase: Phase::Warming, since: started, len: Some(Duration::from_secs(60)) };
        let cells = views(&[Decode; 3], 1);
        let at = |s: u64| started + Duration::from_secs(s);
        // 5 s in, cells take 40 s: 35 s left of this one (its window still to come), 40 s of the next.
        assert_eq!(t.progress(&cells, at(5), Some(warming)).to_string(), "cell 2/3, ETA 1m15s");
        // 2 minutes without a first token: its 31 s window is still to come, and maybe more.
        assert_eq!(t.progress(&cells, at(120), Some(warming)).to_string(), "cell 2/3, ETA ≥ 1m11s");
        assert_eq!(t.progress(&cells, at(120), None).to_string(), "cell 2/3, ETA 40s", "what it said before");
        // Its window open 10 s of 30, however long the warmup took: 20 s left of it.
        let measuring =
            PhaseNow { phase: Phase::Measuring, since: at(120), len: Some(Duration::from_secs(30)), ..warming };
        assert_eq!(t.progress(&cells, at(130), Some(measuring)).to_string(), "cell 2/3, ETA 1m00s");
    }

    /// Issue 27: a 60 s sharded session showed `ETA 33s` before `--start-at`. Its slotted
    /// cells count to the end of the last slot (the wait before the start and between slots
    /// included); a cell after the timeline adds its own estimate.
    #[test]
    fn slotted_cells_count_to_the_end_of_the_timeline() {
        let t0 = Instant::now();
        let mut t = Timing::new(vec![Some(15.0), Some(15.0), Some(10.0)]);
        let end = t0 + Duration::from_secs(60);
        t.timeline = Some(TimelineEta { end, cells: vec![0, 1] });
        let cells = views(&[Decode, Decode, Burst], 0);
        assert_eq!(t.progress(&cells, t0, None).to_string(), "cell 0/3, ETA 1m10s", "60 s of slots, then 10 s");
        let decode_only = views(&[Decode, Decode], 0);
        assert_eq!(t.progress(&decode_only, t0, None).to_string(), "cell 0/2, ETA 1m00s");
        // Between the slots, cell 0 done early: the wait for cell 1's slot still counts.
        t.start(0, t0);
        t.finish(t0 + Duration::from_secs(5), true);
        let p = t.progress(&views(&[Decode, Decode], 1), t0 + Duration::from_secs(20), None);
        assert_eq!(p.eta, Some(Duration::from_secs(40)));
        // Past the timeline's end (every slotted cell done) nothing of it is left.
        let done = t.progress(&views(&[Decode, Decode], 2), t0 + Duration::from_secs(20), None);
        assert_eq!(done.eta, Some(Duration::ZERO));
    }
}
