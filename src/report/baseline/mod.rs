//! `run --baseline FILE`: a saved session whose cells every cell of this run is laid beside.
//! Cells are matched as `compare` matches them (kind and ctx/conc, or the phase name;
//! docs/reports.md §4, §4.7) and the figures are `compare`'s (`report::compare::figures`): the
//! headline throughput, TTFT p50 and goodput where the cell has one. This module holds the
//! loaded baseline and the delta maths; [`annotate`] records the comparison in the report and
//! [`text`] draws it in the final tables.

pub mod annotate;
pub mod text;

use super::compare::figures::{self, CellFigures};
use super::compare::{Better, CellKey, Change, delta_pct};
use super::json::SessionReport;
use super::load::load_report;
use crate::stats::repeats::{DEFAULT_LEVEL, difference};
use crate::stats::{PercentileList, RunStats};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// `compare`'s name of the TTFT median.
pub const TTFT_P50: &str = "p50_ttft_ms";
/// `compare`'s name of the goodput fraction.
pub const GOODPUT: &str = "goodput_ratio";
/// A change smaller than this, percent, is no change (as in `compare`).
const SAME_PCT: f64 = 0.05;

/// The saved session a run is compared with.
#[derive(Debug, Clone)]
pub struct Baseline {
    /// The file, as given.
    pub path: String,
    /// Its report.
    pub report: Arc<SessionReport>,
    /// Its cells' figures (TTFT at p50), in report order.
    pub cells: Vec<CellFigures>,
}

/// `plan.baseline` of the report: which saved session the deltas are against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineInfo {
    /// The file, as given to `--baseline`.
    pub path: String,
    /// Its session start (RFC 3339).
    pub started_at: String,
}

/// One figure of a cell against the baseline's same cell (the cell's `baseline` list).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineFigure {
    /// `compare`'s name with its unit (`aggregate_tok_s`, `p50_ttft_ms`, `goodput_ratio`).
    pub name: String,
    /// Which way is better.
    pub better: Better,
    /// Value in the baseline.
    pub base: Option<f64>,
    /// Value in this session.
    pub new: Option<f64>,
    /// `(new − base) / |base|`, percent; null when a side has no value or base is 0.
    pub delta_pct: Option<f64>,
    /// What the figure did (`same`, `better`, `worse`, `within_noise`, `unavailable`).
    pub change: Change,
}

/// The figures shown against the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// The cell's headline throughput (decode aggregate, burst and routing output tok/s).
    Throughput,
    /// TTFT p50.
    TtftP50,
    /// Fraction of requests meeting the SLO.
    Goodput,
}

impl Pick {
    /// The short name the monitor and the log show: `tok/s`, `TTFT`, `good`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Throughput => "tok/s",
            Self::TtftP50 => "TTFT",
            Self::Goodput => "good",
        }
    }
}

/// `tok/s -80% TTFT +33%`: each delta after its figure's short name (`tok/s -3.0% (within
/// noise)` for one inside the interval of repeated runs).
pub fn deltas_text(deltas: &[(Pick, Delta)]) -> String {
    let one = |(p, d): &(Pick, Delta)| match d.change {
        Change::WithinNoise => format!("{} {} (within noise)", p.name(), d.text()),
        _ => format!("{} {}", p.name(), d.text()),
    };
    deltas.iter().map(one).collect::<Vec<_>>().join(" ")
}

/// A delta and which way it went.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Delta {
    /// `(new − base) / |base|`, percent.
    pub pct: f64,
    /// `Same`, `Better` or `Worse`.
    pub change: Change,
}

impl Delta {
    /// `+3.2%`, `-11%`: one decimal below 10%, whole percent above, `0.0%` when the same.
    pub fn text(&self) -> String {
        fmt_pct(self.pct)
    }
}

/// A signed percentage in ASCII: `+3.2%`, `-11%`, `0.0%` (within 0.05%).
pub fn fmt_pct(pct: f64) -> String {
    if !pct.is_finite() {
        return "—".into();
    }
    if pct.abs() < SAME_PCT {
        return "0.0%".into();
    }
    let sign = if pct > 0.0 { "+" } else { "-" };
    match pct.abs() {
        a if a < 9.95 => format!("{sign}{a:.1}%"),
        a => format!("{sign}{a:.0}%"),
    }
}

/// The change from `base` to `new` for a figure better when `better`; None when a side has
/// no value or only base is 0.
pub fn delta(base: Option<f64>, new: Option<f64>, better: Better) -> Option<Delta> {
    let (b, n) = base.zip(new)?;
    let pct = delta_pct(b, n)?;
    let change = match pct {
        p if p.abs() < SAME_PCT => Change::Same,
        p if (p > 0.0) == (better == Better::Higher) => Change::Better,
        _ => Change::Worse,
    };
    Some(Delta { pct, change })
}

/// The percentiles the baseline's figures are read at: the median.
pub fn percentiles() -> PercentileList {
    PercentileList::new(&[50.0]).unwrap_or_else(PercentileList::vllm_default)
}

/// True for the figures the baseline overlay keeps: headline ones, TTFT p50, any goodput.
pub fn kept(name: &str, headline: bool) -> bool {
    headline || name == TTFT_P50 || name.contains("goodput")
}

impl Baseline {
    /// Reads the report at `path`; the error is one line naming the flag and the file.
    pub fn open(path: &Path) -> Result<Self, String> {
        let report = load_report(path).map_err(|e| format!("--baseline {}: {e}", path.display()))?;
        if report.sweep.is_some() {
            let p = path.display();
            return Err(format!(
                "--baseline {p}: a sweep report has no cells of its own (compare two sweeps with compare)"
            ));
        }
        Ok(Self::of(&path.display().to_string(), report))
    }

    /// The baseline of an already loaded `report`, read from `path`.
    pub fn of(path: &str, report: SessionReport) -> Self {
        let cells = figures::cells(&report, &percentiles());
        Self { path: path.to_string(), report: Arc::new(report), cells }
    }

    /// What the report records of it.
    pub fn info(&self) -> BaselineInfo {
        BaselineInfo { path: self.path.clone(), started_at: self.report.started_at.clone() }
    }

    /// The baseline's cell matched by `key`, when it has figures (a result).
    pub fn cell(&self, key: &CellKey) -> Option<&CellFigures> {
        self.cells.iter().find(|c| c.key == *key && !c.figures.is_empty())
    }

    /// The baseline's figure `pick` of `cell`.
    fn figure(cell: &CellFigures, pick: Pick) -> Option<&super::compare::figures::Figure> {
        cell.figures.iter().find(|f| match pick {
            Pick::Throughput => f.spec.headline && f.spec.unit == "tok/s",
            Pick::TtftP50 => f.spec.name == TTFT_P50,
            Pick::Goodput => f.spec.name == GOODPUT,
        })
    }

    /// The baseline's value of `pick` in `cell` (with repetitions the mean of its runs), and
    /// which way it is better.
    pub fn value(cell: &CellFigures, pick: Pick) -> Option<(f64, Better)> {
        let f = Self::figure(cell, pick)?;
        f.value.map(|v| (v, f.spec.better))
    }

    /// The deltas of a cell of this session against the baseline's same cell: for each of
    /// `now` (`pick`, this session's value) that both sides have.
    pub fn deltas(&self, key: &CellKey, now: &[(Pick, Option<f64>)]) -> Vec<(Pick, Delta)> {
        let with: Vec<(Pick, Option<f64>, Option<RunStats>)> = now.iter().map(|(p, v)| (*p, *v, None)).collect();
        self.deltas_with_runs(key, &with)
    }

    /// [`Baseline::deltas`], each value of this session with its statistics over its runs when
    /// it repeated the cell (`--num-runs`). When either side repeated it, a delta inside the 95%
    /// interval of the difference of the two means (`stats::repeats::difference`; a side of
    /// one run is given the other's spread) is `within_noise`, as `compare` says it.
    pub fn deltas_with_runs(&self, key: &CellKey, now: &[(Pick, Option<f64>, Option<RunStats>)]) -> Vec<(Pick, Delta)> {
        let Some(cell) = self.cell(key) else { return Vec::new() };
        now.iter()
            .filter_map(|(pick, value, runs)| {
                let (base, better) = Self::value(cell, *pick)?;
                let mut d = delta(Some(base), *value, better)?;
                let base_runs = Self::runs(cell, *pick);
                if d.change != Change::Same && (base_runs.is_some() || runs.is_some()) {
                    let one = |v: f64| RunStats::of(&[v], DEFAULT_LEVEL);
                    let (b, n) = (base_runs.or_else(|| one(base)), runs.or_else(|| value.and_then(one)));
                    let inside =
                        b.zip(n).and_then(|(b, n)| difference(&b, &n, DEFAULT_LEVEL).map(|i| (i, n.mean - b.mean)));
                    if inside.is_some_and(|(i, diff)| i.contains(diff)) {
                        d.change = Change::WithinNoise;
                    }
                }
                Some((*pick, d))
            })
            .collect()
    }

    /// The baseline's statistics of `pick` over the runs of `cell`, when it repeated it.
    pub fn runs(cell: &CellFigures, pick: Pick) -> Option<RunStats> {
        Self::figure(cell, pick)?.runs
    }
}

#[cfg(test)]
mod tests;
