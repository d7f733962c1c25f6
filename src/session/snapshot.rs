//! The session as the monitor and the progress printer see it: an immutable snapshot of every
//! cell with its headline figures.

use super::progress::{CellView, PhaseNow, Progress, Timing};
use super::state::{Attempt, CellSpec, CellStatus};
use crate::cell::control::{CellId, LiveAttempt};
pub use crate::cell::headline::{Headline, attempt_line};
use tokio::time::Instant;

/// One cell in the snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct CellSummary {
    /// Label.
    pub label: String,
    /// What it measures.
    pub spec: CellSpec,
    /// Status.
    pub status: CellStatus,
    /// Attempts so far.
    pub attempts: usize,
    /// Figures of the latest attempt; with repetitions, the mean of its latest round's runs.
    pub headline: Option<Headline>,
    /// The latest attempt itself (distributions, per-replica data), shared, not copied.
    pub latest: Option<std::sync::Arc<Attempt>>,
    /// The attempt the headline reads: with repetitions the mean of the round's measured runs
    /// (`experiment::runs`), else the latest attempt.
    pub shown: Option<std::sync::Arc<Attempt>>,
    /// With repetitions (`--num-runs`), how far the cell is through its round (`run k/N`).
    pub run: Option<crate::report::runs::round::RunProgress>,
    /// With repetitions, each headline figure over the round's measured runs (empty without).
    pub run_stats: crate::experiment::runs::FigureStats,
}

/// The whole session at one moment.
#[derive(Debug, Clone)]
pub struct SessionSnapshot {
    /// Base URL of the load, credentials removed.
    pub target: String,
    /// Model.
    pub model: String,
    /// Engine dialect.
    pub dialect: String,
    /// Plans (`decode`, `routing`).
    pub plan: String,
    /// Session start.
    pub started: Instant,
    /// Cells in plan order.
    pub cells: Vec<CellSummary>,
    /// Running cell.
    pub current: Option<CellId>,
    /// Load paused.
    pub paused: bool,
    /// Session over.
    pub finished: bool,
    /// Report file.
    pub report_path: String,
    /// Actions so far.
    pub actions: usize,
    /// Planned and actual cell lengths.
    pub timing: Timing,
    /// The goodput SLO every experiment judges against (None: not known, e.g. a test view).
    pub slo: Option<crate::report::goodput::PlanSlo>,
    /// The saved session the cells are compared with (`--baseline`).
    pub baseline: Option<std::sync::Arc<crate::report::baseline::Baseline>>,
    /// The shard this session is, in a sharded run (`--shard i/N`): the header names it and
    /// the keys that would put it out of step are refused.
    pub shard: Option<super::shard_view::ShardView>,
    /// What the runner waits for on the timeline (`--start-at`, a cell's slot), when it waits.
    pub waiting: Option<super::shard_view::TimelineWait>,
}

impl SessionSnapshot {
    /// Cell i of N and the ETA at `now`, the running cell as `live` shows it.
    pub fn progress(&self, now: Instant, live: &LiveAttempt) -> Progress {
        let views: Vec<CellView> = self
            .cells
            .iter()
            .map(|c| CellView {
                kind: c.spec.kind,
                done: c.status.is_final(),
                skipped: c.status.is_skipped(),
                runs_left: c.run.map_or(1, |r| r.left().max(1)),
            })
            .collect();
        self.timing.progress(&views, now, PhaseNow::of(live))
    }
}

impl CellSummary {
    /// Summary of one cell entry.
    pub fn of(entry: &super::state::CellEntry) -> Self {
        let (shown, run_stats) = entry.shown_with_stats();
        Self {
            label: entry.label.clone(),
            spec: entry.spec.clone(),
            status: entry.status.clone(),
            attempts: entry.attempts.len(),
            headline: shown.as_ref().map(|a| a.headline()),
            latest: entry.attempts.last().cloned(),
            shown,
            run: entry.run_progress(),
            run_stats,
        }
    }
}
