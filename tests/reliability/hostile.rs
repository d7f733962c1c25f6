//! Reliability, hostile servers (issue 21 item 10): each case a raw socket server of the test's
//! own ([`server`]) that misbehaves on purpose, with the real binary as a child process against
//! it. Every case checks that the request (or preflight) ends with a named error kind, the
//! session goes on (or preflight exits with one clear line), the binary's peak RSS stays bounded
//! (`VmHWM` of `/proc/<pid>/status`), and the API key, which the servers echo wherever they
//! can, is never printed, logged or saved. Stream cases in [`stream`], page and preflight cases
//! in [`pages`], a lossy, slow and partitioned network namespace in [`netns`].

mod netns;
mod pages;
mod server;
mod sources;
mod stream;

use crate::common::validate;
use llm_decode_bench::load::sample::ErrorKind;
use llm_decode_bench::report::json::SessionReport;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The API key every run is given (by environment); no output may hold it.
pub(crate) const SECRET: &str = "sk-hostile-7f3a9c1e5b";

/// Longest one run of the binary may take.
const PATIENCE: Duration = Duration::from_secs(60);

/// Peak RSS a run may reach, KiB: a capped read holds a few MiB, an uncapped one gigabytes.
pub(crate) const RSS_LIMIT_KB: u64 = 200 << 10;

/// What one run of the binary left.
pub(crate) struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// The report's text, empty when none was written.
    pub report_text: String,
    pub log: String,
    /// Highest `VmHWM` seen while it ran, KiB.
    pub peak_kb: u64,
    pub took: Duration,
    _dir: tempfile::TempDir,
    out: PathBuf,
}

impl Ran {
    /// The report, checked against the schema.
    pub fn report(&self) -> SessionReport {
        validate(&self.out)
    }

    /// Every error kind of every decode attempt, counted.
    pub fn kinds(&self) -> BTreeMap<ErrorKind, u64> {
        let mut all = BTreeMap::new();
        let report = self.report();
        let attempts = report.decode.iter().flat_map(|d| d.cells.iter().flat_map(|c| c.attempts.iter()));
        for (k, n) in attempts.flat_map(|a| a.errors.iter()) {
            *all.entry(*k).or_default() += n;
        }
        all
    }

    /// An example of `kind` from the report.
    pub fn example(&self, kind: ErrorKind) -> String {
        let report = self.report();
        let attempts = report.decode.iter().flat_map(|d| d.cells.iter().flat_map(|c| c.attempts.iter()));
        attempts.filter_map(|a| a.error_examples.get(&kind).cloned()).next().unwrap_or_default()
    }

    /// Asserts the key is nowhere in what the run printed, logged or saved, and the peak RSS.
    pub fn assert_clean(&self) {
        eprintln!(
            "hostile run: exit {:?}, peak RSS {} MiB, {:.1} s",
            self.code,
            self.peak_kb >> 10,
            self.took.as_secs_f64()
        );
        for (what, text) in
            [("stdout", &self.stdout), ("stderr", &self.stderr), ("report", &self.report_text), ("log", &self.log)]
        {
            assert!(!text.contains(SECRET), "the key is in the {what}: {text}");
        }
        assert!(self.peak_kb > 0, "VmHWM was read");
        assert!(self.peak_kb < RSS_LIMIT_KB, "peak RSS {} MiB; stderr {}", self.peak_kb >> 10, self.stderr);
    }

    /// The last cell measured, after the hostile one: the session went on.
    pub fn assert_went_on(&self) {
        let report = self.report();
        let cells = &report.decode.as_ref().expect("a decode section").cells;
        let last = cells.last().expect("cells");
        assert_eq!(last.status, llm_decode_bench::report::status::CellOutcome::Measured, "{}", self.stderr);
        assert!(report.complete, "{}", self.stderr);
    }
}

/// `run --headless` against `base`, one ctx-0 row of concurrencies 1 and 2 with short deadlines,
/// the key in the environment, then `extra` flags (which may replace the metrics flag).
pub(crate) fn run_against(base: &str, extra: &[&str]) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    let (out, log) = (dir.path().join("r.json"), dir.path().join("log.txt"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_llm-decode-bench"));
    cmd.args(["run", "--headless", "--base-url", base, "--ctx", "0", "--conc", "1,2", "--window", "1s"])
        .args(["--settle", "100ms", "--warmup-timeout", "10s", "--first-token-timeout", "2s", "--idle-timeout", "2s"])
        .args(["--min-stream-tokens", "1024", "--poll-interval", "100ms"])
        .arg("--out")
        .arg(&out)
        .arg("--log-file")
        .arg(&log)
        .args(extra);
    if !extra.iter().any(|a| a.starts_with("--metrics-url") || *a == "--no-metrics") {
        cmd.arg("--no-metrics");
    }
    let mut ran = spawn_measured(cmd);
    ran.report_text = std::fs::read_to_string(&out).unwrap_or_default();
    ran.log = std::fs::read_to_string(&log).unwrap_or_default();
    Ran { _dir: dir, out, ..ran }
}

/// Runs `cmd` (the key in its environment) to its end, bounded by [`PATIENCE`], sampling its
/// `VmHWM` every 10 ms.
pub(crate) fn spawn_measured(mut cmd: Command) -> Ran {
    cmd.env("OPENAI_API_KEY", SECRET).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let t0 = Instant::now();
    let mut child = cmd.spawn().expect("binary starts");
    let pipe = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = r.read_to_end(&mut s);
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let stdout = pipe(Box::new(child.stdout.take().unwrap()));
    let stderr = pipe(Box::new(child.stderr.take().unwrap()));
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak_kb = 0;
    let code = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s.code();
        }
        peak_kb = peak_kb.max(vm_hwm_kb(&status_path).unwrap_or(0));
        if t0.elapsed() > PATIENCE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the binary did not exit within {PATIENCE:?}; stderr {}", stderr.join().unwrap());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("none.json");
    let (report_text, log) = (String::new(), String::new());
    Ran { code, stdout, stderr, report_text, log, peak_kb, took: t0.elapsed(), _dir: dir, out }
}

/// `VmHWM` (peak resident set) of a process's status file, KiB.
fn vm_hwm_kb(path: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
