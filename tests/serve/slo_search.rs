//! The SLO search (`run --plan serve --slo-search`) against the simulator, in process on the
//! paused clock (a busy machine cannot push a first token past the bound). The simulator's
//! capacity is derived from its own parameters: it runs at most `max_num_seqs` requests, each
//! taking `output` steps of `step_cost(max_num_seqs)`; a request above that waits for a whole
//! request to end, far past a TTFT bound of a few steps. So a concurrency search must find
//! `max_num_seqs` streams, and a rate search (near-even arrivals) `max_num_seqs / (output x
//! step)` requests/s, each within one step of its resolution.

use crate::common;
use common::{config, inproc_cluster, run_inproc, validate};
use llm_decode_bench::config::slo_search::{Resolution, SearchMode, SloSearchConfig};
use llm_decode_bench::config::{PlanKind, SloSource};
use llm_decode_bench::report::extension::{ExtensionAttempt, ExtensionTable, figure};
use llm_decode_bench::report::formats::{RenderSettings, ReportFormat};
use llm_decode_bench::report::json::SessionReport;
use llm_decode_bench::sim::params::EngineParams;
use llm_decode_bench::stats::Slo;
use std::time::Duration;

/// Most requests the simulated engine runs at once: the capacity the concurrency search finds.
const MAX_NUM_SEQS: usize = 4;
const INPUT: u64 = 16;
const OUTPUT: u64 = 32;
const PROMPTS: u32 = 48;

/// The simulator: one replica of `MAX_NUM_SEQS`, steps costing only their base and per-request
/// terms (no prefill or context term), so a request's time is exactly `OUTPUT` steps.
fn engine() -> EngineParams {
    EngineParams {
        max_num_seqs: MAX_NUM_SEQS,
        step_per_prefill_token: Duration::ZERO,
        step_per_ctx_token_ns: 0.0,
        ..EngineParams::default()
    }
}

/// One full step, and a whole request's time at a full batch.
fn step_and_request() -> (Duration, Duration) {
    let step = engine().step_cost(MAX_NUM_SEQS, 0, 0);
    (step, step * OUTPUT as u32)
}

/// The TTFT bound: 6 full steps. A request that finds a slot waits at most the step under way
/// and its own; one that does not waits for a request to end (about `OUTPUT` steps).
fn ttft_bound() -> Duration {
    let (step, request) = step_and_request();
    let bound = step * 6;
    assert!(bound * 4 < request, "the bound sits far below a queued request's wait: {bound:?} vs {request:?}");
    bound
}

async fn search(cfg: SloSearchConfig, burstiness: f64) -> SessionReport {
    common::paused(move || async move {
        let c = inproc_cluster(1, 1.0, |s| s.engine = engine());
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("slo.json");
        let r = &c.info().replicas[0];
        let mut run = config(&r.url, &r.metrics_url, &out, vec![INPUT], vec![1]);
        run.plans = vec![PlanKind::Serve];
        run.burstiness = burstiness;
        (run.serve.num_prompts, run.serve.output_len, run.serve.seed) = (PROMPTS, OUTPUT, 5);
        run.slo = Slo { ttft: Some(ttft_bound()), tpot: None, e2e: None };
        run.slo_source = SloSource::Goodput;
        run.slo_search = Some(cfg);
        let report = run_inproc(run, &c).await;
        assert!(validate(&out) == report, "the file holds the final report, valid against the schema");
        report
    })
    .await
}

fn attempt(report: &SessionReport) -> &ExtensionAttempt {
    let s = report.extensions.iter().find(|s| s.kind == "slo_search").expect("an slo_search section");
    assert_eq!(s.cells.len(), 1, "one search, and no fixed serve cells");
    assert!(report.serve.is_none(), "the search replaces the serve plan's cells");
    s.cells[0].attempts.last().expect("an attempt")
}

fn col(t: &ExtensionTable, name: &str) -> Vec<Option<f64>> {
    let i = t.columns.iter().position(|c| c.name == name).unwrap_or_else(|| panic!("no column {name}"));
    t.rows.iter().map(|r| r.values[i]).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrency_search_finds_max_num_seqs() {
    let cfg = SloSearchConfig {
        mode: SearchMode::Concurrency,
        target: 0.95,
        start: 1.0,
        max: 16.0,
        resolution: Resolution::Absolute(1.0),
        repeats: 3,
    };
    let report = search(cfg, 1.0).await;
    let a = attempt(&report);
    let capacity = MAX_NUM_SEQS as f64;
    let (found, fail) = (figure(a, "found_load").expect("a load passed"), figure(a, "first_fail").expect("one failed"));
    assert!((found - capacity).abs() <= 1.0, "found {found} streams, the simulator runs {capacity}");
    assert_eq!(fail, found + 1.0, "the bracket closed to one stream");
    assert_eq!(a.labels["outcome"], "bracketed");
    let t = &a.tables["probes"];
    let (loads, pass, requests) = (col(t, "load"), col(t, "pass"), col(t, "requests"));
    assert!(requests.iter().all(|r| *r == Some(f64::from(PROMPTS))), "each probe sends --num-prompts");
    // Every probe at or below the capacity passed (or was probed again), every one above failed.
    for (l, p) in loads.iter().zip(&pass) {
        let l = l.unwrap();
        match l <= capacity {
            true => assert_ne!(*p, Some(0.0), "{l} streams fit the batch and failed"),
            false => assert_ne!(*p, Some(1.0), "{l} streams queue and passed"),
        }
    }
    // 48 of 48 cannot tell 95% (the interval's low end is 0.926): passing loads are probed twice.
    let repeats = col(t, "repeat");
    assert!(repeats.contains(&Some(2.0)), "a load was probed again: {repeats:?}");
    // Legends wrap at the terminal's width: read the text as words.
    let text = llm_decode_bench::report::tables::render_text(&report, true, false);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for needle in ["SLO search by concurrency", "probes of slo_search in=16 concurrency", "outcome bracketed"] {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }
    let html = ReportFormat::Html.render(&report, RenderSettings::default());
    assert!(html.contains("probes of slo_search in=16 concurrency") && html.contains("mode concurrency"));
    let md = ReportFormat::Markdown.render(&report, RenderSettings::default());
    assert!(md.contains("SLO search by concurrency"), "{md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_search_finds_the_batch_over_the_request_time() {
    let (_, request) = step_and_request();
    let capacity = MAX_NUM_SEQS as f64 / request.as_secs_f64();
    let cfg = SloSearchConfig {
        mode: SearchMode::Rate,
        target: 0.95,
        start: 1.0,
        max: 64.0,
        resolution: Resolution::Relative(0.05),
        repeats: 2,
    };
    // Near-even arrivals (gamma shape 1000): no queue below the capacity, a growing one above.
    let report = search(cfg, 1000.0).await;
    let a = attempt(&report);
    let (found, fail) = (figure(a, "found_load").expect("a rate passed"), figure(a, "first_fail").expect("one failed"));
    assert!(fail <= found * 1.05 * (1.0 + 1e-9), "the bracket closed to 5%: [{found}, {fail}]");
    assert!(
        found >= capacity / 1.05 && found <= capacity * 1.05,
        "found {found:.3} req/s, the simulator serves {capacity:.3} ({MAX_NUM_SEQS} / {request:?})"
    );
    // Below the capacity no probe failed; a step above it none passed.
    let t = &a.tables["probes"];
    for (l, p) in col(t, "load").iter().zip(col(t, "pass")) {
        let l = l.unwrap();
        assert!(l >= capacity || p != Some(0.0), "{l} req/s is below {capacity:.3} and failed");
        assert!(l <= capacity * 1.05 || p != Some(1.0), "{l} req/s is a step above {capacity:.3} and passed");
    }
}

/// The binary with `args`, to its end: exit code, stderr.
fn bin(args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_llm-decode-bench"))
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("the binary runs");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_search_without_an_slo_or_a_stray_search_flag_is_a_usage_error() {
    let run = ["run", "--base-url", "http://127.0.0.1:9", "--plan", "serve"];
    for (extra, needle) in [
        (&["--slo-search", "concurrency"][..], "--slo-search needs the SLO it searches under: add --goodput"),
        (&["--slo-search", "rate", "--goodput", "ttft:500", "--request-rate", "4"], "--request-rate sets the serve"),
        (&["--slo-repeats", "2"], "--slo-repeats shapes the SLO search"),
        (&["--slo-search", "concurrency", "--goodput", "ttft:500", "--slo-resolution", "0.5"], "--slo-resolution 0.5"),
    ] {
        let args: Vec<&str> = run.iter().chain(extra).copied().collect();
        let (code, stderr) = bin(&args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: one line: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {needle:?} not in {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headless_prints_a_line_per_probe() {
    let c = common::cluster(1, 1.0, |s| s.engine.max_num_seqs = 2).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("slo.json");
    let r = &c.info().replicas[0];
    let args = [
        "run",
        "--base-url",
        &r.url,
        "--metrics-url",
        &r.metrics_url,
        "--plan",
        "serve",
        "--slo-search",
        "concurrency",
        "--goodput",
        "ttft:2000",
        "--slo-attainment",
        "90",
        "--slo-max-load",
        "2",
        "--slo-repeats",
        "1",
        "--random-input-len",
        "16",
        "--random-output-len",
        "8",
        "--num-prompts",
        "8",
        "--headless",
        "--out",
        out.to_str().unwrap(),
    ]
    .map(String::from);
    let (code, stderr) = tokio::task::spawn_blocking(move || bin(&args.each_ref().map(String::as_str))).await.unwrap();
    assert_eq!(code, Some(0), "{stderr}");
    for needle in [
        "slo_search in=16 concurrency: probe 1: concurrency 1 streams: 8/8 met the SLO",
        "slo_search in=16 concurrency: probe 2: concurrency 2 streams: 8/8 met the SLO",
        "every load passed up to the highest: bracket [2, —] streams",
    ] {
        assert!(stderr.contains(needle), "{needle:?} not in:\n{stderr}");
    }
    let report = validate(&out);
    assert_eq!(figure(attempt(&report), "found_load"), Some(2.0));
    assert_eq!(report.plan.settings.get("slo-search").map(String::as_str), Some("concurrency"));
}
