//! The `csv` report format: one row per decode cell, burst cell, routing phase and serve cell
//! ([`CELL_COLUMNS`]), or with `--per-request` one row per request of every decode, burst and
//! serve attempt ([`REQUEST_COLUMNS`]). Fields are quoted per RFC 4180 (a field holding a comma, a
//! quote or a line break is quoted, its quotes doubled; lines end in CRLF); an absent value is
//! an empty field. Units are in the column names; routing phases, which the report keeps in
//! seconds (docs/reports.md §3), are converted to the `_ms` columns here.
//!
//! A row's figures are those of its last attempt when that attempt was measured or errored
//! (the attempt the tables show); for a cell or phase still pending, stopped or paused they
//! are empty and `last_attempt_status` says why. `itl_*` is per stream for decode cells, per
//! token for bursts, routing phases and serve cells. Serve cells have vLLM's median (in the
//! `_p50_` columns) and p99 only, and `requests` is the attempt's planned `num_prompts`.
//! An extension's cells (the conversation experiment's) carry their own figures in `figures`
//! (`name=value;...`) and their breakdown tables in `tables` (`turns.2.ttft_p50_ms=45.2;...`).
//! With repetitions (`run --num-runs`) a row's figures are the mean of its cell's runs, and two
//! more columns follow, only then: `runs` (measured/planned) and `runs_figures`
//! (`aggregate_tok_s.mean=...;aggregate_tok_s.sd=...;...`, `report::runs::render::csv_fields`).

use super::json::{BurstAttempt, BurstCellReport, DecodeAttempt, DecodeCell, RequestRecord, SessionReport};
use super::kind::ExperimentKind;
use super::phase::PhaseLatency;
use super::status::{AttemptStatus, CellOutcome};
use crate::stats::Summary;

/// Routing, serve and extension rows (a child module: it shares this one's private helpers).
#[path = "csv_rows.rs"]
mod rows;
use rows::{extension_row, routing_rows, serve_row};

/// The columns of the per-cell CSV, in order.
pub const CELL_COLUMNS: [&str; 49] = [
    "kind",
    "label",
    "ctx",
    "ctx_label",
    "conc",
    "scenario",
    "route",
    "round",
    "status",
    "attempts",
    "last_attempt_status",
    "requests",
    "success",
    "errors",
    "good",
    "duration_s",
    "output_tokens",
    "aggregate_tps",
    "per_request_tps",
    "output_tps",
    "running_avg",
    "capacity_limited",
    "capacity_limit",
    "warmup_timed_out",
    "ttft_p50_ms",
    "ttft_p90_ms",
    "ttft_p95_ms",
    "ttft_p99_ms",
    "itl_p50_ms",
    "itl_p90_ms",
    "itl_p95_ms",
    "itl_p99_ms",
    "tpot_p50_ms",
    "tpot_p90_ms",
    "tpot_p95_ms",
    "tpot_p99_ms",
    "e2e_p50_ms",
    "e2e_p90_ms",
    "e2e_p95_ms",
    "e2e_p99_ms",
    "cache_hit_ratio",
    "warm_cache",
    "schedule_lag_p99_ms",
    "sent_late_behind",
    "judged",
    "goodput_rps",
    "rate",
    "figures",
    "tables",
];

/// The columns of the per-request CSV, in order.
pub const REQUEST_COLUMNS: [&str; 19] = [
    "kind",
    "label",
    "ctx",
    "conc",
    "attempt",
    "attempt_status",
    "worker",
    "sent_ms",
    "ttft_ms",
    "e2e_ms",
    "itl_ms",
    "output_tokens",
    "window_tokens",
    "outcome",
    "http_status",
    "served_by",
    "good",
    "schedule_lag_ms",
    "rate",
];

/// One row: values by column name (columns it does not name are empty).
type Row = Vec<(&'static str, String)>;

/// One row per decode cell, burst cell, routing phase and serve cell, after a header line.
pub fn render(report: &SessionReport) -> String {
    let mut rows: Vec<Row> = Vec::new();
    for kind in ExperimentKind::BUILT_IN {
        match kind {
            ExperimentKind::Decode => rows.extend(report.decode.iter().flat_map(|d| d.cells.iter().map(decode_row))),
            ExperimentKind::Burst => rows.extend(report.burst.iter().flat_map(|b| b.cells.iter().map(burst_row))),
            ExperimentKind::Routing => rows.extend(routing_rows(report)),
            ExperimentKind::Serve => rows.extend(report.serve.iter().flat_map(|s| s.cells.iter().map(serve_row))),
            ExperimentKind::Extension(_) => {}
        }
    }
    for section in &report.extensions {
        rows.extend(section.cells.iter().map(|c| extension_row(&section.kind, c)));
    }
    if !super::runs::any(report) {
        return table(&CELL_COLUMNS, &rows);
    }
    let columns: Vec<&str> = CELL_COLUMNS.iter().chain(&super::runs::render::CSV_COLUMNS).copied().collect();
    table(&columns, &rows)
}

/// One row per request of every decode, burst and serve attempt, after a header line.
/// Routing phases keep no per-request records in the report, so they have no rows here.
pub fn render_requests(report: &SessionReport) -> String {
    let groups = ExperimentKind::BUILT_IN.into_iter().flat_map(|kind| request_groups(report, kind));
    let rows: Vec<Row> = groups.flat_map(|(head, rs)| rs.iter().map(move |r| request_row(head.clone(), r))).collect();
    table(&REQUEST_COLUMNS, &rows)
}

/// The attempts of experiment `kind` in `report`: each one's leading columns and its requests.
fn request_groups(report: &SessionReport, kind: ExperimentKind) -> Vec<(Row, &[RequestRecord])> {
    let head = |label: &str, ctx, conc, rate: Option<String>, a: (u32, AttemptStatus)| {
        let mut row = request_head(kind, label, ctx, conc, a.0, a.1);
        if let Some(rate) = rate {
            with_rate(&mut row, rate);
        }
        row
    };
    match kind {
        ExperimentKind::Decode => (report.decode.iter().flat_map(|d| &d.cells))
            .flat_map(|c| c.attempts.iter().map(move |a| (c, a)))
            .map(|(c, a)| {
                (
                    head(&c.ctx_label, c.ctx, c.conc, c.rate.map(|r| r.to_string()), (a.attempt, a.status)),
                    &a.request_samples[..],
                )
            })
            .collect(),
        ExperimentKind::Burst => (report.burst.iter().flat_map(|b| &b.cells))
            .flat_map(|c| c.attempts.iter().map(move |a| (c, a)))
            .map(|(c, a)| (head(&c.ctx_label, c.ctx, c.conc, None, (a.attempt, a.status)), &a.request_samples[..]))
            .collect(),
        // Neither routing phases nor extension attempts keep per-request records.
        ExperimentKind::Routing | ExperimentKind::Extension(_) => Vec::new(),
        ExperimentKind::Serve => (report.serve.iter().flat_map(|s| &s.cells))
            .flat_map(|c| c.attempts.iter().map(move |a| (c, a)))
            .map(|(c, a)| {
                let rate = Some(c.request_rate.clone());
                (
                    head(&c.ctx_label, c.input_len, c.max_concurrency, rate, (a.attempt, a.status)),
                    &a.request_samples[..],
                )
            })
            .collect(),
    }
}

/// The header line, then each row in `columns` order; every line ends in CRLF.
fn table(columns: &[&str], rows: &[Row]) -> String {
    let mut out = line(columns.iter().map(|c| c.to_string()));
    for row in rows {
        let value = |col: &&str| row.iter().find(|(k, _)| k == col).map(|(_, v)| v.clone()).unwrap_or_default();
        out.push_str(&line(columns.iter().map(value)));
    }
    out
}

/// Fields joined by commas, each quoted when it needs to be, and CRLF.
fn line(fields: impl Iterator<Item = String>) -> String {
    let mut out = fields.map(|f| quote(&f)).collect::<Vec<_>>().join(",");
    out.push_str("\r\n");
    out
}

/// RFC 4180 quoting: a field holding `,`, `"`, CR or LF goes in quotes, its quotes doubled.
pub fn quote(field: &str) -> String {
    match field.contains([',', '"', '\r', '\n']) {
        true => format!("\"{}\"", field.replace('"', "\"\"")),
        false => field.to_string(),
    }
}

/// A number as Rust writes it (shortest exact form); empty when not finite.
/// A number at 12 significant digits, written shortest (`1.319`, never `1.3190000000000002`:
/// float noise past the 12th digit is no measurement); empty when not finite.
fn num(x: f64) -> String {
    match x.is_finite() {
        true => format!("{x:.11e}").parse::<f64>().map_or_else(|_| x.to_string(), |r| r.to_string()),
        false => String::new(),
    }
}

/// An optional number; empty when absent.
fn opt(x: Option<f64>) -> String {
    x.map_or(String::new(), num)
}

/// Seconds as milliseconds, rounded to the microsecond (so `0.07 s` is `70`, not `70.00000000000001`).
fn ms(seconds: Option<f64>) -> String {
    opt(seconds.map(|s| (s * 1e6).round() / 1e3))
}

/// The p50, p90, p95 and p99 columns of one distribution.
type Percentiles = [&'static str; 4];
const TTFT: Percentiles = ["ttft_p50_ms", "ttft_p90_ms", "ttft_p95_ms", "ttft_p99_ms"];
const ITL: Percentiles = ["itl_p50_ms", "itl_p90_ms", "itl_p95_ms", "itl_p99_ms"];
const TPOT: Percentiles = ["tpot_p50_ms", "tpot_p90_ms", "tpot_p95_ms", "tpot_p99_ms"];
const E2E: Percentiles = ["e2e_p50_ms", "e2e_p90_ms", "e2e_p95_ms", "e2e_p99_ms"];

/// The percentile columns of a summary in ms.
fn summary(row: &mut Row, [p50, p90, p95, p99]: Percentiles, s: Option<&Summary>) {
    row.extend([
        (p50, opt(s.map(|s| s.p50))),
        (p90, opt(s.map(|s| s.p90))),
        (p95, opt(s.map(|s| s.p95))),
        (p99, opt(s.map(|s| s.p99))),
    ]);
}

/// The same for a routing phase's latency in seconds (which has no p90).
fn latency(row: &mut Row, [p50, _, p95, p99]: Percentiles, l: &PhaseLatency) {
    row.extend([(p50, ms(l.p50)), (p95, ms(l.p95)), (p99, ms(l.p99))]);
}

/// Whether an attempt's figures are shown: it was measured or errored.
fn shown(status: AttemptStatus) -> bool {
    matches!(status, AttemptStatus::Measured | AttemptStatus::Errored)
}

/// The columns every decode or burst cell row starts with.
fn grid_head(kind: ExperimentKind, ctx: u64, label: &str, conc: u32, status: CellOutcome, attempts: usize) -> Row {
    vec![
        ("kind", kind.to_string()),
        ("label", format!("ctx={label} conc={conc}")),
        ("ctx", ctx.to_string()),
        ("ctx_label", label.to_string()),
        ("conc", conc.to_string()),
        ("status", status.to_string()),
        ("attempts", attempts.to_string()),
    ]
}

/// The `rate` column of an open-loop cell, and `rate=R` in its label: the rate tells apart the
/// cells (and their requests) of one ctx x conc.
fn with_rate(row: &mut Row, rate: String) {
    if let Some((_, label)) = row.iter_mut().find(|(k, _)| *k == "label") {
        label.push_str(&format!(" rate={rate}"));
    }
    row.push(("rate", rate));
}

fn decode_row(cell: &DecodeCell) -> Row {
    let mut row =
        grid_head(ExperimentKind::Decode, cell.ctx, &cell.ctx_label, cell.conc, cell.status, cell.attempts.len());
    if let Some(rate) = cell.rate {
        with_rate(&mut row, rate.to_string());
    }
    let Some(a) = cell.attempts.last() else { return row };
    row.push(("last_attempt_status", a.status.to_string()));
    if shown(a.status) {
        let mean = super::runs::shown(&cell.attempts, cell.runs.as_ref());
        decode_figures(&mut row, mean.as_deref().unwrap_or(a));
    }
    row.extend(super::runs::render::csv_fields(cell.runs.as_ref()));
    row
}

fn decode_figures(row: &mut Row, a: &DecodeAttempt) {
    let by_kind = a.errors.values().fold(0_u64, |sum, n| sum.saturating_add(*n));
    row.extend([
        ("requests", super::dist::request_count(a, None).to_string()),
        ("errors", a.error_count.max(by_kind).to_string()),
        ("duration_s", num(a.window_s)),
        ("output_tokens", a.window_tokens.to_string()),
        ("aggregate_tps", num(a.aggregate_tps)),
        ("per_request_tps", num(a.per_request_tps)),
        ("running_avg", opt(a.running_avg)),
        ("capacity_limited", a.capacity_limited.to_string()),
        ("capacity_limit", a.capacity_limit.map_or("", |c| c.as_str()).to_string()),
        ("warmup_timed_out", a.warmup_timed_out.to_string()),
    ]);
    summary(row, TTFT, a.ttft_ms.as_ref());
    summary(row, ITL, a.itl_ms.as_ref());
    summary(row, TPOT, a.tpot_ms.as_ref());
    summary(row, E2E, a.latency_ms.as_ref());
    goodput(row, a.goodput.as_ref());
    rows::prefix_cache(row, a.prefix_cache.as_ref());
}

/// `good`, `judged` and `goodput_rps` of a decode or burst attempt (docs/reports.md §6).
fn goodput(row: &mut Row, g: Option<&super::goodput::Goodput>) {
    if let Some(g) = g {
        row.extend([("good", g.good.to_string()), ("judged", g.judged.to_string()), ("goodput_rps", num(g.rps))]);
    }
}

fn burst_row(cell: &BurstCellReport) -> Row {
    let mut row =
        grid_head(ExperimentKind::Burst, cell.ctx, &cell.ctx_label, cell.conc, cell.status, cell.attempts.len());
    let Some(a) = cell.attempts.last() else { return row };
    row.push(("last_attempt_status", a.status.to_string()));
    if shown(a.status) {
        let mean = super::runs::shown(&cell.attempts, cell.runs.as_ref());
        burst_figures(&mut row, mean.as_deref().unwrap_or(a));
    }
    row.extend(super::runs::render::csv_fields(cell.runs.as_ref()));
    row
}

fn burst_figures(row: &mut Row, a: &BurstAttempt) {
    row.extend([
        ("requests", a.requests.to_string()),
        ("success", a.success.to_string()),
        ("errors", a.error_count.to_string()),
        ("duration_s", num(a.makespan_s)),
        ("output_tokens", a.output_tokens.to_string()),
        ("output_tps", num(a.output_tps)),
    ]);
    summary(row, TTFT, a.ttft_ms.as_ref());
    summary(row, ITL, a.itl_token_ms.as_ref());
    summary(row, TPOT, a.tpot_ms.as_ref());
    summary(row, E2E, a.e2e_ms.as_ref());
    goodput(row, a.goodput.as_ref());
    rows::prefix_cache(row, a.prefix_cache.as_ref());
}

/// The columns every per-request row of one attempt starts with.
fn request_head(kind: ExperimentKind, label: &str, ctx: u64, conc: u32, attempt: u32, status: AttemptStatus) -> Row {
    vec![
        ("kind", kind.to_string()),
        ("label", format!("ctx={label} conc={conc}")),
        ("ctx", ctx.to_string()),
        ("conc", conc.to_string()),
        ("attempt", attempt.to_string()),
        ("attempt_status", status.to_string()),
    ]
}

fn request_row(mut row: Row, r: &RequestRecord) -> Row {
    row.extend([
        ("worker", r.worker.to_string()),
        ("sent_ms", num(r.sent_ms)),
        ("ttft_ms", opt(r.ttft_ms)),
        ("e2e_ms", num(r.e2e_ms)),
        ("itl_ms", opt(r.itl_ms)),
        ("output_tokens", r.output_tokens.to_string()),
        ("window_tokens", r.window_tokens.to_string()),
        ("outcome", r.outcome.as_str().to_string()),
        ("http_status", r.status.map_or(String::new(), |s| s.to_string())),
        ("served_by", r.served_by.clone().unwrap_or_default()),
        ("good", r.good.map(|g| g.to_string()).unwrap_or_default()),
        ("schedule_lag_ms", r.schedule_lag_ms.map(num).unwrap_or_default()),
    ]);
    row
}

#[cfg(test)]
#[path = "csv_tests.rs"]
mod tests;
