//! Tests of the `vllm bench serve`-shaped export (src/report/vllm.rs).

use super::*;
use crate::report::tests_example::{full_report, minimal_report};
use crate::stats::percentile_list;

fn rows(pcts: &str) -> Vec<Value> {
    let v = export(&full_report(), &percentile_list(pcts).unwrap());
    v.as_array().expect("an array").clone()
}

fn close(v: &Value, want: f64) -> bool {
    v.as_f64().is_some_and(|x| (x - want).abs() <= 1e-9 * want.abs().max(1.0))
}

#[test]
fn one_row_per_cell_and_phase_with_our_key() {
    let rows = rows("99");
    let labels: Vec<&str> = rows.iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert_eq!(
        labels,
        ["decode ctx=16k conc=4", "decode ctx=16k conc=8", "burst ctx=16k conc=4", "routing r1-hot90-prefix-cache"]
    );
    assert_eq!(
        (rows[1]["kind"].as_str(), rows[1]["ctx"].as_u64(), rows[1]["conc"].as_u64()),
        (Some("decode"), Some(16_384), Some(8))
    );
    assert_eq!(rows[1]["attempt"], 2, "the cell's result is its last attempt");
    assert_eq!(rows[0]["status"], "errored");
    assert_eq!(rows[3]["phase"], "r1-hot90-prefix-cache");
    assert!(export(&minimal_report(), &percentile_list("99").unwrap()).as_array().unwrap().is_empty());
}

#[test]
fn decode_cells_map_onto_vllm_fields() {
    let r = &rows("50,99.9")[1];
    // The window: 30 s, 16 944 tokens; one completed request of three, 16 380 prompt tokens.
    assert!(close(&r["duration"], 30.0));
    assert_eq!((r["completed"].as_u64(), r["failed"].as_u64()), (Some(1), Some(2)));
    assert_eq!((r["total_input_tokens"].as_u64(), r["total_output_tokens"].as_u64()), (Some(16_380), Some(16_944)));
    assert!(close(&r["request_throughput"], 1.0 / 30.0));
    assert!(close(&r["output_throughput"], 564.8));
    assert!(close(&r["total_token_throughput"], (16_380.0 + 16_944.0) / 30.0));
    assert!(close(&r["request_goodput"], 1.0 / 30.0), "one good request of the window's 30 s");
    assert_eq!((r["request_rate"].as_str(), r["max_concurrency"].as_u64()), (Some("inf"), Some(8)));
    // TTFT from the three request samples (480 ms each): every percentile, std 0.
    assert!(close(&r["median_ttft_ms"], 480.0) && close(&r["p99.9_ttft_ms"], 480.0) && close(&r["std_ttft_ms"], 0.0));
    assert!(close(&r["p50_ttft_ms"], 480.0));
    assert!(close(&r["mean_tpot_ms"], (56_500.0 - 480.0) / 4095.0), "completed requests only");
    // ITL per chunk, as vLLM's: the stored summary, so no std and no p99.9.
    assert!(close(&r["median_itl_ms"], 21.0) && close(&r["mean_itl_ms"], 17.5));
    assert!(r["std_itl_ms"].is_null() && r["p99.9_itl_ms"].is_null() && close(&r["p50_itl_ms"], 21.0));
    assert_eq!(r["sources"]["ttft"], "request_samples");
    assert_eq!(r["sources"]["itl"], "summary");
    assert!(r.get("p99_ttft_ms").is_none(), "only the percentiles asked for");
}

#[test]
fn routing_phases_keep_their_three_percentiles_in_ms() {
    let r = &rows("50,95,99,99.9")[3];
    assert!(close(&r["duration"], 60.25));
    assert_eq!(
        (r["completed"].as_u64(), r["failed"].as_u64(), r["num_prompts"].as_u64()),
        (Some(95), Some(1), Some(96))
    );
    assert!(close(&r["request_goodput"], 61.0 / 60.25));
    assert!(close(&r["output_throughput"], 180.5));
    assert!(close(&r["request_rate"], 1.6));
    assert!(
        close(&r["median_ttft_ms"], 2125.0) && close(&r["p95_ttft_ms"], 11_500.0) && close(&r["p99_ttft_ms"], 12_000.0)
    );
    assert!(close(&r["p99_itl_ms"], 93.75) && close(&r["p50_e2el_ms"], 9500.0));
    assert!(r["mean_ttft_ms"].is_null() && r["p99.9_ttft_ms"].is_null() && r["total_input_tokens"].is_null());
    assert_eq!(r["sources"]["e2el"], "phase");
}

#[test]
fn bursts_use_their_makespan() {
    let r = &rows("99")[2];
    assert!(close(&r["duration"], 2.5));
    assert_eq!((r["completed"].as_u64(), r["num_prompts"].as_u64()), (Some(3), Some(4)));
    assert!(close(&r["request_throughput"], 3.0 / 2.5) && close(&r["output_throughput"], 307.2));
    assert!(close(&r["p99_itl_ms"], 31.5), "the stored per-token ITL summary");
    assert!(close(&r["p99_e2el_ms"], 56_500.0), "from the one request sample");
}

#[test]
fn open_loop_decode_rows_name_their_rate() {
    use crate::load::rate::Rate;
    let mut report = full_report();
    for (cell, rate) in report.decode.as_mut().unwrap().cells.iter_mut().zip([Rate::PerSecond(4.0), Rate::Inf]) {
        (cell.conc, cell.rate) = (8, Some(rate));
    }
    let v = export(&report, &percentile_list("50").unwrap());
    let decode: Vec<&Value> = v.as_array().unwrap().iter().filter(|r| r["kind"] == "decode").collect();
    let labels: Vec<&str> = decode.iter().filter_map(|r| r["label"].as_str()).collect();
    assert_eq!(labels, ["decode ctx=16k conc=8 rate=4", "decode ctx=16k conc=8 rate=inf"]);
    assert_eq!((decode[0]["request_rate"].as_f64(), decode[1]["request_rate"].as_str()), (Some(4.0), Some("inf")));
}
