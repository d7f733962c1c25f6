//! The serve section of a merged report (docs/reports.md §9): cells matched by input length,
//! concurrency cap and rate, attempts by number. Counts and token totals add, throughputs add
//! (each shard's over its own duration), TTFT, TPOT and E2EL come from every shard's request
//! records together (a serve attempt keeps all of them) and ITL from the shards' chunk gaps
//! (`ServeAttempt.shard_gaps`), both through `experiment::serve::metrics::serve_metrics`.

use super::attempt::{add_counts, examples, least_finished, records};
use super::decode::cell_verdict;
use crate::cell::spec::CellSpec;
use crate::experiment::serve::knee::serve_knees;
use crate::experiment::serve::metrics::{RequestFigures, ServeGaps, serve_metrics};
use crate::load::sample::RecordedOutcome;
use crate::report::json::{RequestRecord, SessionReport};
use crate::report::kind::ExperimentKind;
use crate::report::serve::{ServeAttempt, ServeCellReport, ServeMetrics, ServeSection};
use crate::report::shard_dists::merge_gaps;

/// The serve section merged over `parts` (shard index, report; the base shard first); None
/// when no shard has one.
pub(super) fn merge(parts: &[(u32, &SessionReport)], notes: &mut Vec<String>) -> Option<ServeSection> {
    let sections: Vec<(u32, &ServeSection)> =
        parts.iter().filter_map(|(i, r)| r.serve.as_ref().map(|s| (*i, s))).collect();
    let (_, base) = *sections.first()?;
    let mut cells = Vec::with_capacity(base.cells.len());
    for cell in &base.cells {
        let same: Vec<(u32, &ServeCellReport)> =
            sections.iter().filter_map(|(i, s)| s.cells.iter().find(|c| same_cell(c, cell)).map(|c| (*i, c))).collect();
        cells.push(merge_cell(&same, sections.len(), notes));
    }
    let specs: Vec<CellSpec> = cells
        .iter()
        .map(|c| CellSpec::grid_at(ExperimentKind::Serve, c.input_len, c.max_concurrency, c.request_rate.parse().ok()))
        .collect();
    let shown = cells.iter().zip(&specs).enumerate().map(|(i, (c, s))| (i, s, c.attempts.last(), None));
    let knees = serve_knees(shown).into_iter().map(|k| k.row).collect();
    Some(ServeSection { cells, knees, ..base.clone() })
}

fn same_cell(a: &ServeCellReport, b: &ServeCellReport) -> bool {
    (a.input_len, a.max_concurrency, &a.request_rate) == (b.input_len, b.max_concurrency, &b.request_rate)
}

/// One serve cell over its shards, as `decode::merge_cell` merges a decode cell.
fn merge_cell(cells: &[(u32, &ServeCellReport)], shards: usize, notes: &mut Vec<String>) -> ServeCellReport {
    let base = cells[0].1;
    let name = format!("serve ctx={} conc={} rate={}", base.ctx_label, base.max_concurrency, base.request_rate);
    let attempts = super::by_attempt_number(cells, |c| c.attempts.as_slice(), |a: &ServeAttempt| a.attempt)
        .into_iter()
        .map(|(n, parts)| {
            let name = format!("{name} attempt {n}");
            if parts.len() < shards {
                let made: Vec<String> = parts.iter().map(|(i, _)| i.to_string()).collect();
                notes.push(format!(
                    "{name}: only shard {} of {shards} made it; its figures are theirs",
                    made.join(", ")
                ));
            }
            merge_attempt(&parts, &name, notes)
        })
        .collect();
    let read =
        |c: &ServeCellReport| (c.status, c.timeout_reason.clone(), c.skip, c.runs.is_some() || !c.baseline.is_empty());
    let (status, timeout_reason, skip) = cell_verdict(cells, read, &name, notes);
    ServeCellReport { status, timeout_reason, skip, attempts, baseline: Vec::new(), runs: None, ..base.clone() }
}

/// One serve attempt over the shards that made it.
fn merge_attempt(parts: &[(u32, &ServeAttempt)], name: &str, notes: &mut Vec<String>) -> ServeAttempt {
    let base = parts[0].1;
    let all = || parts.iter().map(|(_, a)| *a);
    let records = records(all().map(|a| (a.request_samples.as_slice(), 0)));
    let metrics = metrics(parts, &records, name, notes);
    let server_tokens = base.server_tokens.clone().map(|mut c| {
        c.client_output_tokens = metrics.total_output_tokens;
        c.equal = (c.server_output_tokens - c.client_output_tokens as f64).abs() < 0.5;
        c
    });
    if all().any(|a| a.schedule_lag.is_some()) {
        notes.push(format!("{name}: schedule lag is each shard's own (its slots and clock) and left out"));
    }
    let statuses: Vec<_> = parts.iter().map(|(i, a)| (*i, a.status)).collect();
    ServeAttempt {
        attempt: base.attempt,
        status: least_finished(&statuses, name, notes),
        started_s: all().map(|a| a.started_s).fold(f64::INFINITY, f64::min),
        // Each shard planned its slice of the schedule: the cell planned their sum.
        num_prompts: all().map(|a| a.num_prompts).sum(),
        errors: add_counts(all().map(|a| &a.errors)),
        error_examples: examples(all().map(|a| &a.error_examples)),
        reconnects: all().map(|a| a.reconnects).sum(),
        metrics,
        request_samples: records,
        server_tokens,
        prefix_cache: base.prefix_cache,
        schedule_lag: None,
        shard_gaps: None,
    }
}

/// vLLM's figures of the merged attempt: counts and token totals added, throughputs and
/// goodput the shards' added, `duration_s` the longest shard's; latencies from all records,
/// ITL from the merged gaps (left out, with a note, when they cannot be recomputed).
fn metrics(
    parts: &[(u32, &ServeAttempt)],
    records: &[RequestRecord],
    name: &str,
    notes: &mut Vec<String>,
) -> ServeMetrics {
    let all = || parts.iter().map(|(_, a)| &a.metrics);
    let figures: Vec<RequestFigures> = records.iter().map(figures_of).collect();
    let gaps = merged_gaps(parts);
    let duration_s = all().map(|m| m.duration_s).fold(0.0, f64::max);
    let mut m = serve_metrics(&figures, &gaps.clone().unwrap_or_default(), duration_s, None);
    let completed: u64 = all().map(|m| m.completed).sum();
    if m.completed != completed {
        notes.push(format!(
            "{name}: TTFT, TPOT and E2EL left out: the records hold {} completed requests, the shards counted {completed}",
            m.completed
        ));
        clear_latency(&mut m);
    }
    if gaps.is_none() {
        notes.push(format!("{name}: ITL left out: a shard wrote no chunk gaps (`shard_gaps`)"));
        clear_itl(&mut m);
    }
    m.completed = completed;
    m.failed = all().map(|m| m.failed).sum();
    m.total_input_tokens = all().map(|m| m.total_input_tokens).sum();
    m.total_output_tokens = all().map(|m| m.total_output_tokens).sum();
    m.request_throughput = super::attempt::added(all().map(|m| m.request_throughput));
    m.output_throughput = super::attempt::added(all().map(|m| m.output_throughput));
    m.total_token_throughput = super::attempt::added(all().map(|m| m.total_token_throughput));
    m.request_goodput = all().map(|m| m.request_goodput).sum::<Option<f64>>().map(super::attempt::tidy);
    m
}

/// What a record says of its request, as `serve_metrics` reads it (its prompt length is not
/// used: the token totals are the shards').
pub(super) fn figures_of(r: &RequestRecord) -> RequestFigures {
    RequestFigures {
        completed: r.outcome == RecordedOutcome::Completed,
        input_tokens: r.input_tokens.unwrap_or(0),
        output_tokens: r.output_tokens,
        ttft_ms: r.ttft_ms,
        e2el_ms: r.e2e_ms,
    }
}

/// Every shard's chunk gaps merged; None when a shard has none or they do not restore.
fn merged_gaps(parts: &[(u32, &ServeAttempt)]) -> Option<ServeGaps> {
    let saved: Vec<_> = parts.iter().map(|(_, a)| a.shard_gaps.as_ref()).collect::<Option<_>>()?;
    let chunk_ms = merge_gaps(saved.iter().map(|g| &g.chunk_ms))?;
    let token_ms = merge_gaps(saved.iter().map(|g| &g.token_ms))?;
    Some(ServeGaps { chunk_ms, token_ms })
}

fn clear_latency(m: &mut ServeMetrics) {
    (m.mean_ttft_ms, m.median_ttft_ms, m.std_ttft_ms, m.p99_ttft_ms) = (None, None, None, None);
    (m.mean_tpot_ms, m.median_tpot_ms, m.std_tpot_ms, m.p99_tpot_ms) = (None, None, None, None);
    (m.mean_e2el_ms, m.median_e2el_ms, m.std_e2el_ms, m.p99_e2el_ms) = (None, None, None, None);
}

fn clear_itl(m: &mut ServeMetrics) {
    (m.mean_itl_ms, m.median_itl_ms, m.std_itl_ms, m.p99_itl_ms) = (None, None, None, None);
    (m.mean_itl_token_ms, m.median_itl_token_ms, m.std_itl_token_ms, m.p99_itl_token_ms) = (None, None, None, None);
}
