//! The final tables' deltas against `--baseline`: after the decode matrices a ctx x conc matrix
//! of the aggregate tok/s delta (TTFT p50 delta on the dim line), the same after the burst
//! table, and after the routing tables one row per phase. Drawn from the report's `baseline`
//! figures alone ([`super::annotate`]); a report without `plan.baseline` draws none of them.

use super::annotate::figure;
use super::{BaselineFigure, BaselineInfo, GOODPUT, TTFT_P50, fmt_pct};
use crate::report::json::SessionReport;
use crate::report::text::format::CORNER;
use crate::report::text::{Block, Row, Table};

/// Title of the decode delta matrix.
pub const DECODE_TITLE: &str = "Δ vs baseline: tok/s";
/// Title of the burst delta matrix.
pub const BURST_TITLE: &str = "Δ vs baseline: burst";
/// Title of the routing delta table.
pub const ROUTING_TITLE: &str = "Δ vs baseline: routing";
/// A cell with nothing to compare.
const NONE: &str = "—";

/// The legend under the delta tables: which file, which way is better.
fn legend(info: &BaselineInfo) -> Block {
    Block::Legend(vec![format!(
        "Δ vs baseline = (this - baseline) / baseline, against {} (session of {}), cells \
         matched as `compare` matches them: aggregate (decode) or output (burst, routing) tok/s, \
         TTFT p50 on the dim line; higher tok/s and goodput are better, higher TTFT is worse; \
         {NONE} = no result on one side.",
        info.path, info.started_at
    )])
}

/// The delta text of figure `name` in `list`, `—` without one.
fn pct(list: &[BaselineFigure], name: &str) -> String {
    figure(list, name).and_then(|f| f.delta_pct).map_or(NONE.into(), fmt_pct)
}

/// The delta of the cell's headline throughput (`aggregate_tok_s`, `output_tok_s`).
fn throughput(list: &[BaselineFigure]) -> String {
    list.iter().find(|f| f.name.ends_with("_tok_s")).and_then(|f| f.delta_pct).map_or(NONE.into(), fmt_pct)
}

/// A ctx x conc delta matrix: throughput on the main line, TTFT p50 on the dim one.
fn matrix<'a>(
    title: &str,
    ctx_labels: &[String],
    conc: &[u32],
    cells: impl Iterator<Item = (&'a str, u32, &'a [BaselineFigure])> + Clone,
) -> Table {
    let mut header = vec![CORNER.to_string()];
    header.extend(conc.iter().map(u32::to_string));
    let mut table = Table::new(title, header);
    for label in ctx_labels {
        let mut main = vec![label.clone()];
        let mut dim = vec![String::new()];
        for &c in conc {
            let found = cells.clone().find(|(l, k, _)| l == label && *k == c).map(|(_, _, f)| f);
            main.push(found.map_or(NONE.into(), throughput));
            dim.push(found.map_or(String::new(), |f| format!("TTFT {}", pct(f, TTFT_P50))));
        }
        table.rows.push(Row::with_dim(main, dim));
    }
    table
}

/// The decode and burst delta matrices (with the legend), when the report has a baseline.
pub fn decode_blocks(report: &SessionReport) -> Vec<Block> {
    let Some(info) = &report.plan.baseline else { return Vec::new() };
    let mut out = Vec::new();
    if let Some(d) = &report.decode {
        let cells = d.cells.iter().map(|c| (c.ctx_label.as_str(), c.conc, c.baseline.as_slice()));
        out.push(Block::Table(matrix(DECODE_TITLE, &d.ctx_labels, &d.conc, cells)));
    }
    if let Some(b) = &report.burst {
        let cells = b.cells.iter().map(|c| (c.ctx_label.as_str(), c.conc, c.baseline.as_slice()));
        out.push(Block::Table(matrix(BURST_TITLE, &b.ctx_labels, &b.conc, cells)));
    }
    if !out.is_empty() {
        out.push(legend(info));
    }
    out
}

/// The routing delta table (with the legend), when the report has a baseline and phases.
pub fn routing_blocks(report: &SessionReport) -> Vec<Block> {
    let Some(info) = &report.plan.baseline else { return Vec::new() };
    if report.phases.is_empty() {
        return Vec::new();
    }
    let header = ["phase", "tok/s", "goodput", "TTFT p50"].map(String::from).to_vec();
    let mut table = Table::new(ROUTING_TITLE, header);
    for p in &report.phases {
        let f = &p.baseline;
        table.rows.push(Row::new(vec![p.phase.clone(), throughput(f), pct(f, GOODPUT), pct(f, TTFT_P50)]));
    }
    vec![Block::Table(table), legend(info)]
}
