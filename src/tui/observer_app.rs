//! The adapter between what an observer (`run --observe`) sees and the session monitor's
//! panels: per-cell figures summed over shards become a [`SessionSnapshot`] (the matrix, the
//! header) and the busiest active cell a [`LiveAttempt`] (the live panel), so the panels of
//! src/tui/view/ draw a sharded session as they draw a single process's.

use crate::cell::control::{LiveAttempt, Phase};
use crate::cell::headline::Headline;
use crate::cell::spec::{CellSpec, CellStatus};
use crate::load::live::LiveTotals;
use crate::load::rate::Rate;
use crate::load::sample::ErrorKind;
use crate::metrics::observe::query::TTFT_P90;
use crate::metrics::observe::{CellFigures, Latency};
use crate::report::kind::ExperimentKind;
use crate::report::status::AttemptStatus;
use crate::session::progress::Timing;
use crate::session::snapshot::{CellSummary, SessionSnapshot};
use std::collections::BTreeMap;
use tokio::time::Instant;

/// The session-level facts the header shows.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservedSession {
    /// The Prometheus server, credentials redacted (the header's target).
    pub prometheus: String,
    /// The client series' matchers (the header's plan).
    pub selector: String,
    /// Where the observer's JSON file goes (the header's report).
    pub report_path: String,
    /// When the observer started.
    pub started: Instant,
}

/// One cell as the observer knows it: its place in the grid, the last poll's figures and its
/// summed tok/s while it ran.
#[derive(Debug, Clone)]
pub struct ObservedCell {
    /// The cell's label (the series' `cell`).
    pub label: String,
    /// Where the matrix puts it, read back from the label ([`spec_of`]).
    pub spec: CellSpec,
    /// The last poll's figures.
    pub figures: CellFigures,
    /// Summed tok/s, one per poll while some shard ran it, oldest first.
    pub history: Vec<f64>,
    /// When the observer first saw a shard run it.
    pub active_since: Option<Instant>,
}

/// The grid place of a cell from its label: `ctx=16k conc=8`, `burst ctx=0 conc=4`,
/// `serve in=256 conc=8 rate=4` (src/experiment/decode/grid.rs, serve/section.rs); `None` for
/// labels of another shape (routing phases, named workloads), which get a row of their own.
pub fn spec_of(label: &str) -> Option<CellSpec> {
    let mut words = label.split_whitespace().peekable();
    let kind = match words.peek().copied() {
        Some("burst") => ExperimentKind::Burst,
        Some("serve") => ExperimentKind::Serve,
        Some(w) if w.contains('=') => ExperimentKind::Decode,
        _ => return None,
    };
    let (mut ctx, mut conc, mut rate) = (None, None, None);
    for w in words.filter(|w| w.contains('=')) {
        match w.split_once('=')? {
            ("ctx" | "in", v) => ctx = Some(crate::units::parse_size(v).ok()?),
            ("conc", v) => conc = Some(v.parse::<u32>().ok()?),
            ("rate", v) => rate = Some(v.parse::<Rate>().ok()?),
            _ => return None,
        }
    }
    Some(CellSpec::grid_at(kind, ctx?, conc?, rate))
}

/// The spec of a label [`spec_of`] cannot read: a phase of its own (the matrix shows it by name).
fn other_spec(label: &str) -> CellSpec {
    CellSpec::phase(ExperimentKind::Decode, 0, label, "observed")
}

impl ObservedCell {
    /// A cell first seen in a poll.
    pub fn new(label: &str) -> ObservedCell {
        let spec = spec_of(label).unwrap_or_else(|| other_spec(label));
        ObservedCell {
            label: label.into(),
            spec,
            figures: CellFigures::default(),
            history: Vec::new(),
            active_since: None,
        }
    }

    /// The requested streams (or requests) of the cell, from its label; 0 when it has none.
    fn requested(&self) -> u32 {
        match self.spec.key {
            crate::cell::spec::CellKey::Grid { conc, .. } => conc,
            crate::cell::spec::CellKey::Phase { .. } => 0,
        }
    }

    /// Failed requests by kind; a `kind` this build does not name is counted in `failed` only.
    fn errors(&self) -> BTreeMap<ErrorKind, u64> {
        let kind = |k: &str| serde_json::from_value::<ErrorKind>(serde_json::Value::from(k)).ok();
        let known = self.figures.errors.iter().filter_map(|(k, n)| Some((kind(k)?, n.max(0.0).round() as u64)));
        known.collect()
    }

    /// The matrix's figure of a cell no shard runs now: the median summed tok/s over the polls
    /// while it ran (the first and last polls' rate windows straddle its start and end).
    fn headline(&self) -> Option<Headline> {
        let mut v = self.history.clone();
        v.sort_by(f64::total_cmp);
        let tps = *v.get(v.len() / 2)?;
        Some(Headline {
            tps,
            requested: self.requested(),
            errors: self.figures.errors.values().sum::<f64>().round() as u64,
            ttft_p50_ms: self.figures.quantile(Latency::Ttft, 0.5).map(|s| s * 1e3),
            status: AttemptStatus::Measured,
            ..Headline::default()
        })
    }

    fn summary(&self) -> CellSummary {
        let (status, headline) = match (self.figures.is_active(), self.headline()) {
            (true, _) => (CellStatus::Running, None),
            (false, Some(h)) => (CellStatus::Measured, Some(h)),
            // It ran before the observer saw it run: `done`, with no figure of its own.
            (false, None) if self.figures.started > 0.0 => (CellStatus::Measured, None),
            (false, None) => (CellStatus::Pending, None),
        };
        CellSummary {
            label: self.label.clone(),
            spec: self.spec.clone(),
            status,
            attempts: usize::from(headline.is_some()),
            headline,
            latest: None,
            shown: None,
            run: None,
            run_stats: Default::default(),
        }
    }

    /// The live panel's view of this cell as it runs: counters, summed tok/s and its history,
    /// TTFT p50/p90 from the summed buckets, TPOT as the session's own (streams / tok/s).
    pub fn live(&self, id: usize) -> LiveAttempt {
        let f = &self.figures;
        let count = |v: f64| v.max(0.0).round() as u64;
        let ms = |q| f.quantile(Latency::Ttft, q).map(|s| s * 1e3);
        let tps = f.tok_s.unwrap_or(0.0);
        LiveAttempt {
            cell: Some(id),
            label: self.label.clone(),
            phase: Phase::Measuring,
            phase_started: self.active_since,
            requested: self.requested(),
            totals: LiveTotals {
                tokens: count(f.tokens),
                started: count(f.started),
                in_flight: count(f.in_flight) as i64,
                streaming: count(f.running) as i64,
                completed: count(f.completed),
                failed: f.errors.values().map(|n| count(*n)).sum(),
                ..LiveTotals::default()
            },
            tps,
            tps_history: self.history.clone(),
            ttft_p50_ms: ms(0.5),
            ttft_p90_ms: ms(TTFT_P90),
            itl_now_ms: (tps > 0.0 && f.running > 0.0).then(|| f.running / tps * 1e3),
            errors: self.errors(),
            ..LiveAttempt::default()
        }
    }
}

/// The busiest cell some shard runs now (highest summed tok/s), by index.
pub fn current(cells: &[ObservedCell]) -> Option<usize> {
    let active = cells.iter().enumerate().filter(|(_, c)| c.figures.is_active());
    active.max_by(|a, b| a.1.figures.tok_s.unwrap_or(0.0).total_cmp(&b.1.figures.tok_s.unwrap_or(0.0))).map(|(i, _)| i)
}

/// The session snapshot the panels draw: every cell seen, in the order first seen.
pub fn snapshot(s: &ObservedSession, cells: &[ObservedCell], finished: bool) -> SessionSnapshot {
    let current = current(cells);
    let mut timing = Timing::new(vec![None; cells.len()]);
    timing.running = current.and_then(|i| Some((i, cells[i].active_since?)));
    SessionSnapshot {
        target: s.prometheus.clone(),
        model: "observed through Prometheus".into(),
        dialect: "observer".into(),
        plan: s.selector.clone(),
        started: s.started,
        cells: cells.iter().map(ObservedCell::summary).collect(),
        current,
        paused: false,
        finished,
        report_path: s.report_path.clone(),
        actions: 0,
        timing,
        slo: None,
        baseline: None,
        // The observer is no shard and waits for no slot: its own strip shows the shards.
        shard: None,
        waiting: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::spec::CellKey;

    #[test]
    fn labels_give_their_grid_place_and_others_a_phase_of_their_own() {
        let d = spec_of("ctx=16k conc=8").unwrap();
        assert_eq!((d.kind, d.key), (ExperimentKind::Decode, CellKey::Grid { ctx: 16 * 1024, conc: 8, rate: None }));
        let b = spec_of("burst ctx=0 conc=4").unwrap();
        assert_eq!((b.kind, b.key), (ExperimentKind::Burst, CellKey::Grid { ctx: 0, conc: 4, rate: None }));
        let s = spec_of("serve in=256 conc=8 rate=4").unwrap();
        assert_eq!(s.kind, ExperimentKind::Serve);
        assert!(matches!(s.key, CellKey::Grid { ctx: 256, conc: 8, rate: Some(Rate::PerSecond(r)) } if r == 4.0));
        for odd in ["r1-hot90-random", "serve sharegpt conc=8 rate=4", "ctx=zz conc=1", "conc=4", ""] {
            assert_eq!(spec_of(odd), None, "{odd}");
        }
        assert!(ObservedCell::new("r1-hot90-random").spec.is_phase());
    }

    #[test]
    fn an_ended_cell_shows_its_median_rate_and_the_busiest_running_cell_is_current() {
        let mut a = ObservedCell::new("ctx=0 conc=2");
        a.history = vec![100.0, 400.0, 420.0, 410.0, 50.0];
        a.figures.errors.insert("stalled".into(), 2.0);
        let h = a.summary();
        assert_eq!(h.status, CellStatus::Measured);
        assert_eq!(h.headline.as_ref().map(|h| (h.tps, h.errors, h.requested)), Some((400.0, 2, 2)));
        let mut b = ObservedCell::new("ctx=0 conc=4");
        (b.figures.active_shards, b.figures.tok_s, b.figures.running) = (2.0, Some(800.0), 4.0);
        let mut c = ObservedCell::new("ctx=0 conc=8");
        (c.figures.active_shards, c.figures.tok_s) = (1.0, Some(10.0));
        let cells = [a, b, c];
        assert_eq!(current(&cells), Some(1));
        let live = cells[1].live(1);
        assert_eq!((live.requested, live.tps, live.itl_now_ms), (4, 800.0, Some(5.0)));
        assert_eq!(cells[0].errors(), BTreeMap::from([(ErrorKind::Stalled, 2)]));
        let mut before = ObservedCell::new("ctx=0 conc=1");
        assert_eq!(before.summary().status, CellStatus::Pending, "nothing sent yet");
        before.figures.started = 3.0;
        let seen = before.summary();
        assert_eq!((seen.status, seen.headline), (CellStatus::Measured, None), "ran before the observer saw it");
    }
}
