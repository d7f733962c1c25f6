//! The client's own live Prometheus page (`run --metrics-listen ADDR`, docs/metrics.md): a
//! registry of every attempt's live counters by cell, read only when `/metrics` is scraped.
//!
//! Workers write nothing new but the latency histograms of [`LiveSeries`] (atomics); the
//! counters are the attempt's [`LiveCounters`], which the monitor already reads. The attempt
//! loop adds what only a finished request tells (its error kind, a cut, the final usage total,
//! its TPOT) through a [`Registration`]; when the attempt ends its figures are folded into the
//! cell's, so every counter is cumulative over the session and never goes back.
//!
//! * [`text`]: the exposition text of a [`Exposition::totals`] copy.
//! * [`serve`]: the HTTP listener (`GET /metrics`; anything else 404).

pub mod serve;
pub mod text;

use crate::load::live::LiveCounters;
use crate::load::live_hist::{HistCounts, LiveSeries};
use crate::load::sample::{Outcome, RequestSample, TokenSource};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

/// The labels and facts of the session the page describes, the same on every series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionLabels {
    /// The session id (`RunConfig::session_id`, or drawn at start).
    pub session: String,
    /// This process's shard, 0-based (0 unsharded).
    pub shard: u32,
    /// Shards of the session (1 unsharded).
    pub shards: u32,
    /// The plan kinds, in order, joined by `+` (e.g. `decode`).
    pub plan: String,
    /// The tool's version (`--version`).
    pub version: String,
}

/// Figures of a cell, summed over its attempts (ended and running).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CellTotals {
    /// The cell's label, as the monitor shows it.
    pub label: String,
    /// Output tokens received, tokens.
    pub tokens: u64,
    /// Requests sent.
    pub started: u64,
    /// Requests the server finished.
    pub completed: u64,
    /// Requests that failed, by error kind (report names).
    pub errors: BTreeMap<&'static str, u64>,
    /// Requests cut by the client (the window or the attempt ended).
    pub cut: u64,
    /// Requests in flight now.
    pub in_flight: u64,
    /// Requests in flight past their first token now.
    pub streaming: u64,
    /// An attempt of the cell is running.
    pub active: bool,
    /// Time to first token, per request.
    pub ttft: HistCounts,
    /// Time between tokens, per token.
    pub itl: HistCounts,
    /// Time per output token, per request.
    pub tpot: HistCounts,
}

/// What only finished requests tell, added by the attempt loop (not the workers).
#[derive(Debug, Default)]
struct Finished {
    errors: Mutex<BTreeMap<&'static str, u64>>,
    cut: AtomicU64,
    /// Tokens a final usage total added over the chunks the live counter counted.
    usage_extra: AtomicU64,
}

/// One cell: its ended attempts folded, its running ones live.
#[derive(Debug)]
struct Cell {
    label: String,
    folded: CellTotals,
    running: Vec<(u64, Arc<LiveCounters>, Arc<Finished>)>,
}

/// The registry behind the page: the session's labels and every cell seen so far, in the order
/// their first attempt started.
#[derive(Debug)]
pub struct Exposition {
    labels: SessionLabels,
    started_unix: f64,
    /// Last sign of life of the measuring side (attempt ticks, [`Self::beat`]), ms since the epoch.
    heartbeat_ms: AtomicU64,
    finished: AtomicBool,
    cells: Mutex<Vec<Cell>>,
    next_id: AtomicU64,
}

fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

impl Exposition {
    /// An empty registry of the session `labels`, started now.
    pub fn new(labels: SessionLabels) -> Self {
        let now = unix_ms();
        Self {
            labels,
            started_unix: now as f64 / 1e3,
            heartbeat_ms: AtomicU64::new(now),
            finished: AtomicBool::new(false),
            cells: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(0),
        }
    }

    /// The session's labels.
    pub fn labels(&self) -> &SessionLabels {
        &self.labels
    }

    /// Notes that the measuring side is alive now (the heartbeat gauge).
    pub fn beat(&self) {
        self.heartbeat_ms.fetch_max(unix_ms(), Ordering::Relaxed);
    }

    /// Notes that the session ended (its report is final); the page stays up until the process exits.
    pub fn finish(&self) {
        self.beat();
        self.finished.store(true, Ordering::Relaxed);
    }

    fn cells(&self) -> MutexGuard<'_, Vec<Cell>> {
        self.cells.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Puts the cell `label` on the page at zero before any of its requests, so a scraper's
    /// first sample of each of its series is 0 and `rate()` / `histogram_quantile` count its
    /// first requests too (a series first seen already counted loses them). The runner
    /// announces every planned cell at the session's start.
    pub fn announce(&self, label: &str) {
        cell_at(&mut self.cells(), label);
    }

    /// Registers an attempt of the cell `label` whose workers count into `live`; its latency
    /// histograms are switched on. Its figures count until the returned guard is dropped, then
    /// they are folded into the cell's.
    pub fn register(self: &Arc<Self>, label: &str, live: Arc<LiveCounters>) -> Registration {
        live.series.get_or_init(LiveSeries::default);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let finished = Arc::new(Finished::default());
        let mut cells = self.cells();
        let at = cell_at(&mut cells, label);
        cells[at].running.push((id, live.clone(), finished.clone()));
        drop(cells);
        self.beat();
        Registration { expo: self.clone(), id, live, finished }
    }

    fn fold(&self, id: u64) {
        let mut cells = self.cells();
        for cell in cells.iter_mut() {
            if let Some(i) = cell.running.iter().position(|r| r.0 == id) {
                let (_, live, finished) = cell.running.swap_remove(i);
                add_attempt(&mut cell.folded, &live, &finished);
                return;
            }
        }
    }

    /// Every cell's figures now, in the order the cells started.
    pub fn totals(&self) -> Vec<CellTotals> {
        let cells = self.cells();
        cells
            .iter()
            .map(|c| {
                let mut t = c.folded.clone();
                t.active = !c.running.is_empty();
                for (_, live, finished) in &c.running {
                    add_attempt(&mut t, live, finished);
                    let now = live.totals();
                    t.in_flight += now.in_flight.max(0) as u64;
                    t.streaming += now.streaming.max(0) as u64;
                }
                t
            })
            .collect()
    }

    /// When the session started, seconds since the epoch.
    pub fn started_unix(&self) -> f64 {
        self.started_unix
    }

    /// The last heartbeat, seconds since the epoch.
    pub fn heartbeat_unix(&self) -> f64 {
        self.heartbeat_ms.load(Ordering::Relaxed) as f64 / 1e3
    }

    /// Whether the session ended.
    pub fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Relaxed)
    }
}

/// Adds one attempt's cumulative figures (not its in-flight gauges) to `t`.
fn add_attempt(t: &mut CellTotals, live: &LiveCounters, finished: &Finished) {
    let now = live.totals();
    t.tokens += now.tokens + finished.usage_extra.load(Ordering::Relaxed);
    t.started += now.started;
    t.completed += now.completed;
    t.cut += finished.cut.load(Ordering::Relaxed);
    for (kind, n) in finished.errors.lock().unwrap_or_else(PoisonError::into_inner).iter() {
        *t.errors.entry(kind).or_default() += n;
    }
    if let Some(series) = live.series.get() {
        t.ttft.add(&series.ttft.snapshot());
        t.itl.add(&series.itl.snapshot());
        t.tpot.add(&series.tpot.snapshot());
    }
}

/// An attempt on the page: the attempt loop tells it each finished request; dropping it folds
/// the attempt into its cell.
#[derive(Debug)]
pub struct Registration {
    expo: Arc<Exposition>,
    id: u64,
    live: Arc<LiveCounters>,
    finished: Arc<Finished>,
}

impl Registration {
    /// Counts a finished request: its error kind or cut, the tokens its final usage total added
    /// over the chunks counted live (`docs/reports.md` §1.2.1), and its TPOT.
    pub fn on_sample(&self, s: &RequestSample) {
        match &s.outcome {
            Outcome::Failed { kind, .. } => {
                let mut errors = self.finished.errors.lock().unwrap_or_else(PoisonError::into_inner);
                *errors.entry(kind.as_str()).or_default() += 1;
            }
            Outcome::Cut => drop(self.finished.cut.fetch_add(1, Ordering::Relaxed)),
            Outcome::Completed(_) => {}
        }
        // Live, such a stream counted one token per chunk with text; its total came at the end.
        // A total below that count cannot be taken back from a counter (docs/metrics.md).
        if s.token_source == TokenSource::FinalUsageScaled {
            let extra = s.output_tokens.saturating_sub(s.content_chunks);
            self.finished.usage_extra.fetch_add(extra, Ordering::Relaxed);
        }
        if let (Some(series), Some(tpot)) = (self.live.series.get(), s.itl()) {
            series.tpot.observe(tpot.as_nanos() as u64);
        }
    }

    /// The registry (for its heartbeat).
    pub fn exposition(&self) -> &Exposition {
        &self.expo
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.expo.fold(self.id);
    }
}

/// The index of the cell `label` in `cells`, added at zero when it is not there yet.
fn cell_at(cells: &mut Vec<Cell>, label: &str) -> usize {
    if let Some(i) = cells.iter().position(|c| c.label == label) {
        return i;
    }
    let folded = CellTotals { label: label.to_string(), ..CellTotals::default() };
    cells.push(Cell { label: label.to_string(), folded, running: Vec::new() });
    cells.len() - 1
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
