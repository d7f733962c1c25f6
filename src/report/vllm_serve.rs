//! The serve rows of the `vllm bench serve`-shaped export (docs/reports.md §5): a serve
//! attempt already holds vLLM's figures under vLLM's names, so its row copies them; a
//! percentile of `--percentiles` other than p99 comes from the attempt's request samples
//! (TTFT, TPOT, e2el) or, for ITL, only the median is known.

use super::dist::{self, Dist};
use super::json::SessionReport;
use super::serve::{ServeAttempt, ServeCellReport, ServeSection};
use super::vllm::result_attempt;
use crate::stats::PercentileList;
use crate::stats::percentile_list::percentile_key;
use serde_json::{Map, Value, json};

/// One row per serve cell with an outcome (its last attempt), in plan order.
pub(crate) fn rows(report: &SessionReport, pcts: &PercentileList) -> Vec<Value> {
    let Some(section) = &report.serve else { return Vec::new() };
    let cells = section.cells.iter();
    cells
        .filter_map(|c| result_attempt(c.status, c.attempts.last()).map(|a| row(report, section, c, a, pcts)))
        .collect()
}

fn row(
    report: &SessionReport,
    s: &ServeSection,
    c: &ServeCellReport,
    a: &ServeAttempt,
    pcts: &PercentileList,
) -> Value {
    let m = &a.metrics;
    let mut row = Map::new();
    let label = format!("serve in={} conc={} rate={}", c.ctx_label, c.max_concurrency, c.request_rate);
    row.insert("label".into(), json!(label));
    row.insert("kind".into(), json!("serve"));
    row.insert("ctx".into(), json!(c.input_len));
    row.insert("ctx_label".into(), json!(c.ctx_label));
    row.insert("conc".into(), json!(c.max_concurrency));
    row.insert("attempt".into(), json!(a.attempt));
    row.insert("status".into(), json!(a.status.as_str()));
    row.insert("model_id".into(), json!(report.model));
    row.insert("num_prompts".into(), json!(a.num_prompts));
    // vLLM writes a finite rate as a number; `inf` stays the string.
    let rate = c
        .request_rate
        .parse::<f64>()
        .ok()
        .filter(|r| r.is_finite())
        .map_or_else(|| json!(c.request_rate), |r| json!(r));
    row.insert("request_rate".into(), rate);
    row.insert("burstiness".into(), json!(s.burstiness));
    row.insert("max_concurrency".into(), json!(c.max_concurrency));
    match (&s.dataset, &s.prefix_repetition, &s.trace) {
        // vLLM's argument names for a file's workload; its lengths are the requests' own.
        (Some(d), _, _) => {
            row.insert("dataset_name".into(), json!(d.name));
            row.insert("dataset_path".into(), json!(d.path));
            // vLLM's name for the tokenizer that sized the requests (its `--tokenizer`).
            if let Some(t) = &d.tokenizer {
                row.insert("tokenizer_id".into(), json!(t.path));
            }
        }
        (None, Some(p), _) => {
            row.insert("dataset_name".into(), json!("prefix_repetition"));
            row.insert("prefix_repetition_prefix_len".into(), json!(p.prefix_len));
            row.insert("prefix_repetition_suffix_len".into(), json!(p.suffix_len));
            row.insert("prefix_repetition_num_prefixes".into(), json!(p.num_prefixes));
            row.insert("prefix_repetition_output_len".into(), json!(p.output_len));
        }
        (None, None, Some(t)) => {
            row.insert("dataset_name".into(), json!(t.name));
            row.insert("dataset_path".into(), json!(t.path));
            row.insert("replay_speed".into(), json!(t.replay_speed));
        }
        (None, None, None) => {
            row.insert("random_input_len".into(), json!(c.input_len));
            row.insert("random_output_len".into(), json!(s.output_len));
            row.insert("random_range_ratio".into(), json!(s.random_range_ratio));
        }
    }
    row.insert("duration".into(), json!(m.duration_s));
    row.insert("completed".into(), json!(m.completed));
    row.insert("failed".into(), json!(m.failed));
    row.insert("total_input_tokens".into(), json!(m.total_input_tokens));
    row.insert("total_output_tokens".into(), json!(m.total_output_tokens));
    row.insert("request_throughput".into(), json!(m.request_throughput));
    row.insert("request_goodput".into(), json!(m.request_goodput));
    row.insert("output_throughput".into(), json!(m.output_throughput));
    row.insert("total_token_throughput".into(), json!(m.total_token_throughput));
    let r = &a.request_samples;
    let from = |v: Vec<f64>| Dist::samples_or(v, None);
    let lat = [
        ("ttft", [m.mean_ttft_ms, m.median_ttft_ms, m.std_ttft_ms, m.p99_ttft_ms], from(completed_ttft(r))),
        (
            "tpot",
            [m.mean_tpot_ms, m.median_tpot_ms, m.std_tpot_ms, m.p99_tpot_ms],
            from(dist::tpot_values(r).collect()),
        ),
        ("itl", [m.mean_itl_ms, m.median_itl_ms, m.std_itl_ms, m.p99_itl_ms], Dist::None),
        ("e2el", [m.mean_e2el_ms, m.median_e2el_ms, m.std_e2el_ms, m.p99_e2el_ms], from(dist::e2e_values(r).collect())),
    ];
    for (name, [mean, median, std, p99], samples) in lat {
        row.insert(format!("mean_{name}_ms"), json!(mean));
        row.insert(format!("median_{name}_ms"), json!(median));
        row.insert(format!("std_{name}_ms"), json!(std));
        for &q in pcts.values() {
            let v = if q == 99.0 {
                p99
            } else if q == 50.0 {
                median
            } else {
                samples.percentile(q)
            };
            row.insert(format!("{}_{name}_ms", percentile_key(q)), json!(v));
        }
    }
    Value::Object(row)
}

/// TTFT of completed requests (vLLM's TTFT is of successful requests only), ms.
fn completed_ttft(records: &[super::json::RequestRecord]) -> Vec<f64> {
    records.iter().filter(|r| dist::completed(r)).filter_map(|r| r.ttft_ms).collect()
}
