//! The extension sections of a merged report (docs/reports.md §9). Conversation cells shard
//! (conversation k on shard k mod N): their counts add (requests, errors, output tokens, turns
//! not sent) and output tok/s is the shards' rates added, as decode's and serve's. Their other
//! figures (turn TTFT and TPOT medians, prompt means, goodput, prefix-cache ratios) and the
//! per-turn table are computed from requests a conversation attempt does not keep in its
//! report, so the merge leaves them out (null) with a note rather than averaging medians.
//! Other kinds are refused in `check` (an SLO search cannot be sharded at all).

use super::attempt::{add_counts, examples, least_finished};
use super::decode::cell_verdict;
use crate::report::extension::{ExtensionAttempt, ExtensionCell, ExtensionFigure, ExtensionSection};
use crate::report::json::SessionReport;

/// The kinds the merge merges.
pub(super) const MERGED_KINDS: [&str; 1] = [crate::experiment::conversation::NAME];

/// Figures that are counts: they add over the shards.
const COUNTS: [&str; 1] = ["turns_not_sent"];

/// Every extension section merged over `parts` (shard index, report; the base shard first),
/// in the base shard's order.
pub(super) fn merge(parts: &[(u32, &SessionReport)], notes: &mut Vec<String>) -> Vec<ExtensionSection> {
    let Some((_, base)) = parts.first() else { return Vec::new() };
    base.extensions
        .iter()
        .map(|section| {
            let same: Vec<(u32, &ExtensionSection)> = parts
                .iter()
                .filter_map(|(i, r)| r.extensions.iter().find(|s| s.kind == section.kind).map(|s| (*i, s)))
                .collect();
            let cells = section.cells.iter().map(|cell| merge_cell(&same, cell, notes)).collect();
            ExtensionSection { cells, ..section.clone() }
        })
        .collect()
}

/// One cell over the shards' sections that have it.
fn merge_cell(sections: &[(u32, &ExtensionSection)], cell: &ExtensionCell, notes: &mut Vec<String>) -> ExtensionCell {
    let same =
        |c: &&ExtensionCell| (c.ctx, c.conc, &c.rate, &c.label) == (cell.ctx, cell.conc, &cell.rate, &cell.label);
    let cells: Vec<(u32, &ExtensionCell)> =
        sections.iter().filter_map(|(i, s)| s.cells.iter().find(same).map(|c| (*i, c))).collect();
    let name = cell.label.clone();
    let attempts = super::by_attempt_number(&cells, |c| c.attempts.as_slice(), |a: &ExtensionAttempt| a.attempt)
        .into_iter()
        .map(|(n, parts)| merge_attempt(&parts, &format!("{name} attempt {n}"), notes))
        .collect();
    let read =
        |c: &ExtensionCell| (c.status, c.timeout_reason.clone(), c.skip, c.runs.is_some() || !c.baseline.is_empty());
    let (status, timeout_reason, skip) = cell_verdict(&cells, read, &name, notes);
    ExtensionCell { status, timeout_reason, skip, attempts, baseline: Vec::new(), runs: None, ..cell.clone() }
}

/// One attempt over the shards that made it: counts add, rates add, the rest left out.
pub(super) fn merge_attempt(
    parts: &[(u32, &ExtensionAttempt)],
    name: &str,
    notes: &mut Vec<String>,
) -> ExtensionAttempt {
    let base = parts[0].1;
    let all = || parts.iter().map(|(_, a)| *a);
    let mut left_out = Vec::new();
    let figures = base
        .figures
        .iter()
        .map(|f| {
            let value = match COUNTS.contains(&f.name.as_str()) {
                true => all().map(|a| figure(a, &f.name)).sum::<Option<f64>>(),
                false => {
                    left_out.push(f.name.clone());
                    None
                }
            };
            ExtensionFigure { value, ..f.clone() }
        })
        .collect();
    if parts.len() > 1 {
        left_out.push("ttft_p50_ms".into());
        left_out.extend(base.tables.keys().map(|t| format!("the {t} table")));
        notes.push(format!(
            "{name}: {} left out: computed from requests the shards' reports do not keep",
            left_out.join(", ")
        ));
    }
    let single = parts.len() == 1;
    ExtensionAttempt {
        attempt: base.attempt,
        status: least_finished(&parts.iter().map(|(i, a)| (*i, a.status)).collect::<Vec<_>>(), name, notes),
        started_s: all().map(|a| a.started_s).fold(f64::INFINITY, f64::min),
        duration_s: all().map(|a| a.duration_s).fold(0.0, f64::max),
        requests: all().map(|a| a.requests).sum(),
        errors: add_counts(all().map(|a| &a.errors)),
        error_examples: examples(all().map(|a| &a.error_examples)),
        output_tokens: all().map(|a| a.output_tokens).sum(),
        output_tps: all().map(|a| a.output_tps).sum(),
        ttft_p50_ms: base.ttft_p50_ms.filter(|_| single),
        figures: if single { base.figures.clone() } else { figures },
        tables: if single { base.tables.clone() } else { Default::default() },
        labels: base.labels.clone(),
    }
}

/// Figure `name` of `a`, when it has a value.
fn figure(a: &ExtensionAttempt, name: &str) -> Option<f64> {
    a.figures.iter().find(|f| f.name == name).and_then(|f| f.value)
}
