//! `compare BASE NEW` (docs/reports.md §4): two session reports cell by cell, matched by kind
//! and ctx/conc (decode, burst) or phase name (routing), each figure with its signed change,
//! which way is better, and whether the change is within the noise of repeated attempts.
//!
//! Noise: when either side repeated the cell (`run --num-runs`, its `runs` block), a side's
//! value is the mean of its runs and a change inside the 95% Student-t interval of the
//! difference of the two means (Welch's; a side of one run takes the other side's spread,
//! `stats::repeats::difference`) is `within noise`: neither better nor worse, and never a
//! regression whatever the threshold. Without repetitions the band is the spread (max − min
//! over the median) of operator re-runs measured on both sides, as before.
//! Pure: the caller loads the reports and prints what [`render`] makes of the result.

pub(crate) mod figures;
pub(crate) mod render;

use crate::report::json::SessionReport;
use crate::report::kind::ExperimentKind;
use crate::stats::repeats::{DEFAULT_LEVEL, difference};
use crate::stats::{PercentileList, RunStats};
use figures::{CellFigures, Figure};
use serde::{Deserialize, Serialize};

/// Version of the JSON `compare --format json` writes.
pub const COMPARE_SCHEMA: &str = "llm-decode-bench/compare/1";

/// The figures whose regression beyond the threshold fails `compare`, as `kind name`.
pub const HEADLINE_FIGURES: [&str; 7] = [
    "decode aggregate_tok_s",
    "burst output_tok_s",
    "routing output_tok_s",
    "routing goodput_ratio",
    "serve output_tok_s",
    "serve request_goodput_rps",
    "extension output_tok_s",
];

/// A change smaller than this (in percent) is no change: it prints as `0.0%`.
const SAME_PCT: f64 = 0.05;

/// Which way a figure is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// Throughput, goodput.
    Higher,
    /// Latencies.
    Lower,
}

/// How cells are matched: kind and ctx/conc, or kind and phase name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CellKey {
    /// The experiment of the cell.
    pub kind: ExperimentKind,
    /// Context size, tokens (decode, burst).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ctx: Option<u64>,
    /// Concurrency, streams or burst size (decode, burst).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conc: Option<u32>,
    /// Open-loop arrival rate as the report writes it (`4`, `inf`); None closed loop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<String>,
    /// Phase name (routing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
}

impl CellKey {
    /// A closed-loop decode or burst cell.
    pub fn cell(kind: ExperimentKind, ctx: u64, conc: u32) -> Self {
        Self::cell_at(kind, ctx, conc, None)
    }

    /// A matrix cell at an open-loop `rate` (None: closed loop): cells of one ctx and conc at
    /// other rates are other cells.
    pub fn cell_at(kind: ExperimentKind, ctx: u64, conc: u32, rate: Option<String>) -> Self {
        Self { kind, ctx: Some(ctx), conc: Some(conc), rate, phase: None }
    }

    /// A routing phase.
    pub fn phase(name: &str) -> Self {
        Self { kind: ExperimentKind::Routing, ctx: None, conc: None, rate: None, phase: Some(name.to_string()) }
    }
}

/// What one figure did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Within 0.05%.
    Same,
    /// Better, beyond the noise band.
    Better,
    /// Worse, beyond the noise band.
    Worse,
    /// Within the spread of the repeated attempts of both sides.
    WithinNoise,
    /// A side has no value.
    Unavailable,
}

/// The whole outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every figure of every cell the same, and no cell on one side only.
    NoChange,
    /// No headline figure regressed beyond the threshold.
    NoRegression,
    /// At least one did (exit 1).
    Regression,
}

/// One report as the comparison names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    /// The file it was read from, as given.
    pub file: String,
    /// Session start (RFC 3339).
    pub started_at: String,
    /// Served model.
    pub model: String,
    /// The session finished normally.
    pub complete: bool,
}

/// One figure of one cell on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureDiff {
    /// Stable name with its unit (`aggregate_tok_s`, `p99_ttft_ms`).
    pub name: String,
    /// What a person reads; not in the JSON.
    #[serde(skip)]
    pub title: String,
    /// `tok/s`, `ms` or `fraction`.
    pub unit: &'static str,
    /// Which way is better.
    pub better: Better,
    /// A headline figure (see [`HEADLINE_FIGURES`]).
    pub headline: bool,
    /// Value in BASE.
    pub base: Option<f64>,
    /// Value in NEW.
    pub new: Option<f64>,
    /// `(new − base) / |base|`, percent; null when a side has no value or base is 0.
    pub delta_pct: Option<f64>,
    /// The noise band, percent of |base|: with repetitions on either side the half-width of
    /// the interval of the difference of the means ([`FigureDiff::noise_interval`]); else the
    /// larger relative spread (max − min over median) of the two sides' measured attempts,
    /// null unless both sides measured the cell at least twice.
    pub noise_pct: Option<f64>,
    /// With repetitions on either side: the interval `noise_pct` is, in words (`95% CI of the
    /// difference of the means, Welch t, 3 and 3 runs`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_interval: Option<String>,
    /// What the figure did.
    pub change: Change,
    /// A headline figure worse by more than the threshold, beyond the noise.
    pub regression: bool,
}

/// One cell present on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellDiff {
    /// `decode ctx=16k conc=4`, `routing r1-hot90-prefix-cache`.
    pub label: String,
    /// How it was matched.
    pub key: CellKey,
    /// Measured attempts in BASE.
    pub base_attempts: usize,
    /// Measured attempts in NEW.
    pub new_attempts: usize,
    /// Its figures.
    pub figures: Vec<FigureDiff>,
}

/// A cell with figures on one side only.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OneSided {
    /// Its label.
    pub label: String,
    /// Its key.
    pub key: CellKey,
    /// Its status on the other side when that side has the cell without a result
    /// (`skipped`, `pending`); null when the other side has no such cell.
    pub other_status: Option<String>,
}

/// The comparison of two reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// [`COMPARE_SCHEMA`].
    pub schema: &'static str,
    /// BASE.
    pub base: Side,
    /// NEW.
    pub new: Side,
    /// A headline figure worse by more than this, percent, is a regression.
    pub threshold_pct: f64,
    /// The percentiles of the latency figures.
    pub percentiles: Vec<f64>,
    /// [`HEADLINE_FIGURES`].
    pub headline_figures: Vec<&'static str>,
    /// The outcome.
    pub verdict: Verdict,
    /// Number of regressed figures.
    pub regressions: usize,
    /// Cells on both sides, in BASE's order.
    pub cells: Vec<CellDiff>,
    /// Cells with figures only in BASE.
    pub only_in_base: Vec<OneSided>,
    /// Cells with figures only in NEW.
    pub only_in_new: Vec<OneSided>,
}

/// What to compare with.
#[derive(Debug, Clone)]
pub struct Options {
    /// Regression threshold, percent.
    pub threshold_pct: f64,
    /// Latency percentiles.
    pub percentiles: PercentileList,
}

/// Compares `new` against `base`.
pub fn compare(base: (&str, &SessionReport), new: (&str, &SessionReport), opts: &Options) -> Comparison {
    let b = figures::cells(base.1, &opts.percentiles);
    let n = figures::cells(new.1, &opts.percentiles);
    let mut cells = Vec::new();
    let mut only_in_base = Vec::new();
    for bc in &b {
        let nc = n.iter().find(|c| c.key == bc.key);
        match nc {
            Some(nc) if !bc.figures.is_empty() && !nc.figures.is_empty() => cells.push(diff_cell(bc, nc, opts)),
            _ if bc.figures.is_empty() => {}
            _ => only_in_base.push(one_sided(bc, nc)),
        }
    }
    let only_in_new = n
        .iter()
        .filter(|nc| !nc.figures.is_empty())
        .filter_map(|nc| {
            let bc = b.iter().find(|c| c.key == nc.key);
            bc.is_none_or(|bc| bc.figures.is_empty()).then(|| one_sided(nc, bc))
        })
        .collect::<Vec<_>>();
    let regressions = cells.iter().flat_map(|c| &c.figures).filter(|f| f.regression).count();
    let all_same =
        cells.iter().flat_map(|c| &c.figures).all(|f| matches!(f.change, Change::Same | Change::Unavailable));
    let verdict = match (regressions, all_same && only_in_base.is_empty() && only_in_new.is_empty()) {
        (1.., _) => Verdict::Regression,
        (0, true) => Verdict::NoChange,
        (0, false) => Verdict::NoRegression,
    };
    Comparison {
        schema: COMPARE_SCHEMA,
        base: side(base),
        new: side(new),
        threshold_pct: opts.threshold_pct,
        percentiles: opts.percentiles.values().to_vec(),
        headline_figures: HEADLINE_FIGURES.to_vec(),
        verdict,
        regressions,
        cells,
        only_in_base,
        only_in_new,
    }
}

fn side((file, r): (&str, &SessionReport)) -> Side {
    Side { file: file.to_string(), started_at: r.started_at.clone(), model: r.model.clone(), complete: r.complete }
}

fn one_sided(c: &CellFigures, other: Option<&CellFigures>) -> OneSided {
    OneSided { label: c.label.clone(), key: c.key.clone(), other_status: other.map(|o| o.status.clone()) }
}

fn diff_cell(b: &CellFigures, n: &CellFigures, opts: &Options) -> CellDiff {
    let figures = b
        .figures
        .iter()
        .filter_map(|bf| n.figures.iter().find(|nf| nf.spec.name == bf.spec.name).map(|nf| diff_figure(bf, nf, opts)))
        .collect();
    CellDiff {
        label: b.label.clone(),
        key: b.key.clone(),
        base_attempts: b.measured,
        new_attempts: n.measured,
        figures,
    }
}

/// `(new − base) / |base|` in percent; 0 when both are 0, `None` when only base is.
pub fn delta_pct(base: f64, new: f64) -> Option<f64> {
    match (base == 0.0, new == 0.0) {
        (true, true) => Some(0.0),
        (true, false) => None,
        _ => Some((new - base) / base.abs() * 100.0),
    }
}

/// Relative spread of repeated values, percent: (max − min) / |median|; `None` for fewer than
/// two values or a median of 0.
pub fn spread_pct(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let s: crate::stats::Samples = values.iter().copied().collect();
    let (median, lo, hi) = (s.quantile(50.0)?.abs(), s.min()?, s.max()?);
    (median > 0.0).then(|| (hi - lo) / median * 100.0)
}

/// The interval of the difference of two sides' values when either side was repeated: its
/// half-width and its words; a side without runs counts as one run of its value.
fn run_interval(b: &Figure, n: &Figure) -> Option<(f64, String)> {
    if b.runs.is_none() && n.runs.is_none() {
        return None;
    }
    let one = |f: &Figure| f.runs.or_else(|| RunStats::of(&[f.value?], DEFAULT_LEVEL));
    let (x, y) = (one(b)?, one(n)?);
    let d = difference(&x, &y, DEFAULT_LEVEL)?;
    let borrowed = if d.borrowed { "; the single run given the other side's spread" } else { "" };
    let words = format!(
        "{:.0}% CI of the difference of the means (Welch t, {} and {} runs{borrowed})",
        d.level * 100.0,
        x.n,
        y.n
    );
    Some((d.half, words))
}

fn diff_figure(b: &Figure, n: &Figure, opts: &Options) -> FigureDiff {
    let spec = &b.spec;
    let delta = b.value.zip(n.value).and_then(|(x, y)| delta_pct(x, y));
    let interval = run_interval(b, n);
    let spread = spread_pct(&b.repeats).zip(spread_pct(&n.repeats)).map(|(x, y)| x.max(y));
    let noise = match &interval {
        Some((half, _)) => b.value.filter(|v| *v != 0.0).map(|v| half / v.abs() * 100.0),
        None => spread,
    };
    let inside = match (&interval, b.value.zip(n.value)) {
        (Some((half, _)), Some((x, y))) => (y - x).abs() <= *half,
        (Some(_), None) => false,
        (None, _) => delta.zip(spread).is_some_and(|(d, w)| d.abs() <= w),
    };
    let rose = b.value.zip(n.value).map(|(x, y)| y > x);
    let change = match (b.value.zip(n.value), delta) {
        (None, _) => Change::Unavailable,
        (Some(_), Some(d)) if d.abs() < SAME_PCT => Change::Same,
        _ if inside => Change::WithinNoise,
        _ if rose == Some(spec.better == Better::Higher) => Change::Better,
        _ => Change::Worse,
    };
    let beyond = delta.is_none_or(|d| d.abs() > opts.threshold_pct);
    FigureDiff {
        name: spec.name.clone(),
        title: spec.title.clone(),
        unit: spec.unit,
        better: spec.better,
        headline: spec.headline,
        base: b.value,
        new: n.value,
        delta_pct: delta,
        noise_pct: noise,
        noise_interval: interval.map(|(_, words)| words),
        change,
        regression: spec.headline && change == Change::Worse && beyond,
    }
}

#[cfg(test)]
mod runs_tests;
#[cfg(test)]
mod tests;
