//! `--dataset-name sharegpt|custom` against the simulator: prompts come from the file, their
//! lengths from the server's `/tokenize` before any load (agreeing with each request's usage),
//! every cell sends its own prompts, and the report records the file.

use crate::common;
use common::{cluster, config, validate};
use llm_decode_bench::config::dataset::DatasetSource;
use llm_decode_bench::config::serve::{RangeRatio, ServeConfig};
use llm_decode_bench::config::{PlanKind, Rate, RunConfig};
use llm_decode_bench::dataset::FileFormat;
use llm_decode_bench::report::formats::{RenderSettings, ReportFormat};
use llm_decode_bench::report::status::AttemptStatus;
use llm_decode_bench::session::start;
use std::path::Path;

const N: u32 = 12;

/// A ShareGPT file of 60 conversations: prompts of 8 to 67 words, answers of 5 to 24, and one
/// a one-word prompt that vLLM's bounds drop.
fn sharegpt_file(path: &Path) {
    let words = |n: usize, tag: usize| (0..n).map(|w| format!("w{tag}x{w}")).collect::<Vec<_>>().join(" ");
    let mut convs: Vec<serde_json::Value> = (0..60)
        .map(|i| {
            serde_json::json!({"id": i, "conversations": [
                {"from": "human", "value": words(8 + i, i)},
                {"from": "gpt", "value": words(5 + i % 20, i)},
            ]})
        })
        .collect();
    convs.push(
        serde_json::json!({"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "a b c d e"}]}),
    );
    std::fs::write(path, serde_json::to_vec(&convs).unwrap()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharegpt_prompts_are_counted_by_tokenize_and_each_cell_sends_its_own() {
    let c = cluster(1, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let (file, out) = (dir.path().join("sg.json"), dir.path().join("sg-report.json"));
    sharegpt_file(&file);
    let r = &c.info().replicas[0];
    let dataset = DatasetSource::load(FileFormat::ShareGpt, &file, 4 * N as usize, 5, None).expect("the file reads");
    let serve = ServeConfig {
        num_prompts: N,
        output_len: 16,
        seed: 5,
        range_ratio: RangeRatio::FIXED,
        goodput: None,
        dataset: Some(dataset),
        prefix_repetition: None,
        trace: None,
    };
    let cfg = RunConfig {
        plans: vec![PlanKind::Serve],
        rates: vec![Rate::Inf],
        serve,
        ..config(&r.url, &r.metrics_url, &out, vec![1024], vec![2, 4])
    };
    let report = start(cfg).await.expect("preflight passes").join.await.unwrap();
    assert!(validate(&out) == report, "the file holds the final report, valid against the schema");
    let s = report.serve.as_ref().expect("a serve section");
    let d = s.dataset.as_ref().expect("the dataset is recorded");
    assert_eq!((d.name.as_str(), d.entries, d.sampled, d.per_cell, d.reused), ("sharegpt", 61, 48, 12, false));
    assert_eq!((d.input_len_source.as_str(), d.output_len_source.as_str()), ("tokenize", "tokenize"));
    assert_eq!(d.sha256.len(), 64);
    assert_eq!(s.ctx_labels, vec!["sharegpt".to_string()], "one row, named by the dataset");
    let mut seen = std::collections::BTreeSet::new();
    for cell in &s.cells {
        let a = cell.attempts.last().expect("an attempt");
        assert_eq!(
            (a.status, a.metrics.completed),
            (AttemptStatus::Measured, u64::from(N)),
            "{}",
            cell.max_concurrency
        );
        // The lengths /tokenize gave before the load are the ones each request's usage reports.
        let usage: u64 = a.request_samples.iter().map(|r| r.input_tokens.expect("usage")).sum();
        assert_eq!(a.metrics.total_input_tokens, usage, "conc {}", cell.max_concurrency);
        assert!(a.request_samples.iter().all(|r| (5..=24).contains(&r.output_tokens)), "max_tokens from the answers");
        seen.extend(a.request_samples.iter().map(|r| r.input_tokens));
    }
    assert!(seen.len() > 12, "the two cells sent different prompts: {seen:?}");
    let text = ReportFormat::Text.render(&report, RenderSettings { ascii: true, dim_ansi: false, width: Some(80) });
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("prompts: sharegpt ") && flat.contains("input lengths by tokenize"), "{text}");
    let row = text.lines().find(|l| l.contains("| sharegpt")).expect("the dataset's row");
    assert!(!row.contains('·'), "both cells ran and show their figures: {row}");
}
