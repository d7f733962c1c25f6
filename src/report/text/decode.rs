//! The headless end-of-run decode-matrix report: Phase 2 tables, Phase 3 and the summary.

use serde::{Deserialize, Serialize};

use super::blocks::Block;
use super::burst::{BurstView, burst_blocks};
use super::format::CORNER;
use super::format::{
    LimitMark, NOT_APPLICABLE, NOT_RUN, NOT_RUN_LEGEND, SKIPPED, SKIPPED_LEGEND, fmt_error_suffix, fmt_errored,
    fmt_latency_pair, fmt_opt_tps, fmt_running_suffix, fmt_tps, fmt_ttft_itl,
};
use super::panel::Panel;
use super::table::{Row, Table};

/// Everything the decode report shows, as plain owned data (no link to the rest of the crate).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DecodeView {
    /// Version printed in the first line, e.g. `0.4.29`.
    pub tool_version: String,
    /// Context-length row labels, e.g. `0`, `16k`, `128k`.
    pub ctx_labels: Vec<String>,
    /// Requested concurrency of each column.
    pub conc: Vec<u32>,
    /// Cells indexed `[ctx][conc]`; missing entries render as not run.
    pub cells: Vec<Vec<CellView>>,
    /// Aggregate tok/s sources used, e.g. `none`, `openai_continuous_usage`.
    pub aggregate_sources: Vec<String>,
    /// Phase 3 burst results; `None` when the burst was not run.
    pub burst: Option<BurstView>,
    /// The knees of the matrix (marked `K`, with a footnote each); empty when none.
    #[serde(default)]
    pub knees: Vec<KneeMark>,
    /// Column headers when they are not the concurrencies (open-loop rate columns: `4/s`,
    /// `inf`, `8@4/s`), one per entry of `conc`; empty: the concurrencies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub column_labels: Vec<String>,
    /// Why `∅` cells that do not fail for KV cache were skipped, one line per reason
    /// (`∅ ctx=128k conc=1, 4: …`); the legend's `∅` line names only the KV cache.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skip_notes: Vec<String>,
}

/// A knee cell of the matrix and its footnote.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KneeMark {
    /// Row (ctx) index.
    pub ctx: usize,
    /// Column (conc) index.
    pub conc: usize,
    /// The footnote after `K: `, e.g. `knee at conc 8 (ctx 0): tok/s +1.8% (noise ±3%), TTFT p50 +240%`.
    pub note: String,
}

/// The mark of a knee cell.
pub(crate) const KNEE_MARK: &str = "K";

/// Outcome of one (ctx, conc) cell of the sustained decode matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CellView {
    /// The cell ran and produced a measurement.
    Measured(MeasuredCell),
    /// Every request of the cell errored (shown `0.0 (Ne)`).
    Errored {
        /// Number of errored requests.
        errors: u64,
    },
    /// Skipped because the cell does not fit in the KV cache (shown `∅`).
    Skipped,
    /// Never run: skipped by the operator or the session ended first (shown `·`).
    NotRun,
    /// Not run: past its row's knee under `--stop-at-knee` (shown `»`).
    PastKnee,
}

/// Measurements of one cell that ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MeasuredCell {
    /// Aggregate decode throughput over all streams, tok/s.
    pub aggregate_tps: f64,
    /// Mean per-request decode throughput, tok/s.
    pub per_request_tps: Option<f64>,
    /// Time to first token, ms.
    pub ttft_ms: Option<f64>,
    /// Inter-token latency, ms (absent when no stream produced two measured tokens).
    pub itl_ms: Option<f64>,
    /// Average `num_requests_running` from Prometheus during the window (requests).
    pub running_avg: Option<f64>,
    /// Requested concurrency (requests).
    pub requested: u32,
    /// What held it back, if anything: capacity-limited (running clearly below requested, and
    /// by what) or warmup timed out.
    pub limit: super::format::LimitMark,
    /// Requests that errored inside the cell.
    pub errors: u64,
    /// Client request latency p50 over completed requests, ms.
    pub latency_p50_ms: Option<f64>,
    /// Client request latency p90 over completed requests, ms.
    pub latency_p90_ms: Option<f64>,
    /// The prefix cache's warm note when it served more than the cell's requests share
    /// (shown `W`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm: Option<String>,
}

const SUSTAINED_HEAD: &str = "Sustained Decode";
const SUSTAINED_BODY: &str = "Steady-state decode throughput after the engine has admitted the \
    requested concurrency and passed warmup. Use this as the main tuning/regression signal for \
    kernels, NCCL, DCP, MTP, and scheduler changes.";
const AGGREGATE_TITLE: &str = "Aggregate tok/s  + TTFT/TPOT";
const AGGREGATE_LEGEND: &str = "Sustained Decode: aggregate tok/s uses OpenAI stream usage by \
    default (continuous completion_tokens when the server supports it). Prometheus is kept as \
    validation/scheduler data.";
const RUNNING_LEGEND: &str = "(X/Y) = avg running / requested concurrency from Prometheus";
/// Said when a cell shows `(X/Y)` with no mark: fewer ran than asked, yet no limit was seen.
const UNMARKED_LEGEND: &str = "(X/Y) with no mark = fewer ran than requested but no server limit was seen \
    (failed requests, see (Ne), or streams between requests)";
const PER_REQUEST_TITLE: &str = "Per-Request tok/s";
const LATENCY_TITLE: &str = "Client request latency: p50 / p90 ms";
const DETAIL_LEGEND: &str = "Aggregate cells show dim detail as TTFT ms / TPOT ms for the same \
    ctx/conc coordinate. TPOT is computed from observed generated tokens, including streams \
    stopped at the measurement boundary; a missing TPOT means no stream produced at least two \
    measured output tokens. Per-request tok/s and request latency are shown in separate per-cell \
    matrices. Completion/sample counts and full request-level distributions remain in JSON under \
    request_samples.";
const MODE_LEGEND: &str = "Sustained mode: client latency metrics explain request UX variance; \
    aggregate tok/s remains the primary throughput signal. \
    TPOT=(last_token_time-first_token_time)/(output_tokens-1) (vLLM's name; ITL is per token gap), \
    user tok/s=1/TPOT.";
/// How the per-request matrix divides (docs/reports.md §1.2).
const PER_REQUEST_LEGEND: &str = "Per-request tok/s = aggregate tok/s / average streams decoding \
    in the window (client-side: streams between their first and last token), so a cell held \
    below its concurrency shows what each running stream got.";
/// Why the client latency matrix is left out.
const NO_LATENCY_LEGEND: &str = "Client request latency: no request completed inside a window \
    (sustained streams outlast it), so the matrix is left out; see the burst phase or serve.";
const BURST_NOT_RUN: &str = "Not run. Re-run with --run-burst to append a finite client-facing \
    request burst after Sustained Decode. This is intentionally disabled by default because it \
    adds another full decode matrix.";
const SUMMARY_BODY: &str = "Primary matrices repeated last so the important numbers are visible \
    without scrolling back through diagnostics.";
const SUMMARY_TITLE: &str = "Aggregate decode tok/s";
/// What `W` means in a decode cell (docs/reports.md §3).
const WARM_LEGEND: &str = "W = warm cache: the server's prefix cache served more of the cell's \
    prompt tokens than its requests share (each request's nonce comes first, so they share only \
    their request form: other traffic on the replicas, or a cache that reuses more than \
    prefixes); its figures are not the cell's own.";

/// Stand-in for cells missing from a ragged `cells` matrix.
static MISSING_CELL: CellView = CellView::NotRun;

/// Render the whole decode report as lines joined by `\n`, without a trailing newline.
///
/// Layout and notation follow `tests/fixtures/seed_000.txt` (docs/reports.md §1): version line, Phase 2 panel,
/// aggregate (with dim TTFT/TPOT), per-request and latency matrices with their legends,
/// the Phase 3 panel (plus burst table when run), then the Primary Summary.
#[cfg(test)]
pub(crate) fn render_decode(view: &DecodeView, opts: super::table::RenderOptions) -> String {
    super::blocks::render_text_blocks(&decode_blocks(view), opts)
}

/// The decode report as blocks, in the order the text report draws them.
pub(crate) fn decode_blocks(view: &DecodeView) -> Vec<Block> {
    let mut out = vec![Block::Heading(format!("llm-decode-bench v{}", view.tool_version))];
    out.push(Block::Panel(Panel::new("Phase 2", &[SUSTAINED_HEAD, SUSTAINED_BODY])));
    out.push(Block::Table(marked(view, matrix(view, AGGREGATE_TITLE, aggregate_cell))));
    out.push(Block::Legend(aggregate_legend(view)));
    out.push(Block::Table(matrix(view, PER_REQUEST_TITLE, per_request_cell)));
    let latency = any_latency(view);
    if latency {
        out.push(Block::Table(matrix(view, LATENCY_TITLE, latency_cell)));
    }
    let mut legends = vec![DETAIL_LEGEND, PER_REQUEST_LEGEND, MODE_LEGEND];
    if !latency {
        legends.push(NO_LATENCY_LEGEND);
    }
    out.push(Block::legend(&legends));
    out.push(Block::Blank);
    match &view.burst {
        Some(burst) => out.extend(burst_blocks(burst)),
        None => out.push(Block::Panel(Panel::new("Phase 3", &["Burst / E2E Decode", BURST_NOT_RUN]))),
    }
    out.push(Block::Blank);
    out.push(Block::Panel(Panel::new("Primary Summary", &[SUMMARY_BODY])));
    out.push(Block::Table(marked(view, matrix(view, SUMMARY_TITLE, |c| (aggregate_cell(c).0, None)))));
    out
}

/// `table` with its knee cells marked ` K` (the first cell of a row is its label).
fn marked(view: &DecodeView, mut table: Table) -> Table {
    for k in &view.knees {
        if let Some(cell) = table.rows.get_mut(k.ctx).and_then(|r| r.cells.get_mut(k.conc + 1)) {
            cell.push(' ');
            cell.push_str(KNEE_MARK);
        }
    }
    table
}

/// The cell at (`ctx`, `conc`) index, or a not-run stand-in when missing.
fn cell_at(view: &DecodeView, ctx: usize, conc: usize) -> &CellView {
    view.cells.get(ctx).and_then(|row| row.get(conc)).unwrap_or(&MISSING_CELL)
}

/// Every displayed cell (those with a ctx label and a conc column).
fn displayed_cells(view: &DecodeView) -> impl Iterator<Item = &CellView> {
    (0..view.ctx_labels.len()).flat_map(move |ctx| (0..view.conc.len()).map(move |conc| cell_at(view, ctx, conc)))
}

/// Build a ctx x conc matrix; `render` gives each cell's main text and optional dim text.
fn matrix<F>(view: &DecodeView, title: &str, render: F) -> Table
where
    F: Fn(&CellView) -> (String, Option<String>),
{
    let mut header = vec![CORNER.to_string()];
    if view.column_labels.len() == view.conc.len() && !view.conc.is_empty() {
        header.extend(view.column_labels.iter().cloned());
    } else {
        header.extend(view.conc.iter().map(u32::to_string));
    }
    let mut table = Table::new(title, header);
    for (ctx, label) in view.ctx_labels.iter().enumerate() {
        let rendered: Vec<_> = (0..view.conc.len()).map(|conc| render(cell_at(view, ctx, conc))).collect();
        let has_dim = rendered.iter().any(|(_, dim)| dim.is_some());
        let mut cells = vec![label.clone()];
        let mut dim = vec![String::new()];
        for (main, detail) in rendered {
            cells.push(main);
            dim.push(detail.unwrap_or_default());
        }
        table.rows.push(Row { cells, dim: has_dim.then_some(dim) });
    }
    table
}

/// Text of a cell that did not produce a measurement, for the given "errored" text.
fn unmeasured(cell: &CellView, errored: String) -> String {
    match cell {
        CellView::Skipped => SKIPPED.to_string(),
        CellView::PastKnee => crate::report::knee::PAST_KNEE.to_string(),
        CellView::Errored { .. } => errored,
        CellView::NotRun | CellView::Measured(_) => NOT_RUN.to_string(),
    }
}

/// Running/requested suffix of a measured cell.
fn running_suffix(m: &MeasuredCell) -> String {
    fmt_running_suffix(m.running_avg, m.requested, m.limit)
}

/// Aggregate matrix cell: `564.8 (7/8)*` with `TTFT/TPOT` as dim detail.
fn aggregate_cell(cell: &CellView) -> (String, Option<String>) {
    match cell {
        CellView::Measured(m) => {
            let warm = if m.warm.is_some() { " W" } else { "" };
            let main = format!("{}{}{}{warm}", fmt_tps(m.aggregate_tps), fmt_error_suffix(m.errors), running_suffix(m));
            (main, Some(fmt_ttft_itl(m.ttft_ms, m.itl_ms)))
        }
        CellView::Errored { errors } => (fmt_errored(*errors), None),
        other => (unmeasured(other, String::new()), None),
    }
}

/// Per-request matrix cell: `70.6 (7/8)*`; errored cells are not applicable.
fn per_request_cell(cell: &CellView) -> (String, Option<String>) {
    let text = match cell {
        CellView::Measured(m) => format!("{}{}", fmt_opt_tps(m.per_request_tps), running_suffix(m)),
        other => unmeasured(other, NOT_APPLICABLE.to_string()),
    };
    (text, None)
}

/// True when some measured cell has a client latency: in a sustained run no request
/// completes inside a window and the matrix would be all `—/—`.
fn any_latency(view: &DecodeView) -> bool {
    displayed_cells(view).any(|c| matches!(c, CellView::Measured(m) if m.latency_p50_ms.is_some()))
}

/// Client latency matrix cell: `56.5k/57.6k`, `—/—` when no request completed.
fn latency_cell(cell: &CellView) -> (String, Option<String>) {
    let text = match cell {
        CellView::Measured(m) => fmt_latency_pair(m.latency_p50_ms, m.latency_p90_ms),
        other => unmeasured(other, NOT_APPLICABLE.to_string()),
    };
    (text, None)
}

/// Legend paragraphs under the aggregate matrix; notation lines appear only when used.
fn aggregate_legend(view: &DecodeView) -> Vec<String> {
    let mut paragraphs = vec![AGGREGATE_LEGEND.to_string()];
    if !view.aggregate_sources.is_empty() {
        let sources = view.aggregate_sources.join(", ");
        paragraphs.push(format!("Aggregate source(s): {sources}"));
    }
    if displayed_cells(view).any(|c| matches!(c, CellView::Skipped)) {
        paragraphs.push(SKIPPED_LEGEND.to_string());
        paragraphs.extend(view.skip_notes.iter().cloned());
    }
    if displayed_cells(view).any(|c| matches!(c, CellView::NotRun)) {
        paragraphs.push(NOT_RUN_LEGEND.to_string());
    }
    if displayed_cells(view).any(|c| matches!(c, CellView::PastKnee)) {
        paragraphs.push(crate::report::knee::PAST_KNEE_LEGEND.to_string());
    }
    let any_suffix = displayed_cells(view).any(|c| match c {
        CellView::Measured(m) => !running_suffix(m).is_empty(),
        _ => false,
    });
    if any_suffix {
        let marks = displayed_cells(view).filter_map(|c| match c {
            CellView::Measured(m) => Some(&m.limit),
            _ => None,
        });
        // `(X/Y)` is explained only where a cell shows one (without Prometheus, `*?` alone).
        let any_running =
            displayed_cells(view).any(|c| matches!(c, CellView::Measured(m) if running_suffix(m).contains('(')));
        let running = any_running.then_some(RUNNING_LEGEND);
        let unmarked = displayed_cells(view)
            .any(|c| matches!(c, CellView::Measured(m) if !m.limit.any() && running_suffix(m).contains('(')));
        let unmarked = unmarked.then_some(UNMARKED_LEGEND);
        let legend: Vec<&str> = running.into_iter().chain(unmarked).chain(LimitMark::legend(marks)).collect();
        paragraphs.push(legend.join("; "));
    }
    paragraphs.extend(view.knees.iter().map(|k| format!("{KNEE_MARK}: {}", k.note)));
    paragraphs.extend(warm_notes(view));
    paragraphs
}

/// The `W` legend and one line per warm cell (`W 16k 4: warm cache: …`); none without one.
fn warm_notes(view: &DecodeView) -> Vec<String> {
    let column = |c: usize| match view.column_labels.get(c) {
        Some(label) => label.clone(),
        None => view.conc.get(c).map_or_else(String::new, u32::to_string),
    };
    let mut notes = Vec::new();
    for (r, ctx) in view.ctx_labels.iter().enumerate() {
        for c in 0..view.conc.len() {
            if let CellView::Measured(MeasuredCell { warm: Some(note), .. }) = cell_at(view, r, c) {
                notes.push(format!("W {ctx} {}: {note}.", column(c)));
            }
        }
    }
    if !notes.is_empty() {
        notes.insert(0, WARM_LEGEND.to_string());
    }
    notes
}
