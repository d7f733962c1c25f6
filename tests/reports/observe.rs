//! `run --observe` end to end: two shards of one session (`run --shard i/2 --metrics-listen`)
//! against the simulator, a real Prometheus scraping both every second, and the observer
//! headless reading them back. The observer's summed tok/s agrees with the shards' own reports,
//! its final counts equal theirs, and a shard killed mid-cell (SIGKILL) is shown stale live and
//! recorded in its JSON report; `--observe` without its companions, or with load flags, exits 2.

use super::prometheus::{PromProc, scrape_every_second, start_with_config};
use crate::common;
use common::{bin, cluster};
use serde_json::Value;
use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
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

/// Starts shard `i` of 2 against `base`, its page on a free loopback port; the process and the
/// page's `IP:PORT`.
async fn shard(i: u32, base: &str, metrics_url: &str, start_at: u64, out: &Path) -> (Proc, String) {
    shard_of(&format!("{i}/2"), "2,4", (base, metrics_url), start_at, out).await
}

/// Starts shard `spec` (`i/N`) of session `obs-1`, decode cells at `--conc conc`, against
/// `target` (base URL, metrics URL), its page on a free loopback port; the process and the
/// page's `IP:PORT`.
pub(super) async fn shard_of(
    spec: &str,
    conc: &str,
    target: (&str, &str),
    start_at: u64,
    out: &Path,
) -> (Proc, String) {
    let (base, metrics_url) = target;
    let mut cmd = bin();
    cmd.args(["run", "--headless", "--base-url", base, "--metrics-url", metrics_url, "--ctx", "0", "--conc", conc])
        .args(["--window", "8s", "--warmup-timeout", "2s", "--shard", spec, "--session-id", "obs-1"])
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

pub(super) fn observer(prom: &str, out: &Path, extra: &[&str]) -> Proc {
    let mut cmd = bin();
    cmd.args(["run", "--observe", "--headless", "--prometheus", prom])
        .args(extra)
        .args(["--client-selector", r#"{job="shards",session="obs-1"}"#, "--out"])
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_observer_sums_two_shards_and_shows_a_killed_one_stale() {
    let c = cluster(1, 25.0, |_| {}).await;
    let r = &c.info().replicas[0];
    let dir = tempfile::tempdir().unwrap();
    let start_at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 6;
    let outs = [dir.path().join("s0.json"), dir.path().join("s1.json")];
    let (mut s0, a0) = shard(0, &r.url, &r.metrics_url, start_at, &outs[0]).await;
    let (mut s1, a1) = shard(1, &r.url, &r.metrics_url, start_at, &outs[1]).await;
    let prom = prometheus(&[a0, a1]).await;
    let obs_out = dir.path().join("observer.json");
    // The replica is read once, by the observer (its own page here).
    let mut obs = observer(&prom.url, &obs_out, &["--metrics-url", &r.metrics_url]);
    obs.line("shard 0 reporting (session obs-1)").await;
    obs.line("shard 1 reporting (session obs-1)").await;
    // Shard 1 is killed once the second cell runs on it; shard 0 ends cleanly.
    let replica = obs.line("replicas: ").await;
    assert!(replica.contains(" running "), "{replica}");
    s1.line("ctx=0 conc=4").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    s1.child.kill().unwrap();
    let stale = obs.line("shard 1 stale").await;
    assert!(stale.contains("its series are gone from the server"), "{stale}");
    s0.line("serving the final counts").await;
    obs.line("shard 0 finished its session").await;
    // A stale shard holds the observer open (60 s); a signal ends it and writes the report.
    unsafe { libc::kill(obs.child.id() as i32, libc::SIGINT) };
    let status = obs.child.wait().unwrap();
    assert!(status.success(), "{status:?}; stderr:\n{}", obs.stderr());
    let o = read(&obs_out);
    assert_eq!((o["kind"].as_str(), o["ended_by"].as_str()), (Some("observer"), Some("SIGINT")));
    let events: Vec<(String, String)> = o["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["event"].as_str().unwrap().to_string(), e["shard"].as_str().unwrap().to_string()))
        .collect();
    for want in [("joined", "0"), ("joined", "1"), ("stale", "1"), ("finished", "0")] {
        assert!(events.contains(&(want.0.into(), want.1.into())), "{want:?} in {events:?}");
    }
    assert!(!events.contains(&("stale".into(), "0".into())), "{events:?}");
    assert_eq!((o["shards"]["1"]["stale"].as_bool(), o["shards"]["0"]["finished"].as_bool()), (Some(true), Some(true)));
    // The first cell ran on both shards: the observer's summed rate agrees with their reports.
    let r0 = read(&outs[0]);
    let cell = "ctx=0 conc=2";
    let (from, to) = window_of(&r0, cell, 8.0);
    // Shard 1's report may be cut short by the kill: both shards ran one stream of this cell
    // against the same replica, so twice shard 0's rate stands for their sum.
    let want: f64 = shard_cells(&r0).iter().filter(|(l, ..)| l == cell).map(|(_, tps, _)| tps).sum::<f64>() * 2.0;
    let seen = observed_median(&o, cell, 2.0, (from, to)).expect("a poll inside the window");
    assert!((seen - want).abs() <= 0.2 * want, "{cell}: observer {seen} tok/s, shards ~{want} tok/s");
    // Shard 0's final counts reached the observer (its page lingered past its report).
    let started0: f64 = shard_cells(&r0).iter().map(|(.., n)| n).sum();
    let totals: f64 = o["totals"].as_object().unwrap().values().map(|t| t["started"].as_f64().unwrap()).sum();
    assert_eq!(totals, started0, "only shard 0's series remain once shard 1 is gone");
    // The merged report records the killed shard: `incomplete` when its report was written
    // before the kill (it is after every cell start), `missing` when it was not given.
    let merged = dir.path().join("merged.json");
    let given: Vec<&std::path::PathBuf> = outs.iter().filter(|p| p.exists()).collect();
    let mut merge = bin();
    merge.args(["report", "merge"]).args(&given).arg("--out").arg(&merged);
    let done = common::output(merge).await;
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    let m = read(&merged);
    let status =
        |i: u64| m["merge"]["shards"].as_array().unwrap().iter().find(|s| s["index"] == i).unwrap()["status"].clone();
    assert_eq!(status(0), "merged");
    let want1 = if outs[1].exists() { "incomplete" } else { "missing" };
    assert_eq!(status(1), want1);
    assert_eq!(m["complete"], false);
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
