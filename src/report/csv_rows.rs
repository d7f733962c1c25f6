//! The CSV rows of routing phases, serve cells and extension cells (`report::extension`): an
//! extension's own figures go in one `figures` field, `name=value` pairs joined by `;` in its
//! order. A decode, serve or routing row's `cache_hit_ratio` and `warm_cache` are its prefix-cache
//! check's (`report::prefix_cache`).

use super::{E2E, ITL, Percentiles, Row, TPOT, TTFT, grid_head, latency, num, opt, shown, with_rate};
use crate::report::extension::{ExtensionAttempt, ExtensionCell};
use crate::report::json::SessionReport;
use crate::report::kind::ExperimentKind;
use crate::report::phase::RoutingPhase;
use crate::report::prefix_cache::PrefixCacheCheck;
use crate::report::serve::{ServeCellReport, ServeMetrics};

pub(super) fn serve_row(cell: &ServeCellReport) -> Row {
    let (ctx, conc) = (cell.input_len, cell.max_concurrency);
    let mut row = grid_head(ExperimentKind::Serve, ctx, &cell.ctx_label, conc, cell.status, cell.attempts.len());
    with_rate(&mut row, cell.request_rate.clone());
    let Some(last) = cell.attempts.last() else { return row };
    row.push(("last_attempt_status", last.status.to_string()));
    row.extend(crate::report::runs::render::csv_fields(cell.runs.as_ref()));
    if shown(last.status) {
        let mean = crate::report::runs::shown(&cell.attempts, cell.runs.as_ref());
        let a = mean.as_deref().unwrap_or(last);
        serve_figures(&mut row, &a.metrics, a.num_prompts);
        prefix_cache(&mut row, a.prefix_cache.as_ref());
        if let Some(l) = a.schedule_lag {
            row.extend([("schedule_lag_p99_ms", num(l.p99_ms)), ("sent_late_behind", l.behind.to_string())]);
        }
    }
    row
}

fn serve_figures(row: &mut Row, m: &ServeMetrics, planned: u32) {
    row.extend([
        ("requests", planned.to_string()),
        ("success", m.completed.to_string()),
        ("errors", m.failed.to_string()),
        ("duration_s", num(m.duration_s)),
        ("output_tokens", m.total_output_tokens.to_string()),
        ("output_tps", num(m.output_throughput)),
        ("goodput_rps", opt(m.request_goodput)),
    ]);
    let mut pair = |[p50, _, _, p99]: Percentiles, median: Option<f64>, tail: Option<f64>| {
        row.extend([(p50, opt(median)), (p99, opt(tail))]);
    };
    pair(TTFT, m.median_ttft_ms, m.p99_ttft_ms);
    pair(ITL, m.median_itl_token_ms, m.p99_itl_token_ms);
    pair(TPOT, m.median_tpot_ms, m.p99_tpot_ms);
    pair(E2E, m.median_e2el_ms, m.p99_e2el_ms);
}

/// `cache_hit_ratio` and `warm_cache` of an attempt's prefix-cache check, when it has one.
pub(super) fn prefix_cache(row: &mut Row, p: Option<&PrefixCacheCheck>) {
    if let Some(p) = p {
        row.extend([("cache_hit_ratio", num(p.hit_ratio)), ("warm_cache", p.warm.to_string())]);
    }
}

/// The report's phases, then phases only the history has (stopped or paused ones), each with
/// its number of attempts in the history.
pub(super) fn routing_rows(report: &SessionReport) -> Vec<Row> {
    let attempts = |name: &str| report.phase_history.iter().filter(|p| p.phase == name).count();
    // With repetitions a phase's figures are the mean of its runs.
    let means = crate::report::runs::shown_phases(report);
    let mut phases: Vec<&RoutingPhase> = means.iter().collect();
    for p in report.phase_history.iter().rev() {
        if !phases.iter().any(|q| q.phase == p.phase) {
            phases.push(p);
        }
    }
    phases.iter().map(|p| phase_row(p, attempts(&p.phase).max(1))).collect()
}

fn phase_row(p: &RoutingPhase, attempts: usize) -> Row {
    let mut row = vec![
        ("kind", ExperimentKind::Routing.to_string()),
        ("label", p.phase.clone()),
        ("scenario", p.scenario.clone()),
        ("route", p.route.clone()),
        ("round", p.round().to_string()),
        ("status", p.status.to_string()),
        ("attempts", attempts.to_string()),
        ("last_attempt_status", p.status.to_string()),
    ];
    if shown(p.status) {
        row.extend([
            ("requests", p.requests.to_string()),
            ("success", p.success.to_string()),
            ("errors", p.errors.to_string()),
            ("good", p.good.to_string()),
            ("duration_s", num(p.elapsed)),
            ("output_tps", num(p.output_tokens_per_second)),
            ("cache_hit_ratio", opt(p.cache_hit_ratio)),
        ]);
        if let Some(c) = p.prefix_cache {
            row.push(("warm_cache", c.warm.to_string()));
        }
        latency(&mut row, TTFT, &p.ttft);
        latency(&mut row, ITL, &p.itl);
        latency(&mut row, TPOT, &p.tpot);
        latency(&mut row, E2E, &p.e2e);
    }
    row.extend(crate::report::runs::render::csv_fields(p.runs.as_ref()));
    row
}

/// One extension cell of the section of kind `kind`.
pub(super) fn extension_row(kind: &str, cell: &ExtensionCell) -> Row {
    let mut row = vec![
        ("kind", kind.to_string()),
        ("label", cell.label.clone()),
        ("ctx", cell.ctx.to_string()),
        ("ctx_label", cell.ctx_label.clone()),
        ("conc", cell.conc.to_string()),
        ("status", cell.status.to_string()),
        ("attempts", cell.attempts.len().to_string()),
    ];
    if let Some(rate) = &cell.rate {
        row.push(("rate", rate.clone()));
    }
    let Some(a) = cell.attempts.last() else { return row };
    row.push(("last_attempt_status", a.status.to_string()));
    if shown(a.status) {
        let mean = crate::report::runs::shown(&cell.attempts, cell.runs.as_ref());
        extension_figures(&mut row, mean.as_deref().unwrap_or(a));
    }
    row.extend(crate::report::runs::render::csv_fields(cell.runs.as_ref()));
    row
}

fn extension_figures(row: &mut Row, a: &ExtensionAttempt) {
    let own: Vec<String> = a.figures.iter().map(|f| format!("{}={}", f.name, opt(f.value))).collect();
    row.extend([
        ("requests", a.requests.to_string()),
        ("success", (a.requests.saturating_sub(a.error_count())).to_string()),
        ("errors", a.error_count().to_string()),
        ("duration_s", num(a.duration_s)),
        ("output_tokens", a.output_tokens.to_string()),
        ("output_tps", num(a.output_tps)),
        (TTFT[0], opt(a.ttft_p50_ms)),
        ("figures", own.join(";")),
        ("tables", tables(a)),
    ]);
}

/// An attempt's own breakdown tables as `table.key.column=value` pairs (`turns.2.ttft_p50_ms=45.2`).
fn tables(a: &ExtensionAttempt) -> String {
    let mut out = Vec::new();
    for (name, t) in &a.tables {
        for r in &t.rows {
            for (c, v) in t.columns.iter().zip(&r.values) {
                out.push(format!("{name}.{}.{}={}", r.key, c.name, opt(*v)));
            }
        }
    }
    out.join(";")
}
