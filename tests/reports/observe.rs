//! What the sharded end-to-end tests share (sharded.rs, sharded_kill.rs): shard processes
//! (`run --shard i/N --metrics-listen`) against the simulator, a real Prometheus scraping
//! them every second, the headless observer and readers of their reports; and `--observe`
//! without its companions, or with load flags, exits 2.

use super::prometheus::{PromProc, scrape_every_second, start_with_config};
use crate::common;
use common::bin;
use serde_json::Value;
use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Longest wait for a page address, a line of the observer, or its end.
const PATIENCE: Duration = Duration::from_secs(150);

/// A child process whose stderr lines are collected; killed when dropped.
pub(super) struct Proc {
    pub(super) child: Child,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    pub(super) fn spawn(mut cmd: std::process::Command) -> Proc {
        let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("process starts");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (pipe, lines) = (child.stderr.take().unwrap(), stderr.clone());
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(line);
            }
        });
        Proc { child, stderr }
    }

    pub(super) fn stderr(&self) -> String {
        self.stderr.lock().unwrap().join("\n")
    }

    /// Waits (bounded) for a stderr line containing `needle`; the line.
    pub(super) async fn line(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(l) = self.stderr.lock().unwrap().iter().find(|l| l.contains(needle)) {
                return l.clone();
            }
            assert!(Instant::now() < deadline, "no line with `{needle}`; stderr:\n{}", self.stderr());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// One shard process to start: shard `spec` (`i/N`) of `session`, decode cells at `--conc
/// conc` with `extra` flags, against `target` (base URL, metrics URL), from `start_at`.
pub(super) struct ShardArgs<'a> {
    pub session: &'a str,
    pub spec: String,
    pub conc: &'a str,
    pub target: (&'a str, &'a str),
    pub start_at: u64,
    pub extra: &'a [&'a str],
}

/// Starts the shard `a` writing `out`, its page on a free loopback port; the process and the
/// page's `IP:PORT`.
pub(super) async fn shard_of(a: &ShardArgs<'_>, out: &Path) -> (Proc, String) {
    let (base, metrics_url) = a.target;
    let (spec, conc, session, start_at) = (a.spec.as_str(), a.conc, a.session, a.start_at);
    let mut cmd = bin();
    cmd.args(["run", "--headless", "--base-url", base, "--metrics-url", metrics_url, "--ctx", "0", "--conc", conc])
        .args(["--window", "8s", "--warmup-timeout", "2s", "--shard", spec, "--session-id", session])
        .args(a.extra)
        .args(["--start-at", &start_at.to_string(), "--metrics-listen", "127.0.0.1:0", "--metrics-linger", "20s"])
        .arg("--out")
        .arg(out);
    let mut p = Proc::spawn(cmd);
    let line = p.line("metrics: http://").await;
    let addr = line.split("http://").nth(1).and_then(|l| l.split('/').next()).unwrap().to_string();
    (p, addr)
}

/// Prometheus scraping `targets` every second as job `shards`.
pub(super) async fn prometheus(targets: &[String]) -> PromProc {
    start_with_config(&scrape_every_second("shards", targets)).await
}

/// The headless observer of `session` (shards scraped as job `shards`) with `extra` flags,
/// writing `out`.
pub(super) fn observer(prom: &str, session: &str, out: &Path, extra: &[&str]) -> Proc {
    let mut cmd = bin();
    let selector = format!(r#"{{job="shards",session="{session}"}}"#);
    cmd.args(["run", "--observe", "--headless", "--prometheus", prom])
        .args(extra)
        .args(["--client-selector", &selector, "--out"])
        .arg(out);
    Proc::spawn(cmd)
}

pub(super) fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("report written")).expect("JSON")
}

/// Per cell label: the report's `aggregate_tps` (its window's tok/s) and its requests started.
pub(super) fn shard_cells(report: &Value) -> Vec<(String, f64, f64)> {
    let cells = report["decode"]["cells"].as_array().expect("decode cells");
    let one = |c: &Value| {
        let label = format!("ctx={} conc={}", c["ctx_label"].as_str().unwrap(), c["conc"]);
        let a = &c["attempts"][0];
        let started: f64 = a["request_outcomes"].as_object().unwrap().values().map(|v| v.as_f64().unwrap()).sum();
        (label, a["aggregate_tps"].as_f64().unwrap_or(0.0), started)
    };
    cells.iter().map(one).collect()
}

/// The median of the observer's summed tok/s for `cell` over the polls taken while both shards
/// ran it and whose rate window (`rate_window_s` back from the poll) lies inside the window the
/// shards measured (`window_at` .. `window_at + window`).
pub(super) fn observed_median(obs: &Value, cell: &str, shards: f64, window: (f64, f64)) -> Option<f64> {
    let (window_from, window_to) = window;
    let w = obs["rate_window_s"].as_f64().unwrap();
    let mut inside: Vec<f64> = obs["cells"][cell]
        .as_array()?
        .iter()
        .filter(|p| p["active_shards"] == shards)
        .filter(|p| p["at_unix"].as_f64().is_some_and(|t| t - w >= window_from && t <= window_to))
        .filter_map(|p| p["tok_s"].as_f64())
        .collect();
    inside.sort_by(f64::total_cmp);
    inside.get(inside.len() / 2).copied()
}

/// The decode window of `cell` on shard report `r`: from its timeline, seconds since the epoch.
pub(super) fn window_of(r: &Value, cell: &str, window_s: f64) -> (f64, f64) {
    let slot = r["shard"]["timeline"].as_array().unwrap().iter().find(|s| s["cell"] == cell).expect("slot");
    let at = slot["window_due_unix_s"].as_f64().unwrap();
    (at, at + window_s)
}

#[tokio::test]
async fn observe_without_its_companions_or_with_load_flags_exits_2() {
    let sel = r#"{job="x"}"#;
    let cases: [(&[&str], &str); 4] = [
        (&["--observe", "--client-selector", sel], "--observe needs --prometheus URL"),
        (&["--observe", "--prometheus", "http://127.0.0.1:9"], "--client-selector MATCHERS"),
        (&["--observe", "--prometheus", "http://127.0.0.1:9", "--client-selector", "job=x"], "not a label matcher"),
        (&["--observe", "--base-url", "http://127.0.0.1:9", "--client-selector", sel], "--base-url"),
    ];
    for (args, want) in cases {
        let mut cmd = bin();
        cmd.arg("run").arg("--headless").args(args);
        let out = common::output(cmd).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}
