//! Repetitions (`run --num-runs N`, issue 25) against the simulator in real time, where runs of
//! one cell differ as measured runs do: every cell of a decode matrix, its bursts, a serve
//! cell and a conversation cell runs three times back to back, each run one attempt, and the
//! cell's `runs` block holds each headline figure's mean, sd, CV and interval, consistent with
//! the recorded runs; the tables show the means; the flag itself refuses 0 and junk.

use crate::common;
use common::{cluster, config, validate};
use llm_decode_bench::cell::control::RunnerEvent;
use llm_decode_bench::config::conversation::ConversationConfig;
use llm_decode_bench::config::{PlanKind, Rate, RunConfig};
use llm_decode_bench::report::formats::{RenderSettings, ReportFormat};
use llm_decode_bench::report::json::SessionReport;
use llm_decode_bench::report::runs::RunsBlock;
use llm_decode_bench::report::status::{AttemptStatus, CellOutcome};
use llm_decode_bench::session::start;
use std::time::Duration;

/// Runs `cfg` to its end: the report (checked against the file and the schema) and the run
/// numbers each cell start named, as (cell, attempt, run k).
async fn session(cfg: RunConfig) -> (SessionReport, Vec<(usize, u32, u32)>) {
    let out = cfg.out.clone().expect("an out path");
    let mut h = start(cfg).await.expect("preflight passes");
    let mut started = Vec::new();
    while let Some(ev) = h.events.recv().await {
        if let RunnerEvent::CellStarted { cell, attempt, run } = ev {
            started.push((cell, attempt, run.expect("every start names its run").current()));
        }
    }
    let report = h.join.await.unwrap();
    assert!(validate(&out) == report, "the file holds the final report, valid against the schema");
    (report, started)
}

/// `block` is over `values` (one per measured run): its figure `name` has their mean, sample
/// sd, CV and an interval around the mean, all finite.
fn consistent(block: &RunsBlock, name: &str, values: &[f64]) {
    assert_eq!((block.planned, block.n, block.headline.as_str()), (3, 3, "mean"));
    assert_eq!(values.len(), 3);
    let s = block.figure(name).unwrap_or_else(|| panic!("no {name} in {block:?}"));
    let mean = values.iter().sum::<f64>() / 3.0;
    let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
    assert!(close(s.mean, mean) && close(s.sd.unwrap(), sd), "{name}: {s:?} vs {values:?}");
    let cv = s.cv.expect("a CV");
    assert!(cv.is_finite() && cv >= 0.0 && close(cv, sd / mean.abs()), "{name}: CV {cv}");
    let (lo, hi) = (s.ci_low.unwrap(), s.ci_high.unwrap());
    assert!(lo.is_finite() && hi.is_finite() && lo <= mean && mean <= hi, "{name}: [{lo}, {hi}]");
    // t(0.975, 2) = 4.303: the half-width is that many standard errors.
    assert!(((hi - lo) / 2.0 - 4.302_653 * sd / 3f64.sqrt()).abs() <= 1e-4 * sd.max(1e-9), "{name}: {s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_decode_and_burst_cell_runs_three_times_with_a_cv() {
    let c = cluster(1, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let r = &c.info().replicas[0];
    let mut cfg = config(&r.url, &r.metrics_url, &dir.path().join("runs.json"), vec![0], vec![1, 2]);
    (cfg.window, cfg.num_runs, cfg.decode.run_burst) = (Duration::from_secs(1), 3, true);
    let (report, started) = session(cfg).await;
    assert!(report.complete);
    assert_eq!(report.plan.settings.get("num-runs").map(String::as_str), Some("3"));
    // Back to back: each cell's three runs before the next cell.
    let order: Vec<(usize, u32)> = started.iter().map(|(c, _, k)| (*c, *k)).collect();
    assert_eq!(order, [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (2, 3), (3, 1), (3, 2), (3, 3)]);
    let decode = &report.decode.as_ref().unwrap().cells;
    for cell in decode {
        assert_eq!(cell.status, CellOutcome::Measured);
        let statuses: Vec<AttemptStatus> = cell.attempts.iter().map(|a| a.status).collect();
        assert_eq!(statuses, [AttemptStatus::Measured; 3], "conc {}", cell.conc);
        let block = cell.runs.as_ref().expect("a runs block");
        assert_eq!(block.attempts, [1, 2, 3]);
        let tps: Vec<f64> = cell.attempts.iter().map(|a| a.aggregate_tps).collect();
        assert!(tps.windows(2).any(|w| w[0] != w[1]), "measured runs differ: {tps:?}");
        consistent(block, "aggregate_tok_s", &tps);
        let ttft: Vec<f64> = cell.attempts.iter().map(|a| a.ttft_ms.unwrap().p50).collect();
        consistent(block, "p50_ttft_ms", &ttft);
    }
    for cell in &report.burst.as_ref().expect("bursts").cells {
        let tps: Vec<f64> = cell.attempts.iter().map(|a| a.output_tps).collect();
        consistent(cell.runs.as_ref().expect("a runs block"), "output_tok_s", &tps);
    }
    // The tables show the mean, and say so.
    let text = ReportFormat::Text.render(&report, RenderSettings { ascii: true, dim_ansi: false, width: None });
    let mean = decode[0].runs.as_ref().unwrap().figure("aggregate_tok_s").unwrap().mean;
    let row = text.lines().find(|l| l.starts_with("| 0 ")).expect("the ctx 0 row");
    assert!(row.contains(&format!("{mean:.1}")), "the matrix shows the mean {mean:.1}: {row}\n{text}");
    assert!(text.contains("Repetitions: mean ±95% CI (CV)") && text.contains("--num-runs 3"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_and_conversation_cells_run_three_times_with_a_cv() {
    let c = cluster(1, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let r = &c.info().replicas[0];
    let conversation = ConversationConfig { conversations: 2, turns: 2, user_tokens: 32, ..Default::default() };
    let mut cfg = RunConfig {
        plans: vec![PlanKind::Serve, PlanKind::Conversation],
        rates: vec![Rate::Inf],
        conversation,
        num_runs: 3,
        ..config(&r.url, &r.metrics_url, &dir.path().join("runs.json"), vec![64], vec![2])
    };
    (cfg.serve.num_prompts, cfg.serve.output_len) = (6, 8);
    let (report, started) = session(cfg).await;
    assert_eq!(started.len(), 6, "two cells, three runs each: {started:?}");
    let serve = &report.serve.as_ref().unwrap().cells[0];
    let tps: Vec<f64> = serve.attempts.iter().map(|a| a.metrics.output_throughput).collect();
    consistent(serve.runs.as_ref().expect("a runs block"), "output_tok_s", &tps);
    let rate: Vec<f64> = serve.attempts.iter().map(|a| a.metrics.request_throughput).collect();
    consistent(serve.runs.as_ref().unwrap(), "request_rate_rps", &rate);
    let conv = &report.extensions.iter().find(|s| s.kind == "conversation").unwrap().cells[0];
    let tps: Vec<f64> = conv.attempts.iter().map(|a| a.output_tps).collect();
    consistent(conv.runs.as_ref().expect("a runs block"), "output_tok_s", &tps);
    let csv = ReportFormat::Csv.render(&report, RenderSettings::default());
    assert!(csv.lines().next().unwrap().ends_with(",runs,runs_figures"), "{csv}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_flag_runs_each_cell_n_times_and_refuses_zero_or_junk() {
    for bad in ["0", "x", "-2"] {
        let args = ["run", "--base-url", "http://127.0.0.1:9", "--num-runs", bad].map(String::from).to_vec();
        let o = common::run_bin(args).await;
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
        assert!(stderr.contains(&format!("--num-runs {bad}: takes a whole number of runs per cell")), "{stderr}");
    }
    let c = cluster(1, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bin.json");
    let r = &c.info().replicas[0];
    let args = [
        "run",
        "--headless",
        "--base-url",
        &r.url,
        "--metrics-url",
        &r.metrics_url,
        "--ctx",
        "0",
        "--conc",
        "1",
        "--window",
        "1s",
        "--settle",
        "0.2s",
        "--num-runs",
        "2",
        "--out",
        out.to_str().unwrap(),
    ];
    let o = common::run_bin(args.map(String::from).to_vec()).await;
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("ctx=0 conc=1 (run 2/2): start") && stderr.contains("2/2 runs: tok/s"), "{stderr}");
    let report = validate(&out);
    let cell = &report.decode.as_ref().unwrap().cells[0];
    assert_eq!((cell.attempts.len(), cell.runs.as_ref().map(|b| b.n)), (2, Some(2)));
    assert!(String::from_utf8_lossy(&o.stdout).contains("Repetitions"), "the final tables");
}
