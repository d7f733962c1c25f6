//! The sets side by side: one column per parameter set; rows for what each set's server
//! resolved (start-up time, `max_num_seqs`, KV blocks and capacity), then for every cell of any
//! set its headline figures (the throughput `compare` gates on, TTFT p50/p99, TPOT or ITL p50),
//! read with `compare`'s own figures (`report::compare::figures`).

use super::{SweepSection, SweepSet};
use crate::report::compare::CellKey;
use crate::report::compare::figures::{self, CellFigures};
use crate::report::kind::ExperimentKind;
use crate::report::status::AttemptStatus;
use serde::Serialize;

/// The figures shown beside each cell's throughput, by `compare`'s names: the latencies, and
/// an SLO search's result (`--slo-search`: the load it found and the bracket around it).
const LATENCIES: [&str; 7] =
    ["found_load", "last_pass", "first_fail", "p50_ttft_ms", "p99_ttft_ms", "p50_tpot_ms", "p50_itl_ms"];

/// One set's column.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SetColumn {
    /// Position in the sweep, from 1.
    pub index: usize,
    /// `max_num_seqs=16`.
    pub params: String,
    /// `done`, `failed_to_start`, ...
    pub status: String,
}

/// One row: a figure of a cell (or of the server) in every set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideRow {
    /// `server`, or the cell's label (`decode ctx=0 conc=4`).
    pub cell: String,
    /// `start-up s`, `aggregate tok/s`, `TTFT p50 ms`.
    pub figure: String,
    /// `s`, `tok/s`, `ms`, `fraction`, `req/s`, or empty for a count.
    pub unit: String,
    /// The value of each set, in column order.
    pub values: Vec<Option<f64>>,
}

/// The whole side-by-side view.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideBySide {
    /// The sets, in run order.
    pub sets: Vec<SetColumn>,
    /// Server rows first, then each cell's figures, cells in order of first appearance.
    pub rows: Vec<SideRow>,
}

fn server_rows(sets: &[&SweepSet]) -> Vec<SideRow> {
    let row = |figure: &str, unit: &str, f: &dyn Fn(&SweepSet) -> Option<f64>| SideRow {
        cell: "server".into(),
        figure: figure.into(),
        unit: unit.into(),
        values: sets.iter().map(|s| f(s)).collect(),
    };
    let setting = |f: fn(&super::ServerSettings) -> Option<u64>| {
        move |s: &SweepSet| s.server.as_ref().and_then(f).map(|v| v as f64)
    };
    let target = |f: fn(&crate::report::json::TargetInfo) -> Option<u64>| {
        move |s: &SweepSet| s.report.as_ref().and_then(|r| f(&r.target)).map(|v| v as f64)
    };
    let rows = vec![
        row("start-up s", "s", &|s| s.startup_s),
        row("max_num_seqs", "", &setting(|x| x.max_num_seqs)),
        row("num_gpu_blocks", "", &setting(|x| x.num_gpu_blocks)),
        row("block_size", "", &setting(|x| x.block_size)),
        row("KV capacity tokens", "", &target(|t| t.kv_capacity_tokens)),
        row("max_model_len", "", &target(|t| t.max_model_len)),
    ];
    // A setting no set knows is left out; start-up stays, even when every set failed.
    rows.into_iter()
        .enumerate()
        .filter(|(i, r)| *i == 0 || r.values.iter().any(Option::is_some))
        .map(|(_, r)| r)
        .collect()
}

/// The figures a cell shows: its first (the throughput `compare` gates on) and the latencies.
fn shown(c: &CellFigures) -> impl Iterator<Item = &figures::Figure> {
    c.figures.iter().enumerate().filter(|(i, f)| *i == 0 || LATENCIES.contains(&f.spec.name.as_str())).map(|(_, f)| f)
}

/// Every set's cells, and the cells of all of them in order of first appearance.
fn cell_rows(sets: &[&SweepSet]) -> Vec<SideRow> {
    let pcts = crate::stats::percentile_list("50,99").unwrap_or_else(|_| crate::stats::PercentileList::vllm_default());
    let per_set: Vec<Vec<CellFigures>> =
        sets.iter().map(|s| s.report.as_deref().map(|r| figures::cells(r, &pcts)).unwrap_or_default()).collect();
    let mut keys: Vec<(CellKey, String)> = Vec::new();
    for c in per_set.iter().flatten().filter(|c| !c.figures.is_empty()) {
        if !keys.iter().any(|(k, _)| *k == c.key) {
            keys.push((c.key.clone(), c.label.clone()));
        }
    }
    let mut rows = Vec::new();
    for (key, label) in keys {
        let found: Vec<Option<&CellFigures>> =
            per_set.iter().map(|cells| cells.iter().find(|c| c.key == key)).collect();
        let Some(model) = found.iter().flatten().find(|c| !c.figures.is_empty()) else { continue };
        for f in shown(model) {
            let value = |c: &Option<&CellFigures>| {
                c.and_then(|c| c.figures.iter().find(|g| g.spec.name == f.spec.name)).and_then(|g| g.value)
            };
            rows.push(SideRow {
                cell: label.clone(),
                figure: f.spec.title.clone(),
                unit: f.spec.unit.into(),
                values: found.iter().map(value).collect(),
            });
        }
        if key.kind == ExperimentKind::Decode {
            rows.push(running_row(sets, &key, &label));
        }
    }
    rows
}

/// A decode cell's average running requests in each set (Prometheus, its measured attempt):
/// where a set's server held the cell below its concurrency (`(4/8)*seq` in its tables), its
/// latencies cover the requests that ran, so this row says how many did.
fn running_row(sets: &[&SweepSet], key: &CellKey, label: &str) -> SideRow {
    let running = |s: &&SweepSet| {
        let decode = s.report.as_deref()?.decode.as_ref()?;
        let cell = decode.cells.iter().find(|c| {
            Some(c.ctx) == key.ctx && Some(c.conc) == key.conc && c.rate.map(|r| r.to_string()) == key.rate
        })?;
        let shown = crate::report::runs::shown(&cell.attempts, cell.runs.as_ref())?;
        (shown.status == AttemptStatus::Measured).then_some(shown.running_avg).flatten()
    };
    SideRow {
        cell: label.into(),
        figure: "running (avg, Prometheus)".into(),
        unit: "streams".into(),
        values: sets.iter().map(running).collect(),
    }
}

/// The sets of `sweep` side by side.
pub fn side_by_side(sweep: &SweepSection) -> SideBySide {
    let sets: Vec<&SweepSet> = sweep.sets.iter().collect();
    let columns = sets
        .iter()
        .map(|s| SetColumn { index: s.index, params: sweep.describe(s), status: s.status.as_str().into() })
        .collect();
    let mut rows = server_rows(&sets);
    rows.extend(cell_rows(&sets));
    SideBySide { sets: columns, rows }
}

/// A value as the tables print it: `—` when absent.
pub fn value(v: Option<f64>, unit: &str) -> String {
    match (v, unit) {
        (None, _) => "—".into(),
        (Some(v), "") => format!("{v:.0}"),
        (Some(v), "fraction") => format!("{:.1}%", v * 100.0),
        (Some(v), "s") => super::seconds(v),
        (Some(v), "ms") if v.abs() < 10.0 => format!("{v:.2}"),
        (Some(v), "ms") if v.abs() >= 1000.0 => format!("{v:.0}"),
        (Some(v), _) => format!("{v:.1}"),
    }
}

impl SideBySide {
    /// Header and rows as strings: `cell`, `figure`, then one column per set
    /// (`set 1 · max_num_seqs=4`); the cell's label only on its first row.
    pub fn grid(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let mut header = vec!["cell".to_string(), "figure".to_string()];
        header.extend(self.sets.iter().map(|s| format!("set {} · {}", s.index, s.params)));
        let mut rows = vec![{
            let mut r = vec!["status".to_string(), String::new()];
            r.extend(self.sets.iter().map(|s| s.status.clone()));
            r
        }];
        let mut last = "";
        for row in &self.rows {
            let cell = if row.cell == last { String::new() } else { row.cell.clone() };
            last = &row.cell;
            let mut r = vec![cell, row.figure.clone()];
            r.extend(row.values.iter().map(|v| value(*v, &row.unit)));
            rows.push(r);
        }
        (header, rows)
    }
}
