//! Maps a [`SessionReport`] onto the text renderer's views (`DecodeView`) and renders them.

use super::json::{DecodeAttempt, DecodeCell, DecodeSection, SessionReport};
use super::levels::column_label;
use super::skip::SkipKind;
use super::status::CellOutcome;
use super::text::{
    Block, BoxStyle, BurstCell, BurstCellView, BurstView, CellView, DecodeView, KneeMark, MeasuredCell, RenderOptions,
    decode_blocks, render_text_blocks, routing_blocks,
};
use crate::load::rate::Rate;

/// The decode matrix of `report` as the text renderer's view, or `None` without a decode section.
///
/// Cells are placed by their `ctx_label` and `conc` (not by position); cells naming a row or
/// column the section does not list are ignored, and positions without a cell render as not run.
/// Phase 3 comes from the report's burst section ([`burst_view`]).
pub fn decode_view(report: &SessionReport) -> Option<DecodeView> {
    let section = report.decode.as_ref()?;
    let columns = columns(section);
    let many_conc = section.conc.len() > 1;
    let label = |(conc, rate): &(u32, Option<Rate>)| column_label(*conc, *rate, many_conc);
    let open_loop = columns.iter().any(|(_, r)| r.is_some());
    Some(DecodeView {
        tool_version: report.tool.version.clone(),
        ctx_labels: section.ctx_labels.clone(),
        conc: columns.iter().map(|(c, _)| *c).collect(),
        cells: cell_grid(section, &columns),
        aggregate_sources: section.aggregate_sources.iter().map(|s| s.as_str().to_string()).collect(),
        burst: burst_view(report),
        knees: knee_marks(section, &columns),
        column_labels: if open_loop { columns.iter().map(label).collect() } else { Vec::new() },
        skip_notes: skip_notes(section),
    })
}

/// One line per reason of the cells skipped for something other than KV cache (the model's
/// context, the plan), so `∅` is never read as a KV limit it is not: `∅ ctx=128k conc 1, 4:
/// the prompt and its output do not fit max_model_len …`.
fn skip_notes(section: &DecodeSection) -> Vec<String> {
    let mut by_reason: Vec<(String, String, Vec<u32>)> = Vec::new();
    for cell in section.cells.iter().filter(|c| c.status == CellOutcome::Skipped) {
        let kind = super::skip::kind_of(cell.skip, cell.timeout_reason.as_deref());
        if !matches!(kind, Some(SkipKind::ContextLength | SkipKind::Plan)) {
            continue;
        }
        let reason = cell.timeout_reason.clone().unwrap_or_else(|| "does not fit the model's context".into());
        match by_reason.iter_mut().find(|(ctx, r, _)| *ctx == cell.ctx_label && *r == reason) {
            Some((_, _, conc)) => conc.push(cell.conc),
            None => by_reason.push((cell.ctx_label.clone(), reason, vec![cell.conc])),
        }
    }
    let list = |c: &[u32]| c.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    by_reason.iter().map(|(ctx, reason, conc)| format!("∅ ctx={ctx} conc {}: {reason}", list(conc))).collect()
}

/// The knees of `section` placed in its matrix `columns` (knees naming a row or column it does
/// not list are left out). A rate knee names its rate as the report writes it (`4`, `inf`).
fn knee_marks(section: &DecodeSection, columns: &[(u32, Option<Rate>)]) -> Vec<KneeMark> {
    let place = |k: &super::json::RowKnee| {
        let ctx = section.ctx_labels.iter().position(|l| *l == k.ctx_label)?;
        let rate_of = |r: &Option<Rate>| r.map(|r| r.to_string());
        let conc = columns.iter().position(|(c, r)| Some(*c) == k.at_conc && rate_of(r) == k.at_rate)?;
        Some(KneeMark { ctx, conc, note: k.footnote() })
    };
    section.knees.iter().filter_map(place).collect()
}

/// The matrix columns: the concurrencies, or with open-loop cells every (cap, rate) the
/// cells name, in the order they appear.
fn columns(section: &DecodeSection) -> Vec<(u32, Option<Rate>)> {
    if section.cells.iter().all(|c| c.rate.is_none()) {
        return section.conc.iter().map(|c| (*c, None)).collect();
    }
    let mut out: Vec<(u32, Option<Rate>)> = Vec::new();
    for c in &section.cells {
        if !out.contains(&(c.conc, c.rate)) {
            out.push((c.conc, c.rate));
        }
    }
    out
}

/// Phase 3 of `report` as the text renderer's view, or `None` without a burst section.
/// `measured` and `errored` cells show their last attempt (with repetitions the mean of their
/// runs), `skipped` is `∅`, the rest not run.
pub fn burst_view(report: &SessionReport) -> Option<BurstView> {
    let section = report.burst.as_ref()?;
    let mut cells = vec![vec![BurstCellView::NotRun; section.conc.len()]; section.ctx_labels.len()];
    for cell in &section.cells {
        let row = section.ctx_labels.iter().position(|label| *label == cell.ctx_label);
        let col = section.conc.iter().position(|&conc| conc == cell.conc);
        let view = match (cell.status, super::runs::shown(&cell.attempts, cell.runs.as_ref())) {
            (CellOutcome::Measured | CellOutcome::Errored, Some(a)) => BurstCellView::Measured(BurstCell {
                requests: a.requests,
                success: a.success,
                e2e_p50_ms: a.e2e_ms.map(|s| s.p50),
                e2e_p90_ms: a.e2e_ms.map(|s| s.p90),
                output_tps: Some(a.output_tps),
                warm: a.prefix_cache.is_some_and(|p| p.warm),
            }),
            (CellOutcome::Skipped, _) => BurstCellView::Skipped,
            _ => BurstCellView::NotRun,
        };
        if let Some(slot) = row.zip(col).and_then(|(r, c)| cells.get_mut(r).and_then(|v| v.get_mut(c))) {
            *slot = view;
        }
    }
    Some(BurstView { ctx_labels: section.ctx_labels.clone(), conc: section.conc.clone(), cells })
}

/// The text report of `report`: the decode matrix, then the routing summary (each only when
/// the report has it).
///
/// `ascii` draws borders with `+ - |` instead of rounded box drawing; `dim_ansi` wraps the
/// dim detail lines in ANSI dim escapes (for colour terminals only).
pub fn render_text(report: &SessionReport, ascii: bool, dim_ansi: bool) -> String {
    render_text_within(report, ascii, dim_ansi, None)
}

/// [`render_text`] with every table at most `max_width` columns wide (a wider one is split,
/// its first column repeated); the panels and legends wrap at 80.
pub fn render_text_within(report: &SessionReport, ascii: bool, dim_ansi: bool, max_width: Option<usize>) -> String {
    let style = if ascii { BoxStyle::Ascii } else { BoxStyle::Unicode };
    render_text_blocks(&report_blocks(report), RenderOptions { style, dim_ansi, max_width })
}

/// The blocks of the report's tables: the decode report (with its goodput matrices when the
/// SLO was chosen), a blank line, the routing summary (each only when the report has it), each
/// followed by its deltas against `--baseline` when the report has one, then the footnote of
/// failed requests with their reasons; the text and markdown formats draw these.
pub fn report_blocks(report: &SessionReport) -> Vec<Block> {
    let mut blocks = decode_view(report).map(|view| decode_blocks(&view)).unwrap_or_default();
    if !blocks.is_empty() {
        blocks.extend(super::goodput_tables::goodput_blocks(report));
    }
    blocks.extend(super::baseline::text::decode_blocks(report));
    let mut routing = routing_blocks(&super::runs::shown_phases(report));
    routing.extend(super::baseline::text::routing_blocks(report));
    if !blocks.is_empty() && !routing.is_empty() {
        blocks.push(Block::Blank);
    }
    blocks.extend(routing);
    if let Some(view) = serve_view(report) {
        if !blocks.is_empty() {
            blocks.push(Block::Blank);
        }
        blocks.extend(super::text::serve_blocks(&view));
    }
    for section in &report.extensions {
        let table = super::text::extension::extension_blocks(section);
        if !blocks.is_empty() && !table.is_empty() {
            blocks.push(Block::Blank);
        }
        blocks.extend(table);
    }
    let runs = super::runs::render::blocks(report);
    if !blocks.is_empty() && !runs.is_empty() {
        blocks.push(Block::Blank);
    }
    blocks.extend(runs);
    blocks.extend(super::error_notes::error_blocks(report));
    blocks.extend(super::merge_note::merge_blocks(report));
    blocks
}

/// The serve section of `report` as the text renderer's view: rows input len, one column per
/// max concurrency x request rate (labelled as the monitor labels them).
pub fn serve_view(report: &SessionReport) -> Option<super::text::ServeView> {
    use super::text::ServeCellView;
    let s = report.serve.as_ref()?;
    let many = s.conc.len() > 1;
    let column = |conc: u32, rate: &str| match many {
        true => format!("{conc}@{}", rate_label(rate)),
        false => rate_label(rate),
    };
    let columns: Vec<String> = s.conc.iter().flat_map(|c| s.request_rates.iter().map(move |r| column(*c, r))).collect();
    let mut cells = vec![vec![ServeCellView::NotRun; columns.len()]; s.ctx_labels.len()];
    for c in &s.cells {
        let row = s.ctx_labels.iter().position(|l| *l == c.ctx_label);
        let col = columns.iter().position(|l| *l == column(c.max_concurrency, &c.request_rate));
        let view = match (c.status, super::runs::shown(&c.attempts, c.runs.as_ref())) {
            (CellOutcome::Measured | CellOutcome::Errored, Some(a)) => ServeCellView::Measured {
                output_tps: a.metrics.output_throughput,
                failed: a.metrics.failed,
                ttft_ms: a.metrics.median_ttft_ms,
                tpot_ms: a.metrics.median_tpot_ms,
                goodput: a.metrics.request_goodput,
                good: a
                    .metrics
                    .request_goodput
                    .map(|g| ((g * a.metrics.duration_s).round() as u64, a.metrics.completed + a.metrics.failed)),
                warm: a.prefix_cache.filter(|p| p.warm).map(|p| p.warm_note()),
                behind: a.schedule_lag.and_then(|l| l.behind_note()),
            },
            (CellOutcome::Skipped, _) => ServeCellView::Skipped,
            _ => ServeCellView::NotRun,
        };
        if let Some(slot) = row.zip(col).and_then(|(r, k)| cells.get_mut(r).and_then(|v| v.get_mut(k))) {
            *slot = view;
        }
    }
    let place = |k: &super::json::RowKnee| {
        let row = s.ctx_labels.iter().position(|l| *l == k.ctx_label)?;
        let conc = k.at_conc?;
        let col = match &k.at_rate {
            Some(rate) => columns.iter().position(|l| *l == column(conc, rate)),
            // A concurrency knee (one rate): the column of that concurrency.
            None => s.request_rates.first().and_then(|r| columns.iter().position(|l| *l == column(conc, r))),
        }?;
        Some((row, col, k.footnote()))
    };
    let knees = s.knees.iter().filter_map(place).collect();
    let goodput_slo = s.goodput_slo.as_ref().map(slo_text);
    let (range_ratio, dataset) = (s.random_range_ratio, s.workload_line());
    let ctx_labels = s.ctx_labels.clone();
    Some(super::text::ServeView { ctx_labels, columns, cells, knees, goodput_slo, range_ratio, dataset })
}

/// A `--goodput` SLO as the legend states it: `TTFT ≤ 100 ms, TPOT ≤ 20 ms`.
fn slo_text(g: &super::serve::GoodputSlo) -> String {
    let bounds = [("TTFT", g.ttft_ms), ("TPOT", g.tpot_ms), ("E2EL", g.e2el_ms)];
    let parts: Vec<String> = bounds.iter().filter_map(|(n, v)| v.map(|v| format!("{n} ≤ {v} ms"))).collect();
    parts.join(", ")
}

/// `inf`, or `4/s` for a rate of 4 requests/s (the monitor's column label).
fn rate_label(rate: &str) -> String {
    match rate {
        "inf" | "trace" => rate.to_string(),
        r => format!("{r}/s"),
    }
}

/// The section's cells as a `[ctx][column]` grid; unfilled positions are not run.
fn cell_grid(section: &DecodeSection, columns: &[(u32, Option<Rate>)]) -> Vec<Vec<CellView>> {
    let mut grid = vec![vec![CellView::NotRun; columns.len()]; section.ctx_labels.len()];
    for cell in &section.cells {
        let row = section.ctx_labels.iter().position(|label| *label == cell.ctx_label);
        let col = columns.iter().position(|&col| col == (cell.conc, cell.rate));
        if let Some(slot) = row.zip(col).and_then(|(r, c)| grid.get_mut(r).and_then(|cells| cells.get_mut(c))) {
            *slot = cell_view(cell);
        }
    }
    grid
}

/// How one cell shows in the matrices, from its status and its last attempt (with
/// repetitions: the mean of its runs, `report::runs`).
pub fn cell_view(cell: &DecodeCell) -> CellView {
    let last = cell.attempts.last();
    match (cell.status, super::runs::shown(&cell.attempts, cell.runs.as_ref())) {
        (CellOutcome::Measured, Some(attempt)) => CellView::Measured(measured_cell(&attempt)),
        (CellOutcome::Errored, _) => CellView::Errored { errors: last.map_or(0, error_total) },
        (CellOutcome::Skipped, _) => match super::skip::kind_of(cell.skip, cell.timeout_reason.as_deref()) {
            Some(SkipKind::PastKnee) => CellView::PastKnee,
            Some(SkipKind::KvCache | SkipKind::ContextLength | SkipKind::Plan) | None => CellView::Skipped,
        },
        _ => CellView::NotRun,
    }
}

/// The numbers of a measured attempt; percentiles are p50 unless named otherwise.
fn measured_cell(attempt: &DecodeAttempt) -> MeasuredCell {
    let latency = attempt.latency_ms.as_ref();
    MeasuredCell {
        aggregate_tps: attempt.aggregate_tps,
        per_request_tps: Some(attempt.per_request_tps),
        ttft_ms: attempt.ttft_ms.as_ref().map(|s| s.p50),
        itl_ms: attempt.itl_ms.as_ref().map(|s| s.p50),
        running_avg: attempt.running_avg,
        requested: attempt.running_requested(),
        limit: super::text::format::LimitMark::of(attempt),
        errors: error_total(attempt),
        latency_p50_ms: latency.map(|s| s.p50),
        latency_p90_ms: latency.map(|s| s.p90),
        warm: attempt.prefix_cache.filter(|p| p.warm).map(|p| p.warm_note()),
    }
}

/// Failed requests of an attempt: `error_count`, or the per-kind sum when that is larger.
fn error_total(attempt: &DecodeAttempt) -> u64 {
    let by_kind = attempt.errors.values().fold(0_u64, |sum, n| sum.saturating_add(*n));
    attempt.error_count.max(by_kind)
}

#[cfg(test)]
#[path = "tables_tests.rs"]
mod tests;
