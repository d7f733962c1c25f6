//! `run --metrics-listen` end to end: the binary against the simulator serves its live page
//! during the session, and once the session ended (`--metrics-linger`) every cell's token and
//! request counts on it equal the report's; a real Prometheus scraping the page sums them by
//! cell to the same figures; a bad or taken address (or a sweep) exits 2 before any load.

use super::prometheus::{PromProc, scalar, scrape_every_second, start_with_config};
use crate::common;
use common::{bin, cluster};
use llm_decode_bench::metrics::prom::Scrape;
use llm_decode_bench::sim::gateway::GatewayMode;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Longest wait for the page to appear, the session to end, or Prometheus to see it.
const PATIENCE: Duration = Duration::from_secs(120);

/// A `run` process serving its page; killed when dropped (it lingers after the session).
struct RunProc {
    child: Child,
    /// `IP:PORT` of the page.
    addr: String,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Drop for RunProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl RunProc {
    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().join("\n")
    }
}

/// Starts `run --headless` against `base` with the page on a free loopback port, and reads the
/// port from its stderr line `metrics: http://ADDR/metrics (...)`.
async fn start_run(base: &str, metrics_url: &str, out: &Path, extra: &[&str]) -> RunProc {
    let mut cmd = bin();
    cmd.args(["run", "--headless", "--base-url", base, "--metrics-url", metrics_url, "--ctx", "0"])
        .args(["--metrics-listen", "127.0.0.1:0", "--metrics-linger", "300s", "--out"])
        .arg(out)
        .args(extra)
        .stdout(Stdio::null());
    let mut child = cmd.spawn().expect("run starts");
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let (pipe, lines) = (child.stderr.take().unwrap(), stderr.clone());
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
            lines.lock().unwrap().push(line);
        }
    });
    let mut run = RunProc { child, addr: String::new(), stderr };
    let deadline = Instant::now() + PATIENCE;
    loop {
        let said = run.stderr();
        let line = said.lines().find_map(|l| l.strip_prefix("metrics: http://"));
        if let Some(addr) = line.and_then(|l| l.split('/').next()) {
            run.addr = addr.to_string();
            return run;
        }
        assert!(run.child.try_wait().unwrap().is_none(), "run exited before serving its page:\n{said}");
        assert!(Instant::now() < deadline, "no page address on stderr:\n{said}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn get(addr: &str, path: &str) -> (u16, String) {
    let resp = common::client().get(format!("http://{addr}{path}")).send().await.expect("page answers");
    (resp.status().as_u16(), resp.text().await.expect("page body"))
}

async fn scrape(addr: &str) -> Scrape {
    let (status, text) = get(addr, "/metrics").await;
    assert_eq!(status, 200);
    Scrape::parse_strict(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Scrapes until `done` holds (bounded); the last page.
async fn scrape_until(run: &RunProc, done: impl Fn(&Scrape) -> bool) -> Scrape {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let page = scrape(&run.addr).await;
        if done(&page) {
            return page;
        }
        assert!(Instant::now() < deadline, "page never got there; stderr:\n{}", run.stderr());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn finished(page: &Scrape) -> bool {
    page.sum("llm_decode_bench_session_finished") == Some(1.0)
}

/// What the report counts per cell label (summed over attempts): tokens, requests, completed,
/// cut, failures by kind, requests with a first token, requests with a TPOT.
#[derive(Debug, Default, PartialEq)]
struct Counts {
    tokens: f64,
    started: f64,
    completed: f64,
    cut: f64,
    errors: BTreeMap<String, f64>,
    with_ttft: f64,
    with_tpot: f64,
}

fn report_counts(path: &Path) -> BTreeMap<String, Counts> {
    let report: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("report")).unwrap();
    let mut out = BTreeMap::new();
    for cell in report["decode"]["cells"].as_array().expect("decode cells") {
        let label = format!("ctx={} conc={}", cell["ctx_label"].as_str().unwrap(), cell["conc"]);
        let c: &mut Counts = out.entry(label).or_default();
        for a in cell["attempts"].as_array().unwrap() {
            let samples = a["request_samples"].as_array().unwrap();
            for s in samples {
                c.tokens += s["output_tokens"].as_f64().unwrap();
                c.with_ttft += f64::from(!s["ttft_ms"].is_null());
                c.with_tpot += f64::from(!s["itl_ms"].is_null());
            }
            let outcomes = a["request_outcomes"].as_object().unwrap();
            let n: f64 = outcomes.values().map(|v| v.as_f64().unwrap()).sum();
            assert_eq!(n, samples.len() as f64, "every request sampled (no reservoir) for an exact check");
            c.started += n;
            for (k, v) in outcomes {
                let v = v.as_f64().unwrap();
                match k.as_str() {
                    "completed" => c.completed += v,
                    "cut" => c.cut += v,
                    kind => *c.errors.entry(kind.to_string()).or_default() += v,
                }
            }
        }
    }
    out
}

fn page_counts(page: &Scrape) -> BTreeMap<String, Counts> {
    let by_cell = |name: &str| page.sum_by(name, "cell");
    let hist_count = |name: &str| by_cell(&format!("llm_decode_bench_{name}_seconds_count"));
    let (tokens, started) =
        (by_cell("llm_decode_bench_output_tokens_total"), by_cell("llm_decode_bench_requests_started_total"));
    let (completed, cut) =
        (by_cell("llm_decode_bench_requests_completed_total"), by_cell("llm_decode_bench_requests_cut_total"));
    let (ttft, tpot) = (hist_count("ttft"), hist_count("tpot"));
    let mut out: BTreeMap<String, Counts> = BTreeMap::new();
    for (cell, t) in &tokens {
        let get = |m: &BTreeMap<String, f64>| m.get(cell).copied().unwrap_or(0.0);
        let errors = page
            .samples("llm_decode_bench_request_errors_total")
            .filter(|s| s.labels.get("cell") == Some(cell))
            .map(|s| (s.labels["kind"].clone(), s.value))
            .collect();
        let c = Counts {
            tokens: *t,
            started: get(&started),
            completed: get(&completed),
            cut: get(&cut),
            errors,
            with_ttft: get(&ttft),
            with_tpot: get(&tpot),
        };
        out.insert(cell.clone(), c);
    }
    out
}

/// Runs a session with the page on, checks it is live during the session, and once the session
/// ended that every cell's counts on it equal the report's; the counts and the report.
async fn page_matches_report(base: &str, metrics_url: &str, conc: &str) -> (BTreeMap<String, Counts>, Value) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    // Short streams: many requests per cell, most of them completed.
    let run = start_run(base, metrics_url, &out, &["--conc", conc, "--window", "1s", "--max-tokens", "40"]).await;
    let live = scrape_until(&run, |p| p.sum("llm_decode_bench_output_tokens_total").is_some_and(|t| t > 0.0)).await;
    assert!(!finished(&live), "tokens counted while the session runs");
    assert_eq!(get(&run.addr, "/nope").await.0, 404);
    let page = scrape_until(&run, finished).await;
    let (want, got) = (report_counts(&out), page_counts(&page));
    assert_eq!(got.len(), conc.split(',').count(), "one cell label per cell: {got:?}");
    assert_eq!(got, want, "page (left) and report (right); stderr:\n{}", run.stderr());
    assert!(want.values().all(|c| c.tokens > 0.0 && c.with_tpot > 0.0), "{want:?}");
    for gauge in ["llm_decode_bench_requests_in_flight", "llm_decode_bench_streams_running"] {
        assert_eq!(page.sum(gauge), Some(0.0), "{gauge} after the session");
    }
    (want, serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_counts_what_the_report_counts_with_errors() {
    // Resets mid-stream (tokens of failed requests count) and 503s before any token.
    let c = cluster(1, 25.0, |cfg| cfg.faults = "reset=0.2,http503=0.1".parse().expect("faults")).await;
    let r = &c.info().replicas[0];
    let (counts, _) = page_matches_report(&r.url, &r.metrics_url, "1,3").await;
    let errors: f64 = counts.values().flat_map(|c| c.errors.values()).sum();
    assert!(errors > 0.0, "the faults failed some requests: {counts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_tops_up_streams_to_their_final_usage() {
    // Behind vllm-router (it strips `continuous_usage_stats`) streams carry usage only at the
    // end (`final_usage_scaled`): counted by chunks live, 3 tokens a chunk here, and topped up
    // to the server's total when the request ends.
    let c = cluster(1, 25.0, |cfg| {
        cfg.gateway_mode = GatewayMode::VllmRouter;
        cfg.stream_interval = 3;
    })
    .await;
    let (g, r) = (&c.info().gateway, &c.info().replicas[0]);
    let (_, report) = page_matches_report(&g.url, &r.metrics_url, "2").await;
    let source = &report["decode"]["cells"][0]["attempts"][0]["aggregate_source"];
    assert_eq!(source, "final_usage_scaled", "the case this test is about: {report}");
}

#[tokio::test]
async fn a_bad_or_taken_address_or_a_sweep_exits_2_before_any_load() {
    let refused = common::refused_port();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    for (addr, says) in [("nonsense", "IP:PORT"), ("127.0.0.1:99999", "IP:PORT"), (taken.as_str(), "cannot listen")] {
        let mut cmd = bin();
        cmd.args(["run", "--headless", "--base-url", &refused.base(), "--metrics-listen", addr]);
        let out = common::output(cmd).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{addr}: {stderr}");
        assert!(stderr.contains(says), "{addr}: {stderr}");
        if addr == taken {
            assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        }
    }
    let mut sweep = bin();
    sweep.args(["run", "--headless", "--server-cmd", "exec true {port}", "--metrics-listen", "127.0.0.1:0"]);
    let out = common::output(sweep).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("does not serve engine-config sweeps"), "{stderr}");
}

/// Starts Prometheus scraping `addr` every second as job `client`.
async fn prometheus_scraping(addr: &str) -> PromProc {
    start_with_config(&scrape_every_second("client", &[addr.to_string()])).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_sums_the_page_by_cell_to_the_reports_counts() {
    let c = cluster(1, 25.0, |_| {}).await;
    let r = &c.info().replicas[0];
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let run = start_run(&r.url, &r.metrics_url, &out, &["--conc", "2,4", "--window", "2s"]).await;
    let prom = prometheus_scraping(&run.addr).await;
    let client = common::client();
    let deadline = Instant::now() + PATIENCE;
    let done = "max(llm_decode_bench_session_finished{job=\"client\"})";
    while scalar(&client, &prom.url, done).await != Some(1.0) {
        assert!(Instant::now() < deadline, "prometheus never saw the session end; its log:\n{}", prom.log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let want = report_counts(&out);
    assert_eq!(want.len(), 2);
    for (cell, counts) in &want {
        let q = |name: &str| format!("sum by (cell) ({name}{{job=\"client\",cell=\"{cell}\"}})");
        let tokens = scalar(&client, &prom.url, &q("llm_decode_bench_output_tokens_total")).await;
        let started = scalar(&client, &prom.url, &q("llm_decode_bench_requests_started_total")).await;
        assert_eq!((tokens, started), (Some(counts.tokens), Some(counts.started)), "{cell}");
        // Quantiles come from the summed buckets, and the buckets hold every token gap.
        let itl = format!(
            "histogram_quantile(0.5, sum by (le) (llm_decode_bench_itl_seconds_bucket{{job=\"client\",cell=\"{cell}\"}}))"
        );
        let p50 = scalar(&client, &prom.url, &itl).await.expect("an ITL median");
        assert!(p50 > 0.0 && p50 < 1.0, "{cell}: ITL p50 {p50} s");
    }
}
