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

/// Marks a delta inside the noise of repeated runs (`run --num-runs`).
const NOISE_MARK: &str = " ~";

/// The legend under the delta tables: which file, which way is better (and, with repetitions
/// on either side, what [`NOISE_MARK`] means).
fn legend(info: &BaselineInfo, noise: bool) -> Block {
    let mut text = format!(
        "Δ vs baseline = (this - baseline) / baseline, against {} (session of {}), cells \
         matched as `compare` matches them: aggregate (decode) or output (burst, routing) tok/s, \
         TTFT p50 on the dim line; higher tok/s and goodput are better, higher TTFT is worse; \
         {NONE} = no result on one side.",
        info.path, info.started_at
    );
    if noise {
        text.push_str(&format!(
            " Repeated cells are their means;{NOISE_MARK} = within noise: inside the 95% interval of \
             the difference of the means (Welch)."
        ));
    }
    Block::Legend(vec![text])
}

/// The delta text of `f`, marked when it is within the noise of repeated runs (`noise`: the
/// report has repetitions); `—` without one.
fn delta_text(f: Option<&BaselineFigure>, noise: bool) -> String {
    let Some(f) = f else { return NONE.into() };
    let Some(d) = f.delta_pct else { return NONE.into() };
    let mark = if noise && f.change == crate::report::compare::Change::WithinNoise { NOISE_MARK } else { "" };
    format!("{}{mark}", fmt_pct(d))
}

/// The delta text of figure `name` in `list`, `—` without one.
fn pct(list: &[BaselineFigure], name: &str, noise: bool) -> String {
    delta_text(figure(list, name), noise)
}

/// The delta of the cell's headline throughput (`aggregate_tok_s`, `output_tok_s`).
fn throughput(list: &[BaselineFigure], noise: bool) -> String {
    delta_text(list.iter().find(|f| f.name.ends_with("_tok_s")), noise)
}

/// A ctx x conc delta matrix: throughput on the main line, TTFT p50 on the dim one.
fn matrix<'a>(
    title: &str,
    ctx_labels: &[String],
    conc: &[u32],
    cells: impl Iterator<Item = (&'a str, u32, &'a [BaselineFigure])> + Clone,
    noise: bool,
) -> Table {
    let mut header = vec![CORNER.to_string()];
    header.extend(conc.iter().map(u32::to_string));
    let mut table = Table::new(title, header);
    for label in ctx_labels {
        let mut main = vec![label.clone()];
        let mut dim = vec![String::new()];
        for &c in conc {
            let found = cells.clone().find(|(l, k, _)| l == label && *k == c).map(|(_, _, f)| f);
            main.push(found.map_or(NONE.into(), |f| throughput(f, noise)));
            dim.push(found.map_or(String::new(), |f| format!("TTFT {}", pct(f, TTFT_P50, noise))));
        }
        table.rows.push(Row::with_dim(main, dim));
    }
    table
}

/// The decode and burst delta matrices (with the legend), when the report has a baseline.
pub fn decode_blocks(report: &SessionReport) -> Vec<Block> {
    let Some(info) = &report.plan.baseline else { return Vec::new() };
    let noise = crate::report::runs::any(report);
    let mut out = Vec::new();
    if let Some(d) = &report.decode {
        let cells = d.cells.iter().map(|c| (c.ctx_label.as_str(), c.conc, c.baseline.as_slice()));
        out.push(Block::Table(matrix(DECODE_TITLE, &d.ctx_labels, &d.conc, cells, noise)));
    }
    if let Some(b) = &report.burst {
        let cells = b.cells.iter().map(|c| (c.ctx_label.as_str(), c.conc, c.baseline.as_slice()));
        out.push(Block::Table(matrix(BURST_TITLE, &b.ctx_labels, &b.conc, cells, noise)));
    }
    if !out.is_empty() {
        out.push(legend(info, noise));
    }
    out
}

/// The routing delta table (with the legend), when the report has a baseline and phases.
pub fn routing_blocks(report: &SessionReport) -> Vec<Block> {
    let Some(info) = &report.plan.baseline else { return Vec::new() };
    if report.phases.is_empty() {
        return Vec::new();
    }
    let noise = crate::report::runs::any(report);
    let header = ["phase", "tok/s", "goodput", "TTFT p50"].map(String::from).to_vec();
    let mut table = Table::new(ROUTING_TITLE, header);
    for p in &report.phases {
        let f = &p.baseline;
        let row = vec![p.phase.clone(), throughput(f, noise), pct(f, GOODPUT, noise), pct(f, TTFT_P50, noise)];
        table.rows.push(Row::new(row));
    }
    vec![Block::Table(table), legend(info, noise)]
}
