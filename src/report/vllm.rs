//! A `vllm bench serve`-shaped export of a session report (docs/reports.md §5): one JSON object
//! per decode cell, burst cell, routing phase and serve cell (`vllm_serve.rs`), with vLLM's result field names
//! (`completed`, `request_throughput`, `mean_ttft_ms`, `p99_itl_ms`, ...) beside our own key
//! (`kind`, `ctx`, `conc` or `phase`), so the figures can be laid beside vLLM's. A figure the
//! report cannot give is `null` (vLLM writes 0 where it has no samples).

use super::dist::{self, Dist};
use super::json::{BurstAttempt, DecodeAttempt, DecodeCell, SessionReport};
use super::phase::RoutingPhase;
use super::status::CellOutcome;
use crate::load::sample::RecordedOutcome;
use crate::stats::PercentileList;
use crate::stats::percentile_list::percentile_key;
use serde_json::{Map, Value, json};

/// The export: an array with one object per measured or errored decode cell (its last
/// attempt), burst cell, and routing phase of `report.phases`, in that order. Each latency
/// (`ttft`, `tpot`, `itl`, `e2el`) gets `mean_*_ms`, `median_*_ms`, `std_*_ms` and one
/// `p<q>_*_ms` per entry of `percentiles`, named as vLLM names them (`p99.9_ttft_ms`).
pub(crate) fn export(report: &SessionReport, percentiles: &PercentileList) -> Value {
    let mut rows = Vec::new();
    if let Some(decode) = &report.decode {
        for cell in &decode.cells {
            if let Some(a) = result_attempt(cell.status, cell.attempts.last()) {
                rows.push(decode_row(report, cell, a, percentiles));
            }
        }
    }
    if let Some(burst) = &report.burst {
        for cell in &burst.cells {
            if let Some(a) = result_attempt(cell.status, cell.attempts.last()) {
                let key =
                    CellKey { kind: "burst", ctx: cell.ctx, ctx_label: &cell.ctx_label, conc: cell.conc, rate: None };
                rows.push(burst_row(report, &key, a, percentiles));
            }
        }
    }
    rows.extend(report.phases.iter().map(|p| phase_row(report, p, percentiles)));
    rows.extend(super::vllm_serve::rows(report, percentiles));
    Value::Array(rows)
}

/// The attempt a cell's figures come from: its last one, when the cell has an outcome
/// (measured or errored).
pub(crate) fn result_attempt<T>(status: CellOutcome, last: Option<&T>) -> Option<&T> {
    matches!(status, CellOutcome::Measured | CellOutcome::Errored).then_some(last).flatten()
}

struct CellKey<'a> {
    kind: &'static str,
    ctx: u64,
    ctx_label: &'a str,
    conc: u32,
    /// Open-loop decode cells: the arrival rate (`conc` is then the in-flight cap).
    rate: Option<crate::load::rate::Rate>,
}

/// The throughput part of a row, vLLM's definitions over our counts.
struct Counts {
    duration: f64,
    completed: u64,
    failed: u64,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    output_throughput: f64,
    good: Option<u64>,
}

/// The four latency distributions of a row, ms.
struct Latencies {
    ttft: Dist,
    tpot: Dist,
    itl: Dist,
    e2el: Dist,
}

fn decode_row(report: &SessionReport, cell: &DecodeCell, a: &DecodeAttempt, pcts: &PercentileList) -> Value {
    let completed = dist::request_count(a, Some(RecordedOutcome::Completed));
    let counts = Counts {
        duration: a.window_s,
        completed,
        failed: a.error_count,
        input_tokens: prompt_tokens(report, cell.ctx).map(|p| p * completed),
        output_tokens: Some(a.window_tokens),
        output_throughput: a.aggregate_tps,
        // Requests of the window that met the session's SLO (docs/reports.md §6).
        good: a.goodput.map(|g| g.good),
    };
    let r = &a.request_samples;
    let lat = Latencies {
        ttft: Dist::samples_or(dist::ttft_values(r), a.ttft_ms.as_ref()),
        tpot: Dist::samples_or(dist::tpot_values(r), a.tpot_ms.as_ref()),
        itl: Dist::summary(a.itl_chunk_ms.as_ref().or(a.itl_token_ms.as_ref())),
        e2el: Dist::samples_or(dist::e2e_values(r), a.latency_ms.as_ref()),
    };
    let key = CellKey { kind: "decode", ctx: cell.ctx, ctx_label: &cell.ctx_label, conc: cell.conc, rate: cell.rate };
    let mut row = cell_head(report, &key, a.attempt, a.status.as_str());
    row.insert("num_prompts".into(), Value::Null);
    fill(&mut row, &counts, &lat, pcts);
    Value::Object(row)
}

fn burst_row(report: &SessionReport, key: &CellKey, a: &BurstAttempt, pcts: &PercentileList) -> Value {
    let counts = Counts {
        duration: a.makespan_s,
        completed: a.success,
        failed: a.error_count,
        input_tokens: prompt_tokens(report, key.ctx).map(|p| p * a.success),
        output_tokens: Some(a.output_tokens),
        output_throughput: a.output_tps,
        good: None,
    };
    let r = &a.request_samples;
    let lat = Latencies {
        ttft: Dist::samples_or(dist::ttft_values(r), a.ttft_ms.as_ref()),
        tpot: Dist::samples_or(dist::tpot_values(r), a.tpot_ms.as_ref()),
        itl: Dist::summary(a.itl_token_ms.as_ref()),
        e2el: Dist::samples_or(dist::e2e_values(r), a.e2e_ms.as_ref()),
    };
    let mut row = cell_head(report, key, a.attempt, a.status.as_str());
    row.insert("num_prompts".into(), json!(a.requests));
    fill(&mut row, &counts, &lat, pcts);
    Value::Object(row)
}

fn phase_row(report: &SessionReport, p: &RoutingPhase, pcts: &PercentileList) -> Value {
    let counts = Counts {
        duration: p.elapsed,
        completed: p.success,
        failed: p.errors,
        input_tokens: None,
        output_tokens: Some((p.output_tokens_per_second * p.elapsed).round() as u64),
        output_throughput: p.output_tokens_per_second,
        good: Some(p.good),
    };
    let lat = Latencies {
        ttft: Dist::phase(&p.ttft),
        tpot: Dist::phase(&p.tpot),
        itl: Dist::phase(&p.itl),
        e2el: Dist::phase(&p.e2e),
    };
    let mut row = Map::new();
    row.insert("label".into(), json!(format!("routing {}", p.phase)));
    row.insert("kind".into(), json!("routing"));
    row.insert("phase".into(), json!(p.phase));
    row.insert("status".into(), json!(p.status.as_str()));
    row.insert("model_id".into(), json!(report.model));
    row.insert("num_prompts".into(), json!(p.planned));
    row.insert("request_rate".into(), json!(p.config.rps));
    row.insert("max_concurrency".into(), Value::Null);
    fill(&mut row, &counts, &lat, pcts);
    Value::Object(row)
}

/// Label, our key and the traffic fields of a decode or burst row: a closed loop of `conc`
/// streams (decode) or `conc` requests sent at once (burst) is vLLM's `--max-concurrency` with
/// `--request-rate inf`; an open-loop decode cell has its rate.
fn cell_head(report: &SessionReport, key: &CellKey, attempt: u32, status: &str) -> Map<String, Value> {
    let mut row = Map::new();
    let mut label = format!("{} ctx={} conc={}", key.kind, key.ctx_label, key.conc);
    if let Some(rate) = key.rate {
        label.push_str(&format!(" rate={rate}"));
    }
    row.insert("label".into(), json!(label));
    row.insert("kind".into(), json!(key.kind));
    row.insert("ctx".into(), json!(key.ctx));
    row.insert("ctx_label".into(), json!(key.ctx_label));
    row.insert("conc".into(), json!(key.conc));
    row.insert("attempt".into(), json!(attempt));
    row.insert("status".into(), json!(status));
    row.insert("model_id".into(), json!(report.model));
    let rate = key.rate.filter(|r| r.is_finite()).map_or(json!("inf"), |r| json!(r.per_second()));
    row.insert("request_rate".into(), rate);
    row.insert("max_concurrency".into(), json!(key.conc));
    row
}

/// Prompt tokens the server counts for a context size (the calibration's), when calibrated.
fn prompt_tokens(report: &SessionReport, ctx: u64) -> Option<u64> {
    report.calibration.iter().find(|c| c.ctx == ctx).map(|c| c.prompt_tokens)
}

fn per_s(n: Option<u64>, duration: f64) -> Value {
    match n {
        Some(n) if duration > 0.0 => json!(n as f64 / duration),
        _ => Value::Null,
    }
}

fn fill(row: &mut Map<String, Value>, c: &Counts, lat: &Latencies, pcts: &PercentileList) {
    let total = c.input_tokens.zip(c.output_tokens).map(|(i, o)| i + o);
    row.insert("duration".into(), json!(c.duration));
    row.insert("completed".into(), json!(c.completed));
    row.insert("failed".into(), json!(c.failed));
    row.insert("total_input_tokens".into(), json!(c.input_tokens));
    row.insert("total_output_tokens".into(), json!(c.output_tokens));
    row.insert("request_throughput".into(), per_s(Some(c.completed), c.duration));
    row.insert("request_goodput".into(), per_s(c.good, c.duration));
    row.insert("output_throughput".into(), json!(c.output_throughput));
    row.insert("total_token_throughput".into(), per_s(total, c.duration));
    let mut sources = Map::new();
    for (name, d) in [("ttft", &lat.ttft), ("tpot", &lat.tpot), ("itl", &lat.itl), ("e2el", &lat.e2el)] {
        row.insert(format!("mean_{name}_ms"), json!(d.mean()));
        row.insert(format!("median_{name}_ms"), json!(d.percentile(50.0)));
        row.insert(format!("std_{name}_ms"), json!(d.std_dev()));
        for &q in pcts.values() {
            row.insert(format!("{}_{name}_ms", percentile_key(q)), json!(d.percentile(q)));
        }
        sources.insert(name.into(), json!(d.source().as_str()));
    }
    row.insert("sources".into(), Value::Object(sources));
}

#[cfg(test)]
#[path = "vllm_tests.rs"]
mod tests;
