//! The burst section of a merged report (docs/reports.md §9): a sharded burst is every
//! shard's share of the cell's requests (`Slice::share`) sent at the same instant of the
//! `--start-at` timeline, so the merged attempt is the one burst one process would have sent.
//! Counts and tokens add, records concatenate, TTFT/TPOT/e2e and per-token ITL are recomputed
//! from the shards' distributions (`BurstAttempt.shard_dists`, `dists::of_dists`), and the
//! makespan is the longest shard's (every shard sent at the same instant), so output tok/s and
//! goodput rps are the totals over it, as one process computes them.

use super::attempt::{add_counts, examples, least_finished, records, target_lost};
use super::decode::cell_verdict;
use super::dists;
use crate::load::slice::Slice;
use crate::report::goodput::Goodput;
use crate::report::json::{BurstAttempt, BurstCellReport, BurstSection, SessionReport};

/// The burst section merged over `parts` (shard index, report; the base shard first); None
/// when no shard has one.
pub(super) fn merge(parts: &[(u32, &SessionReport)], notes: &mut Vec<String>) -> Option<BurstSection> {
    let sections: Vec<(u32, &BurstSection)> =
        parts.iter().filter_map(|(i, r)| r.burst.as_ref().map(|b| (*i, b))).collect();
    let (_, base) = *sections.first()?;
    let count = parts.iter().find_map(|(_, r)| r.shard.as_ref()).map_or(1, |s| s.count);
    let mut cells = Vec::with_capacity(base.cells.len());
    for cell in &base.cells {
        let same: Vec<(u32, &BurstCellReport)> = sections
            .iter()
            .filter_map(|(i, b)| b.cells.iter().find(|c| (c.ctx, c.conc) == (cell.ctx, cell.conc)).map(|c| (*i, c)))
            .collect();
        // A shard whose share of the burst is 0 (conc below the shard count) skipped it by plan.
        let ran: Vec<_> = same.iter().filter(|(i, c)| Slice { index: *i, count }.share(c.conc) > 0).copied().collect();
        cells.push(merge_cell(if ran.is_empty() { &same } else { &ran }, notes));
    }
    Some(BurstSection { cells, ..base.clone() })
}

/// One burst cell over the shards that had requests of it.
fn merge_cell(cells: &[(u32, &BurstCellReport)], notes: &mut Vec<String>) -> BurstCellReport {
    let base = cells[0].1;
    let name = format!("burst ctx={} conc={}", base.ctx_label, base.conc);
    let attempts = super::by_attempt_number(cells, |c| c.attempts.as_slice(), |a: &BurstAttempt| a.attempt)
        .into_iter()
        .map(|(n, parts)| {
            let name = format!("{name} attempt {n}");
            if parts.len() < cells.len() {
                let sent: u64 = parts.iter().map(|(_, a)| a.requests).sum();
                let ran = format!("{sent} of the burst's {} requests", base.conc);
                notes.push(super::only_some_made(&name, parts.iter().map(|p| p.0), &ran));
            }
            merge_attempt(&parts, &name, notes)
        })
        .collect();
    let read =
        |c: &BurstCellReport| (c.status, c.timeout_reason.clone(), c.skip, c.runs.is_some() || !c.baseline.is_empty());
    let (status, timeout_reason, skip) = cell_verdict(cells, read, &name, notes);
    BurstCellReport { status, timeout_reason, skip, attempts, baseline: Vec::new(), runs: None, ..base.clone() }
}

/// One burst attempt over the shards that made it.
pub(super) fn merge_attempt(parts: &[(u32, &BurstAttempt)], name: &str, notes: &mut Vec<String>) -> BurstAttempt {
    let base = parts[0].1;
    let all = || parts.iter().map(|(_, a)| *a);
    let dists: Vec<_> = parts.iter().map(|(i, a)| (*i, a.shard_dists.as_ref())).collect();
    let measured = all().any(|a| a.ttft_ms.is_some() || a.e2e_ms.is_some());
    let figures = dists::of_dists(&dists, measured, name, notes);
    let makespan_s = all().map(|a| a.makespan_s).fold(0.0, f64::max);
    let output_tokens = all().map(|a| a.output_tokens).sum();
    let goodput = all().map(|a| a.goodput.as_ref()).collect::<Option<Vec<_>>>().map(|g| {
        let (good, judged) = g.iter().fold((0, 0), |(x, y), t| (x + t.good, y + t.judged));
        Goodput::new(good, judged, makespan_s)
    });
    BurstAttempt {
        attempt: base.attempt,
        status: least_finished(&parts.iter().map(|(i, a)| (*i, a.status)).collect::<Vec<_>>(), name, notes),
        started_s: all().map(|a| a.started_s).fold(f64::INFINITY, f64::min),
        requests: all().map(|a| a.requests).sum(),
        success: all().map(|a| a.success).sum(),
        error_count: all().map(|a| a.error_count).sum(),
        errors: add_counts(all().map(|a| &a.errors)),
        error_examples: examples(all().map(|a| &a.error_examples)),
        reconnects: all().map(|a| a.reconnects).sum(),
        e2e_ms: figures.latency_ms,
        ttft_ms: figures.ttft_ms,
        itl_token_ms: figures.itl_token_ms,
        tpot_ms: figures.tpot_ms,
        output_tokens,
        output_tps: if makespan_s > 0.0 { output_tokens as f64 / makespan_s } else { 0.0 },
        makespan_s,
        target_lost: target_lost(all().map(|a| a.target_lost.as_slice())),
        request_samples: records(all().map(|a| (a.request_samples.as_slice(), a.requests as u32))),
        goodput,
        prefix_cache: base.prefix_cache,
        shard_dists: None,
    }
}
