//! `--random-range-ratio` against the simulator: each serve request has its own input and
//! output length, drawn as vLLM draws them, and the server counts exactly those lengths.

use crate::common;
use common::{cluster, config, validate};
use llm_decode_bench::config::serve::{RangeRatio, ServeConfig};
use llm_decode_bench::config::{PlanKind, Rate, RunConfig};
use llm_decode_bench::experiment::serve::ServeCell;
use llm_decode_bench::experiment::serve::lengths::Lengths;
use llm_decode_bench::report::formats::{RenderSettings, ReportFormat};
use llm_decode_bench::report::status::AttemptStatus;
use llm_decode_bench::session::start;

const N: u32 = 48;
const INPUT: u64 = 200;
const OUTPUT: u64 = 24;

/// A ratio of 0.5 spreads prompts over 100..=300 tokens and outputs over 12..=36: every
/// request's prompt, as the server's usage counts it, is its planned length, every output runs
/// to its own `max_tokens`, and the cell's totals are their sums.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_request_has_its_own_length_and_the_server_counts_it() {
    let c = cluster(1, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("spread.json");
    let r = &c.info().replicas[0];
    let ratio = RangeRatio::new(0.5).unwrap();
    let cfg = RunConfig {
        plans: vec![PlanKind::Serve],
        rates: vec![Rate::Inf],
        serve: ServeConfig {
            num_prompts: N,
            output_len: OUTPUT,
            seed: 11,
            range_ratio: ratio,
            goodput: None,
            dataset: None,
            prefix_repetition: None,
            trace: None,
        },
        ..config(&r.url, &r.metrics_url, &out, vec![INPUT], vec![8])
    };
    let report = start(cfg).await.expect("preflight passes").join.await.unwrap();
    assert!(validate(&out) == report, "the file holds the final report");
    let s = report.serve.as_ref().expect("a serve section");
    assert_eq!(s.random_range_ratio, 0.5, "the ratio is recorded");
    let a = s.cells[0].attempts.last().expect("an attempt");
    assert_eq!((a.status, a.metrics.completed), (AttemptStatus::Measured, u64::from(N)));

    let spec = ServeCell {
        cell: 0,
        label: String::new(),
        input_len: INPUT,
        max_concurrency: 8,
        rate: Rate::Inf,
        attempt: 1,
        search: None,
        opens_at: None,
    };
    let planned = Lengths::draw(N as usize, INPUT, OUTPUT, ratio, spec.seed(11));
    for rec in &a.request_samples {
        let i = rec.worker as usize;
        assert_eq!(rec.input_tokens, Some(planned.input[i]), "request {i}: the server's prompt tokens");
        assert_eq!(rec.output_tokens, planned.output[i], "request {i}: ignore_eos runs to its max_tokens");
    }
    let distinct: std::collections::BTreeSet<u64> = planned.input.iter().copied().collect();
    assert!(distinct.len() >= 20 && planned.input.iter().all(|n| (100..=300).contains(n)), "{distinct:?}");
    assert!(planned.output.iter().all(|n| (12..=36).contains(n)));
    assert_eq!(a.metrics.total_input_tokens, planned.input.iter().sum::<u64>());
    assert_eq!(a.metrics.total_output_tokens, planned.output.iter().sum::<u64>());
    let text = ReportFormat::Text.render(&report, RenderSettings { ascii: true, dim_ansi: false, width: Some(80) });
    assert!(text.contains("Lengths spread (--random-range-ratio 0.5)"), "the table says the row is a mean: {text}");
}
