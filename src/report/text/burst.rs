//! Phase 3 (Burst / E2E decode) view types and their panel, table and legend.

use serde::{Deserialize, Serialize};

use super::blocks::Block;
use super::format::CORNER;
use super::format::{
    MISSING, NOT_RUN, NOT_RUN_LEGEND, SKIPPED, SKIPPED_LEGEND, fmt_error_suffix, fmt_latency_pair, fmt_tps,
};
use super::panel::Panel;
use super::table::{Row, Table};

/// Results of the opt-in finite request burst, as a ctx x conc matrix.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BurstView {
    /// Context-length row labels, e.g. `0`, `32k`.
    pub ctx_labels: Vec<String>,
    /// Burst concurrency of each column.
    pub conc: Vec<u32>,
    /// Cells indexed `[ctx][conc]`; missing entries render as not run.
    pub cells: Vec<Vec<BurstCellView>>,
}

/// Outcome of one burst cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BurstCellView {
    /// The burst ran (possibly with failed requests).
    Measured(BurstCell),
    /// Skipped because the cell does not fit in the KV cache (shown `∅`).
    Skipped,
    /// Never run (shown `·`).
    NotRun,
}

/// End-to-end measurements of one finite burst.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BurstCell {
    /// Requests sent in the burst.
    pub requests: u64,
    /// Requests that completed successfully.
    pub success: u64,
    /// End-to-end request latency p50 over successful requests, ms.
    pub e2e_p50_ms: Option<f64>,
    /// End-to-end request latency p90 over successful requests, ms.
    pub e2e_p90_ms: Option<f64>,
    /// Output tokens of the whole burst divided by its wall time, tok/s.
    pub output_tps: Option<f64>,
    /// The prefix cache served more than the burst's requests share (`W`).
    #[serde(default)]
    pub warm: bool,
}

const BURST_HEAD: &str = "Burst / E2E Decode";
const BURST_BODY: &str = "A finite client-facing request burst per cell after Sustained \
    Decode, measured end to end. Use it to judge request UX; Sustained Decode stays the \
    throughput signal.";
const BURST_TITLE: &str = "Burst output tok/s  + E2E p50/p90 ms";
const BURST_LEGEND: &str = "Burst cells show output tok/s over the whole burst, with dim \
    detail as end-to-end request latency p50 ms / p90 ms over successful requests (—/— when \
    none succeeded). (Ne) = N requests of the burst failed.";

/// Stand-in for cells missing from a ragged `cells` matrix.
static MISSING_CELL: BurstCellView = BurstCellView::NotRun;

/// What a burst cell's `W` means.
const WARM_LEGEND: &str = "W = warm cache: the server's prefix cache served more of the burst's \
    prompt tokens than its requests share (each request's nonce comes first): other traffic on \
    the replicas, or a cache that reuses more than prefixes; the log names the cell.";

/// The Phase 3 panel followed by the burst table and its legend.
pub(crate) fn burst_blocks(burst: &BurstView) -> Vec<Block> {
    let panel = Panel::new("Phase 3", &[BURST_HEAD, BURST_BODY]);
    let mut legend = vec![BURST_LEGEND];
    let cells = || displayed_cells(burst);
    if cells().any(|c| matches!(c, BurstCellView::Skipped)) {
        legend.push(SKIPPED_LEGEND);
    }
    if cells().any(|c| matches!(c, BurstCellView::NotRun)) {
        legend.push(NOT_RUN_LEGEND);
    }
    if cells().any(|c| matches!(c, BurstCellView::Measured(b) if b.warm)) {
        legend.push(WARM_LEGEND);
    }
    vec![Block::Panel(panel), Block::Table(burst_table(burst)), Block::legend(&legend)]
}

/// The cell at (`ctx`, `conc`) index, or a not-run stand-in when missing.
fn cell_at(burst: &BurstView, ctx: usize, conc: usize) -> &BurstCellView {
    burst.cells.get(ctx).and_then(|row| row.get(conc)).unwrap_or(&MISSING_CELL)
}

/// Every displayed cell (those with a ctx label and a conc column).
fn displayed_cells(burst: &BurstView) -> impl Iterator<Item = &BurstCellView> {
    (0..burst.ctx_labels.len()).flat_map(move |ctx| (0..burst.conc.len()).map(move |conc| cell_at(burst, ctx, conc)))
}

/// Main text and dim detail of one burst cell.
fn burst_cell(cell: &BurstCellView) -> (String, Option<String>) {
    match cell {
        BurstCellView::Measured(b) => {
            let tps = b.output_tps.map_or_else(|| MISSING.to_string(), fmt_tps);
            let failed = b.requests.saturating_sub(b.success);
            let warm = if b.warm { " W" } else { "" };
            let main = format!("{tps}{}{warm}", fmt_error_suffix(failed));
            (main, Some(fmt_latency_pair(b.e2e_p50_ms, b.e2e_p90_ms)))
        }
        BurstCellView::Skipped => (SKIPPED.to_string(), None),
        BurstCellView::NotRun => (NOT_RUN.to_string(), None),
    }
}

/// The burst matrix: output tok/s with E2E latency p50/p90 as dim detail.
fn burst_table(burst: &BurstView) -> Table {
    let mut header = vec![CORNER.to_string()];
    header.extend(burst.conc.iter().map(u32::to_string));
    let mut table = Table::new(BURST_TITLE, header);
    for (ctx, label) in burst.ctx_labels.iter().enumerate() {
        let mut cells = vec![label.clone()];
        let mut dim = vec![String::new()];
        for conc in 0..burst.conc.len() {
            let (main, detail) = burst_cell(cell_at(burst, ctx, conc));
            cells.push(main);
            dim.push(detail.unwrap_or_default());
        }
        let has_dim = dim.iter().any(|d| !d.is_empty());
        table.rows.push(Row { cells, dim: has_dim.then_some(dim) });
    }
    table
}
