//! The load levels of a decode attempt whose load the operator turned with the knob: each
//! level holds its own sub-window, and every finished request is judged against each level it
//! overlaps. Level 0 is the planned load; its sub-window is the attempt's headline window.

use crate::cell::context::CellEnv;
use crate::cell::control::LevelPoint;
use crate::cell::sample_window::Window;
use crate::cell::summarize::Summarizer;
use crate::load::live::LiveTotals;
use crate::load::sample::RequestSample;
use crate::metrics::window::window_stats;
use crate::report::json::DecodeAttempt;
use crate::report::levels::{LevelLoad, LoadLevel};
use tokio::time::Instant;

/// One level while the attempt runs.
struct Level {
    load: LevelLoad,
    action: String,
    start: Instant,
    end: Option<Instant>,
    /// Live counters when the level began (tokens for the live curve, sent for the rate).
    at_start: LiveTotals,
    /// Live tok/s of the level once it closed.
    live_tps: Option<f64>,
    /// The level's figures (levels after the first; the first is the attempt's own summary).
    sum: Summarizer,
    requests: u64,
}

/// The levels of one attempt, oldest first.
pub(crate) struct Levels {
    list: Vec<Level>,
}

fn overlaps(s: &RequestSample, w: &Window) -> bool {
    s.sent_at < w.end && s.ended_at >= w.start
}

impl Levels {
    /// The planned level, starting at `start` (the window's opening).
    pub(crate) fn planned(load: LevelLoad, start: Instant, at_start: LiveTotals, origin: Instant) -> Self {
        let first = Level {
            load,
            action: "planned".into(),
            start,
            end: None,
            at_start,
            live_tps: None,
            sum: Summarizer::new(origin),
            requests: 0,
        };
        Self { list: vec![first] }
    }

    /// True once the knob moved the load.
    pub(crate) fn turned(&self) -> bool {
        self.list.len() > 1
    }

    /// The current level's load.
    pub(crate) fn load(&self) -> LevelLoad {
        self.list.last().map(|l| l.load).unwrap_or_default()
    }

    /// The planned level's sub-window end, once closed.
    pub(crate) fn planned_end(&self) -> Option<Instant> {
        self.list.first().and_then(|l| l.end)
    }

    /// Closes the current level at `now` and opens one at `load`, started by `action`.
    pub(crate) fn step(&mut self, now: Instant, load: LevelLoad, action: String, totals: LiveTotals, origin: Instant) {
        if let Some(cur) = self.list.last_mut() {
            cur.end = Some(now);
            cur.live_tps = Some(tps_between(&cur.at_start, &totals, cur.start, now));
        }
        let sum = Summarizer::new(origin);
        self.list.push(Level {
            load,
            action,
            start: now,
            end: None,
            at_start: totals,
            live_tps: None,
            sum,
            requests: 0,
        });
    }

    /// Judges a finished request against each level after the first: against its sub-window
    /// when closed, else against `[start, open_end)` (`open_end` is no earlier than the level's
    /// real end, and the request ended before now). The first level counts requests only.
    pub(crate) fn add(&mut self, s: &RequestSample, open_end: Instant) {
        for (i, l) in self.list.iter_mut().enumerate() {
            let w = Window { start: l.start, end: l.end.unwrap_or(open_end) };
            if overlaps(s, &w) {
                l.requests += 1;
            }
            if i > 0 && s.ended_at >= l.start {
                l.sum.add(s, Some(&w), w.end);
            }
        }
    }

    /// The live panel's curve: each level's load and tok/s (the current one so far).
    pub(crate) fn points(&self, totals: &LiveTotals, now: Instant) -> Vec<LevelPoint> {
        let point = |l: &Level| LevelPoint {
            load: l.load.label(),
            tps: l.live_tps.unwrap_or_else(|| tps_between(&l.at_start, totals, l.start, now)),
        };
        self.list.iter().map(point).collect()
    }

    /// The report's levels, closing the last at `end`; the first takes the attempt's own
    /// figures (`a` summarises the planned sub-window).
    pub(crate) fn report(self, env: &CellEnv, a: &DecodeAttempt, end: Instant) -> Vec<LoadLevel> {
        let history = env.poller.as_ref().map(|p| p.history());
        let mut out = Vec::new();
        for (i, l) in self.list.into_iter().enumerate() {
            let w = Window { start: l.start, end: l.end.unwrap_or(end) };
            let conc = l.load.conc.unwrap_or(1);
            let (tok_s, ttft_ms, itl_ms) = match i {
                0 => (a.aggregate_tps, a.ttft_ms, a.itl_ms),
                _ => {
                    let st = l.sum.finish(Some(w), conc);
                    (st.aggregate_tps, st.ttft_ms, st.itl_ms)
                }
            };
            let ws = history.as_ref().map(|h| window_stats(h, w.start, w.end));
            out.push(LoadLevel {
                load: l.load,
                started_s: env.since_start(w.start),
                ended_s: env.since_start(w.end),
                action: l.action,
                tok_s,
                ttft_ms,
                itl_ms,
                running_mean: ws.as_ref().and_then(|s| s.running_avg_total),
                waiting_mean: ws.as_ref().and_then(|s| s.waiting_avg_total),
                requests: l.requests,
            });
        }
        out
    }
}

fn tps_between(a: &LiveTotals, b: &LiveTotals, from: Instant, to: Instant) -> f64 {
    let dt = to.saturating_duration_since(from).as_secs_f64();
    if dt > 0.0 { b.tokens.saturating_sub(a.tokens) as f64 / dt } else { 0.0 }
}
