//! Reliability (issue 10, part I): exit codes, signals and lost sessions, driving the binary
//! against a simulated cluster on loopback. Codes as in README "Exit codes" (src/cmd/exit.rs).

use crate::common;

use crate::common::{cluster, validate};
use llm_decode_bench::report::status::AttemptStatus;
use llm_decode_bench::sim::Cluster;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Longest wait for anything the binary does here.
const PATIENCE: Duration = Duration::from_secs(60);

/// `run --headless` against the cluster's first replica, one ctx-0 cell, then `extra` flags.
fn run_cmd(c: &Cluster, out: &Path, window: &str, extra: &[&str]) -> Command {
    run_cmd_conc(c, out, window, "2", extra)
}

/// [`run_cmd`] over the concurrencies `conc` (`1,2`: two ctx-0 cells).
pub(crate) fn run_cmd_conc(c: &Cluster, out: &Path, window: &str, conc: &str, extra: &[&str]) -> Command {
    let r = &c.info().replicas[0];
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_llm-decode-bench"));
    cmd.args(["run", "--headless", "--base-url", &r.url, "--metrics-url", &r.metrics_url])
        .args(["--ctx", "0", "--conc", conc, "--window", window, "--settle", "200ms", "--warmup-timeout", "20s"])
        .args(["--min-stream-tokens", "1024", "--poll-interval", "100ms"])
        .arg("--out")
        .arg(out)
        .args(extra)
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// A running binary: its stderr lines arrive on a channel (and are kept for messages).
pub(crate) struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    pub(crate) fn spawn(mut cmd: Command) -> Running {
        let mut child = cmd.spawn().expect("binary starts");
        let stderr = child.stderr.take().expect("stderr piped");
        let stdout = child.stdout.take().expect("stdout piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || BufReader::new(stderr).lines().map_while(Result::ok).try_for_each(|l| tx.send(l)));
        std::thread::spawn(move || std::io::copy(&mut BufReader::new(stdout), &mut std::io::sink()));
        Running { child, lines, seen: Vec::new() }
    }

    /// Waits for a stderr line containing `needle`.
    pub(crate) fn wait_line(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(_) => panic!("no line with {needle:?} on stderr; saw {:#?}", self.seen),
            }
        }
    }

    pub(crate) fn signal(&self, name: &str) {
        let ok = Command::new("kill").args([&format!("-{name}"), &self.child.id().to_string()]).status();
        assert!(ok.expect("kill runs").success(), "kill -{name}");
    }

    /// Waits for the exit (bounded); returns the status and every stderr line.
    pub(crate) fn wait(mut self) -> (ExitStatus, String) {
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the binary did not exit; stderr so far {:#?}", self.seen);
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // The reader thread ends with the pipe.
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(line);
        }
        (status, self.seen.join("\n"))
    }
}

/// Waits until `path` holds a whole report.
fn wait_for_report(path: &Path) -> llm_decode_bench::report::json::SessionReport {
    let deadline = Instant::now() + PATIENCE;
    while !path.exists() {
        assert!(Instant::now() < deadline, "no report at {}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
    validate(path)
}

fn attempt_statuses(report: &llm_decode_bench::report::json::SessionReport) -> Vec<AttemptStatus> {
    let decode = report.decode.as_ref().expect("decode section");
    decode.cells.iter().flat_map(|c| c.attempts.iter().map(|a| a.status)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unwritable_out_fails_before_any_load() {
    let c = cluster(1, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let slash = format!("{}/", dir.path().join("new").display());
    std::fs::write(dir.path().join("file"), "x").expect("seeded");
    let under_file = dir.path().join("file/r.json");
    for out in [dir.path(), Path::new(&slash), under_file.as_path()] {
        let (status, stderr) = Running::spawn(run_cmd(&c, out, "1s", &[])).wait();
        assert_eq!(status.code(), Some(2), "{out:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("error: --out "), "{stderr}");
    }
    let text = common::metrics_text(&common::client(), &c.info().replicas[0].metrics_url).await;
    assert_eq!(common::sample_value(&text, "vllm:request_success_total"), Some(0.0), "no request was sent");
}

/// SIGTERM or SIGHUP mid-cell: the cell is recorded as stopped, the report is incomplete, the
/// exit code is 128 + the signal.
async fn signal_mid_cell(name: &str, code: i32) {
    let c = cluster(1, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("r.json");
    let mut run = Running::spawn(run_cmd(&c, &out, "60s", &[]));
    run.wait_line(": measuring");
    run.signal(name);
    let (status, stderr) = run.wait();
    assert_eq!(status.code(), Some(code), "{stderr}");
    assert!(stderr.contains(&format!("SIG{name}: stopping")), "{stderr}");
    let report = validate(&out);
    assert!(!report.complete);
    assert_eq!(attempt_statuses(&report), [AttemptStatus::Stopped], "the running cell is recorded");
    assert!(report.actions.iter().any(|a| a.action == "stop"), "{:?}", report.actions);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_cell_records_the_cell_and_exits_143() {
    signal_mid_cell("TERM", 143).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_mid_cell_records_the_cell_and_exits_129() {
    signal_mid_cell("HUP", 129).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_exists_from_the_start_and_survives_kill_9() {
    let c = cluster(1, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("r.json");
    let mut run = Running::spawn(run_cmd(&c, &out, "60s", &[]));
    run.wait_line("report: ");
    let early = wait_for_report(&out);
    assert!(!early.complete);
    assert_eq!(early.actions.first().map(|a| a.action.as_str()), Some("start"));
    run.wait_line(": measuring");
    run.signal("KILL");
    let (status, _) = run.wait();
    assert_eq!(status.code(), None, "killed by the signal");
    let left = validate(&out);
    assert!(!left.complete && attempt_statuses(&left).is_empty(), "the start report is left whole");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_where_every_request_failed_exits_4_unless_allowed() {
    let c = cluster(1, 25.0, |cfg| cfg.faults = "http500=1".parse().expect("faults")).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("r.json");
    let (status, stderr) = Running::spawn(run_cmd(&c, &out, "1s", &[])).wait();
    assert_eq!(status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("1 cell(s) errored"), "{stderr}");
    let report = validate(&out);
    assert!(report.complete);
    assert_eq!(attempt_statuses(&report), [AttemptStatus::Errored]);
    let (status, stderr) = Running::spawn(run_cmd(&c, &out, "1s", &["--allow-errors", "--overwrite"])).wait();
    assert_eq!(status.code(), Some(0), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_run_exits_0() {
    let c = cluster(1, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("r.json");
    let (status, stderr) = Running::spawn(run_cmd(&c, &out, "1s", &[])).wait();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(attempt_statuses(&validate(&out)), [AttemptStatus::Measured]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_that_fails_later_goes_to_a_named_fallback_and_exits_5() {
    let c = cluster(1, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let sub = dir.path().join("sub");
    let out = sub.join("r.json");
    let mut run = Running::spawn(run_cmd(&c, &out, "2s", &[]));
    run.wait_line("report: ");
    wait_for_report(&out);
    // The report's directory turns into a file: every later save fails (even for root).
    std::fs::remove_dir_all(&sub).expect("removed");
    std::fs::write(&sub, "in the way").expect("seeded");
    let (status, stderr) = run.wait();
    assert_eq!(status.code(), Some(5), "{stderr}");
    let line = stderr.lines().find(|l| l.contains("the report was saved to ")).expect("the fallback is named");
    let fallback = PathBuf::from(line.rsplit("the report was saved to ").next().expect("path"));
    let report = validate(&fallback);
    std::fs::remove_file(&fallback).expect("fallback removed");
    assert!(report.complete, "the final report is in the fallback file");
    assert_eq!(attempt_statuses(&report), [AttemptStatus::Measured]);
}

/// Runs the binary with `args` to its end (bounded); returns the exit code and stderr.
fn exit_of(args: &[&str]) -> (Option<i32>, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_llm-decode-bench"));
    cmd.args(args).env_remove("OPENAI_API_KEY").stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let (status, stderr) = Running::spawn(cmd).wait();
    (status.code(), stderr)
}

#[test]
fn usage_errors_exit_2_in_every_subcommand() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ready = dir.path().join("ready.json");
    let ready_file = ready.to_str().expect("UTF-8");
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/report_example.json");
    let cases: [(&[&str], &str); 14] = [
        // `sim` said exit 1 (documented as internal) for these, or started anyway.
        (&["sim", "--port", "0", "--slot-ctx", "0", "--ready-file", ready_file], "--slot-ctx"),
        (&["sim", "--port", "0", "--slot-ctx", "8k", "--ready-file", ready_file], "--engine llamacpp"),
        (&["sim", "--port", "0", "--engine", "llamacpp", "--slot-ctx", "1"], "at least 2 tokens"),
        (&["sim", "--port", "0", "--engine", "llamacpp", "--slot-ctx", "99999999"], "exceeds the KV capacity"),
        (&["sim", "--port", "0", "--replicas", "0"], "--replicas"),
        (&["sim", "--port", "65530", "--replicas", "8"], "past the highest port"),
        (&["run", "--base-url", "http://127.0.0.1:9", "--window", "0s"], "--window"),
        // A URL that only looked like one went on to preflight and exit 3.
        (&["run", "--base-url", "http://[::1", "--headless"], "not a valid URL"),
        // --no-metrics used to drop the replica's page silently.
        (&["run", "--base-url", "http://h:1", "--no-metrics", "--metrics-url", "http://h:2/metrics"], "--metrics-url"),
        (&["report", fixture, "--per-request"], "--per-request"),
        (&["compare", fixture, "/no/such/report.json"], "new report"),
        (&["bench", "--streams", "0"], "--streams"),
        (&["config"], "--print-default"),
        (&["completions", "no-such-shell"], "no-such-shell"),
    ];
    for (args, needle) in cases {
        let (code, stderr) = exit_of(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {needle:?} not in {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    assert!(!ready.exists(), "a refused simulator never served");
}

/// `sim` on free ports until `name` arrives: it stops the cluster and exits 128 + the signal.
fn sim_stops_on(name: &str, code: i32) {
    let dir = tempfile::tempdir().expect("tempdir");
    let ready = dir.path().join("ready.json");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_llm-decode-bench"));
    cmd.args(["sim", "--port", "0", "--replicas", "1", "--ready-file"])
        .arg(&ready)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let run = Running::spawn(cmd);
    let deadline = Instant::now() + PATIENCE;
    while !ready.exists() {
        assert!(Instant::now() < deadline, "the simulator never wrote its ready file");
        std::thread::sleep(Duration::from_millis(20));
    }
    let info: llm_decode_bench::sim::ClusterInfo =
        serde_json::from_slice(&std::fs::read(&ready).expect("ready file")).expect("endpoints as JSON");
    let gateway = info.gateway.url.trim_start_matches("http://").to_string();
    assert!(std::net::TcpStream::connect(&gateway).is_ok(), "the gateway serves at {gateway}");
    run.signal(name);
    let (status, stderr) = run.wait();
    assert_eq!(status.code(), Some(code), "exits with its code, not killed by SIG{name}: {status:?} {stderr}");
    assert_eq!(stderr.trim(), format!("SIG{name}: stopping the simulated cluster"), "one line, no panic");
    assert!(std::net::TcpStream::connect(&gateway).is_err(), "the gateway is closed");
}

#[test]
fn sim_stops_cleanly_on_sighup_and_exits_129() {
    sim_stops_on("HUP", 129);
}

#[test]
fn sim_stops_cleanly_on_sigint_and_sigterm_with_their_codes() {
    sim_stops_on("INT", 130);
    sim_stops_on("TERM", 143);
}
