//! The report section of an experiment from outside the built-in set
//! ([`ExperimentKind::Extension`](super::kind::ExperimentKind)): its cells on the ctx x load
//! grid, each attempt's common figures (requests, errors by kind, output tok/s, TTFT) and its
//! own named figures, so every format, `compare` and `--baseline` read it without knowing it.

use super::compare::Better;
use super::status::{AttemptStatus, CellOutcome};
use crate::load::sample::ErrorKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One extension experiment's section (`extensions[]` of the report).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtensionSection {
    /// The kind's name, as its cells carry it.
    pub kind: String,
    /// What the tables print above it.
    pub title: String,
    /// Its cells, in plan order.
    pub cells: Vec<ExtensionCell>,
}

/// One cell of an extension section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtensionCell {
    /// Context size, tokens.
    pub ctx: u64,
    /// Context label (`16k`).
    pub ctx_label: String,
    /// Streams or requests (closed loop), or the in-flight cap (open loop).
    pub conc: u32,
    /// Open-loop arrival rate as reports write it (`4`, `inf`); absent closed loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<String>,
    /// The cell's label in the plan.
    pub label: String,
    /// Where the cell stands.
    pub status: CellOutcome,
    /// Why it was skipped, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_reason: Option<String>,
    /// What kept it from running, when skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<super::skip::SkipKind>,
    /// Every attempt, oldest first.
    pub attempts: Vec<ExtensionAttempt>,
    /// This cell's figures against the `--baseline` session's same cell.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub baseline: Vec<super::baseline::BaselineFigure>,
    /// Its repeated runs (`run --num-runs N`, N > 1): the latest round's attempts and every
    /// headline figure's mean, sd, CV and confidence interval; the tables show the means.
    /// Absent with one run per cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<crate::report::runs::RunsBlock>,
}

/// One attempt of an extension cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtensionAttempt {
    /// 1-based attempt number.
    pub attempt: u32,
    /// How the attempt ended.
    pub status: AttemptStatus,
    /// Attempt start, seconds since the session start.
    pub started_s: f64,
    /// Attempt length, seconds.
    pub duration_s: f64,
    /// Requests sent.
    pub requests: u64,
    /// Failed requests by kind.
    pub errors: BTreeMap<ErrorKind, u64>,
    /// One example message per error kind (absent in reports that predate it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_examples: BTreeMap<ErrorKind, String>,
    /// Output tokens of every request (from `usage` where the server sent it).
    pub output_tokens: u64,
    /// Output tokens per second over the attempt (its headline throughput).
    pub output_tps: f64,
    /// Median time to first token, ms.
    pub ttft_p50_ms: Option<f64>,
    /// The experiment's own figures, in the order its tables show them.
    pub figures: Vec<ExtensionFigure>,
    /// The experiment's own breakdowns of the attempt, by name (the conversation experiment's
    /// `turns`: one row per turn index); every format prints each below the section's table.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tables: BTreeMap<String, ExtensionTable>,
    /// The experiment's own settings and outcome in words, by name (the SLO search's `mode`,
    /// `slo`, `outcome`); every format prints them under the section's table.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// A breakdown of an attempt: rows keyed by a number (a turn index), named columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtensionTable {
    /// What a row's key is (`turn`).
    pub key: String,
    /// The columns, each a name with its unit (`ttft_p50_ms`, `ms`), in print order.
    pub columns: Vec<ExtensionColumn>,
    /// The rows, in key order.
    pub rows: Vec<ExtensionRow>,
}

/// A column of an [`ExtensionTable`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtensionColumn {
    /// Stable machine name with its unit.
    pub name: String,
    /// Its unit as tables print it.
    pub unit: String,
}

/// A row of an [`ExtensionTable`]: its key and one value per column (None: no data).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtensionRow {
    /// The row's key (turn 1, 2, ...).
    pub key: u64,
    /// One value per column, in column order.
    pub values: Vec<Option<f64>>,
}

impl ExtensionAttempt {
    /// Failed requests.
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// A figure of the experiment's own, with its unit and which way is better.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtensionFigure {
    /// Stable machine name with its unit (`mean_gap_ms`); `compare` matches on it.
    pub name: String,
    /// Its unit as tables print it (`ms`, `tok/s`, `fraction`).
    pub unit: String,
    /// Which way is better.
    pub better: Better,
    /// Its value; None when the attempt had no data for it.
    pub value: Option<f64>,
}

/// The attempt whose figures a cell reports: its latest, when the cell measured.
pub fn result(cell: &ExtensionCell) -> Option<&ExtensionAttempt> {
    cell.attempts.last().filter(|_| cell.status == CellOutcome::Measured)
}

/// Every figure name of `section`, in first-seen order: its tables' own columns.
pub fn figure_names(section: &ExtensionSection) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for f in section.cells.iter().flat_map(|c| &c.attempts).flat_map(|a| &a.figures) {
        if !out.iter().any(|(n, _)| *n == f.name) {
            out.push((f.name.clone(), f.unit.clone()));
        }
    }
    out
}

/// The value of figure `name` in `a`.
pub fn figure(a: &ExtensionAttempt, name: &str) -> Option<f64> {
    a.figures.iter().find(|f| f.name == name).and_then(|f| f.value)
}

/// The kinds of the report's extension sections, in report order (a section whose kind is not
/// an extension name is left out: no format shows it).
pub fn kinds(report: &super::json::SessionReport) -> Vec<super::kind::ExperimentKind> {
    use super::kind::ExperimentKind;
    let ext = |s: &ExtensionSection| {
        ExperimentKind::named(&s.kind).ok().filter(|k| matches!(k, ExperimentKind::Extension(_)))
    };
    report.extensions.iter().filter_map(ext).collect()
}
