//! The decode matrix of a merged report: cells matched by ctx, concurrency and rate, attempts
//! by number (`attempt::merge` merges each), row knees found again on the merged cells.

use super::attempt;
use crate::cell::spec::CellSpec;
use crate::experiment::decode::knee::row_knees;
use crate::load::slice::Slice;
use crate::report::json::{DecodeAttempt, DecodeCell, DecodeSection, SessionReport};
use crate::report::kind::ExperimentKind;
use crate::report::skip::SkipKind;
use crate::report::status::CellOutcome;

/// The decode section merged over `parts` (shard index, report; the base shard first); None
/// when no shard has one.
pub(super) fn merge(parts: &[(u32, &SessionReport)], notes: &mut Vec<String>) -> Option<DecodeSection> {
    let sections: Vec<(u32, &DecodeSection)> =
        parts.iter().filter_map(|(i, r)| r.decode.as_ref().map(|d| (*i, d))).collect();
    let (_, base) = *sections.first()?;
    let count = parts.iter().find_map(|(_, r)| r.shard.as_ref()).map_or(1, |s| s.count);
    let mut cells = Vec::with_capacity(base.cells.len());
    for cell in &base.cells {
        let same: Vec<(u32, &DecodeCell)> =
            sections.iter().filter_map(|(i, d)| d.cells.iter().find(|c| same_cell(c, cell)).map(|c| (*i, c))).collect();
        if same.len() < sections.len() {
            notes.push(format!("{}: only {} of {} shards have this cell", label(cell), same.len(), sections.len()));
        }
        cells.push(merge_cell(&without_empty_slices(&same, count), notes));
    }
    let mut aggregate_sources = Vec::new();
    for s in sections.iter().flat_map(|(_, d)| &d.aggregate_sources) {
        if !aggregate_sources.contains(s) {
            aggregate_sources.push(*s);
        }
    }
    let knees = knees(&cells);
    Some(DecodeSection {
        ctx_labels: base.ctx_labels.clone(),
        conc: base.conc.clone(),
        cells,
        aggregate_sources,
        knees,
    })
}

/// The shards that had streams of a closed-loop cell: a shard whose slice is 0 streams (conc
/// below the shard count, `Slice::share`) skipped it by plan with nothing to run, so the cell
/// is the other shards'. All of them when every shard's slice is empty.
fn without_empty_slices<'a>(cells: &[(u32, &'a DecodeCell)], count: u32) -> Vec<(u32, &'a DecodeCell)> {
    let ran = |(i, c): &&(u32, &DecodeCell)| c.rate.is_some() || Slice { index: *i, count }.share(c.conc) > 0;
    let kept: Vec<(u32, &DecodeCell)> = cells.iter().filter(ran).copied().collect();
    if kept.is_empty() { cells.to_vec() } else { kept }
}

/// The same cell of the plan: context, concurrency and rate.
fn same_cell(a: &DecodeCell, b: &DecodeCell) -> bool {
    (a.ctx, a.conc, a.rate) == (b.ctx, b.conc, b.rate)
}

/// The cell as notes name it (`ctx=16k conc=4`, `... rate=8/s`).
pub(super) fn label(c: &DecodeCell) -> String {
    let rate = c.rate.map(|r| format!(" rate={r}")).unwrap_or_default();
    format!("ctx={} conc={}{rate}", c.ctx_label, c.conc)
}

/// One cell over its shards: each attempt number merged over the shards that made it (a
/// note names those that did not: a shard killed or stopped before the cell), the status of
/// the least finished shard that ran it.
fn merge_cell(cells: &[(u32, &DecodeCell)], notes: &mut Vec<String>) -> DecodeCell {
    let base = cells[0].1;
    let name = label(base);
    let attempts = super::by_attempt_number(cells, |c| c.attempts.as_slice(), |a: &DecodeAttempt| a.attempt)
        .into_iter()
        .map(|(n, parts)| {
            let name = format!("{name} attempt {n}");
            if parts.len() < cells.len() {
                let streams: u32 = parts.iter().map(|(_, a)| a.requested).sum();
                let ran = format!("{streams} of the cell's {} streams", base.conc);
                notes.push(super::only_some_made(&name, parts.iter().map(|p| p.0), &ran));
            }
            attempt::merge(&parts, &name, notes)
        })
        .collect();
    if cells.iter().any(|(_, c)| c.runs.is_some()) {
        notes.push(format!("{name}: repeated runs (--num-runs) are not merged; each attempt is"));
    }
    if cells.iter().any(|(_, c)| !c.baseline.is_empty()) {
        notes.push(format!("{name}: the shards' --baseline figures are left out"));
    }
    let status = cell_status(&cells.iter().map(|(i, c)| (*i, c.status)).collect::<Vec<_>>(), &name, notes);
    let reason = cells.iter().find_map(|(_, c)| c.timeout_reason.clone());
    let skip = cells.iter().find_map(|(_, c)| c.skip);
    DecodeCell {
        ctx: base.ctx,
        ctx_label: base.ctx_label.clone(),
        conc: base.conc,
        status,
        timeout_reason: reason,
        skip,
        attempts,
        rate: base.rate,
        baseline: Vec::new(),
        runs: None,
    }
}

/// A cell as [`cell_verdict`] reads it: its status, why it was skipped and how, and whether it
/// carries repeated runs or `--baseline` figures.
pub(super) type CellCopy = (CellOutcome, Option<String>, Option<SkipKind>, bool);

/// A merged cell's status ([`cell_status`]), skip reason and skip kind from its shards' copies
/// `cells` (each read by `read`), with a note when repeated runs or `--baseline` figures are
/// left out.
pub(super) fn cell_verdict<C>(
    cells: &[(u32, &C)],
    read: impl Fn(&C) -> CellCopy,
    name: &str,
    notes: &mut Vec<String>,
) -> (CellOutcome, Option<String>, Option<SkipKind>) {
    let copies: Vec<(u32, CellCopy)> = cells.iter().map(|(i, c)| (*i, read(c))).collect();
    if copies.iter().any(|(_, c)| c.3) {
        notes.push(format!("{name}: repeated runs and --baseline figures are not merged"));
    }
    let status = cell_status(&copies.iter().map(|(i, c)| (*i, c.0)).collect::<Vec<_>>(), name, notes);
    (status, copies.iter().find_map(|(_, c)| c.1.clone()), copies.iter().find_map(|(_, c)| c.2))
}

/// The cell's status: the shards' when they agree; else, of the shards that ran it (not
/// pending), the least finished one's (errored before skipped before measured), with a note.
pub(super) fn cell_status(cells: &[(u32, CellOutcome)], name: &str, notes: &mut Vec<String>) -> CellOutcome {
    let first = cells[0].1;
    if cells.iter().all(|(_, s)| *s == first) {
        return first;
    }
    let ran: Vec<CellOutcome> = cells.iter().map(|(_, s)| *s).filter(|s| *s != CellOutcome::Pending).collect();
    let order = [CellOutcome::Errored, CellOutcome::SkippedByOperator, CellOutcome::Skipped, CellOutcome::Measured];
    let least = order.into_iter().find(|o| ran.contains(o)).unwrap_or(CellOutcome::Pending);
    let each: Vec<String> = cells.iter().map(|(i, s)| format!("shard {i} {}", s.as_str())).collect();
    notes.push(format!("{name}: the shards' statuses differ ({}); merged as {}", each.join(", "), least.as_str()));
    least
}

/// The knee of every row of the merged matrix (src/experiment/decode/knee.rs), each cell read
/// at its latest attempt.
fn knees(cells: &[DecodeCell]) -> Vec<crate::report::json::RowKnee> {
    let specs: Vec<CellSpec> =
        cells.iter().map(|c| CellSpec::grid_at(ExperimentKind::Decode, c.ctx, c.conc, c.rate)).collect();
    let rows = cells.iter().zip(&specs).enumerate().map(|(i, (c, s))| (i, s, c.attempts.last(), None));
    row_knees(rows).into_iter().map(|k| k.row).collect()
}
