//! The `run` row: `llm-decode-bench run --headless` started as a user starts it against the bench
//! server, its CPU (user + system of the whole process and its waited children, all threads)
//! read from `/proc/PID/stat` every 10 ms, and taken over the whole streaming window: from the
//! first frame with a token the server wrote after its mark to the last one (`/bench/window`,
//! src/bench/marks.rs), warmup included, by interpolating between the samples around those two
//! instants. Tokens are the ones the `run` process read, from its report's request samples
//! when they hold every request, else the ones the server wrote in the window.

use super::figures::{Client, Row};
use super::run::Plan;
use super::server::Mode;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// `/proc` reports CPU in clock ticks of 1/100 s (`USER_HZ`, 100 on every Linux target).
const TICKS_PER_S: f64 = 100.0;

/// How often the `run` process is sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(10);

/// One sample of the `run` process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Sample {
    /// When, unix ns.
    pub unix_ns: u64,
    /// CPU so far, s.
    pub cpu_s: f64,
    /// VmRSS then, KiB (0: not read).
    pub rss_kib: u64,
}

/// What the whole-window row adds to the row's figures.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct WholeWindow {
    /// Tokens the server wrote in the window.
    pub server_tokens: u64,
    /// Tokens the `run` process read, from its report (None: its samples are not whole).
    pub client_tokens: Option<u64>,
    /// First and last frame with a token, unix ns.
    pub first_unix_ns: u64,
    /// See `first_unix_ns`.
    pub last_unix_ns: u64,
    /// CPU of the `run` process from its start to its exit, s.
    pub process_cpu_s: f64,
    /// Wall time of the `run` process, s.
    pub process_wall_s: f64,
}

/// CPU (utime + stime + cutime + cstime) of process `pid` so far, s.
fn cpu_of(pid: u32) -> Option<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat_cpu(&text)
}

/// The CPU fields of a `/proc/PID/stat` line, s. The command name (field 2) may hold spaces and
/// parentheses, so the fields are counted from its closing `)`.
pub(crate) fn parse_stat_cpu(text: &str) -> Option<f64> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state (3), ..., utime (14), stime (15), cutime (16), cstime (17).
    let ticks: Option<Vec<u64>> = f.get(11..15)?.iter().map(|s| s.parse::<u64>().ok()).collect();
    Some(ticks?.iter().sum::<u64>() as f64 / TICKS_PER_S)
}

fn rss_of(pid: u32) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = text.lines().find(|l| l.starts_with("VmRSS:")).unwrap_or("");
    line["VmRSS:".len().min(line.len())..].trim().trim_end_matches("kB").trim().parse().unwrap_or(0)
}

/// CPU at `t_ns`, linear between the samples around it (clamped to the first and last).
pub(crate) fn cpu_at(samples: &[Sample], t_ns: u64) -> f64 {
    let i = samples.partition_point(|s| s.unix_ns <= t_ns);
    match (i.checked_sub(1).and_then(|j| samples.get(j)), samples.get(i)) {
        (Some(a), Some(b)) => {
            let f = (t_ns - a.unix_ns) as f64 / (b.unix_ns - a.unix_ns).max(1) as f64;
            a.cpu_s + f * (b.cpu_s - a.cpu_s)
        }
        (Some(a), None) => a.cpu_s,
        (None, Some(b)) => b.cpu_s,
        (None, None) => 0.0,
    }
}

/// Tokens read and errors in a `run` report, when its request samples hold every request.
pub(crate) fn report_tokens(report: &Value) -> (Option<u64>, u64) {
    let attempts = report["decode"]["cells"].as_array().into_iter().flatten();
    let attempts: Vec<&Value> = attempts.flat_map(|c| c["attempts"].as_array().into_iter().flatten()).collect();
    let errors = attempts.iter().filter_map(|a| a["error_count"].as_u64()).sum();
    let mut whole = !attempts.is_empty();
    let mut tokens = 0;
    for a in &attempts {
        let samples = a["request_samples"].as_array().map_or(&[][..], Vec::as_slice);
        let outcomes: u64 =
            a["request_outcomes"].as_object().into_iter().flatten().filter_map(|(_, n)| n.as_u64()).sum();
        whole &= outcomes == samples.len() as u64;
        tokens += samples.iter().filter_map(|s| s["output_tokens"].as_u64()).sum::<u64>();
    }
    (whole.then_some(tokens), errors)
}

/// The `run` command line of the row: a decode cell at ctx 0 and `streams` streams.
pub(crate) fn run_args(url: &str, streams: u32, plan: &Plan, out: &Path) -> Vec<String> {
    let window = format!("{}ms", plan.window.as_millis());
    let (conc, tokens) = (streams.to_string(), plan.tokens.to_string());
    let args = ["run", "--headless", "--base-url", url, "--ctx", "0", "--conc", &conc, "--window", &window];
    let mut v: Vec<String> = args.map(String::from).to_vec();
    v.extend(["--max-tokens".into(), tokens.clone(), "--min-stream-tokens".into(), tokens]);
    v.extend(["--out".into(), out.display().to_string()]);
    v
}

/// Starts `exe run ...`, samples it until it exits; its samples, exit status and stderr.
async fn sample_run(exe: &Path, args: &[String], timeout: Duration) -> anyhow::Result<(Vec<Sample>, String)> {
    let err_path = std::env::temp_dir().join(format!("llm-decode-bench-run-row-{}.err", std::process::id()));
    let err = std::fs::File::create(&err_path)?;
    let mut child = Command::new(exe).args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(err).spawn()?;
    let pid = child.id();
    let deadline = tokio::time::Instant::now() + timeout;
    let mut samples = Vec::with_capacity(4096);
    let mut tick = tokio::time::interval(SAMPLE_EVERY);
    let status = loop {
        tick.tick().await;
        if let Some(cpu_s) = cpu_of(pid) {
            let rss_kib = if samples.len() % 10 == 0 { rss_of(pid) } else { 0 };
            samples.push(Sample { unix_ns: super::sysinfo::unix_ns(), cpu_s, rss_kib });
        }
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if tokio::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!("`run` did not end within {} s", timeout.as_secs());
        }
    };
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&err_path);
    if !status.success() {
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        anyhow::bail!("`run` failed ({status}): {last}");
    }
    Ok((samples, stderr))
}

/// The `run` row against the bench server at `url`, measured from this (the row's) process.
pub(crate) async fn run_row(
    url: &str,
    http: &reqwest::Client,
    mode: Mode,
    streams: u32,
    plan: &Plan,
) -> anyhow::Result<Row> {
    let exe = std::env::current_exe()?;
    let out = std::env::temp_dir().join(format!("llm-decode-bench-run-row-{}.json", std::process::id()));
    let s0 = super::child::stats_at(http, url).await?;
    http.post(format!("{url}/bench/mark")).send().await?.error_for_status()?;
    let timeout = plan.window * 3 + Duration::from_secs(90) + Duration::from_millis(10 * u64::from(streams));
    let (samples, _) = sample_run(&exe, &run_args(url, streams, plan, &out), timeout).await?;
    let w = super::child::window_at(http, url).await?;
    let s1 = super::child::stats_at(http, url).await?;
    let report: Value = serde_json::from_slice(&std::fs::read(&out)?)?;
    let _ = std::fs::remove_file(&out);
    let (client_tokens, errors) = report_tokens(&report);
    anyhow::ensure!(w.tokens > 0 && w.last_unix_ns > w.first_unix_ns, "the server wrote no tokens to `run`");
    let cpu = (cpu_at(&samples, w.last_unix_ns) - cpu_at(&samples, w.first_unix_ns)).max(0.0);
    let rss_at = |t: u64| samples.iter().rfind(|s| s.rss_kib > 0 && s.unix_ns <= t).map_or(0, |s| s.rss_kib);
    let (first, last) = (samples.first().copied(), samples.last().copied());
    let whole = WholeWindow {
        server_tokens: w.tokens,
        client_tokens,
        first_unix_ns: w.first_unix_ns,
        last_unix_ns: w.last_unix_ns,
        process_cpu_s: last.map_or(0.0, |s| s.cpu_s),
        process_wall_s: match (first, last) {
            (Some(a), Some(b)) => (b.unix_ns - a.unix_ns) as f64 / 1e9,
            _ => 0.0,
        },
    };
    let hwm = samples.iter().map(|s| s.rss_kib).max().unwrap_or(0);
    let win = super::run::Window {
        secs: (w.last_unix_ns - w.first_unix_ns) as f64 / 1e9,
        tokens: client_tokens.unwrap_or(w.tokens),
        cpu: Duration::from_secs_f64(cpu),
        rss: (rss_at(w.last_unix_ns), hwm),
    };
    let mut r = super::run::row(mode, streams, Client::Run, &win, rss_at(w.first_unix_ns));
    r.errors = errors;
    r.server_cpu_us_per_token = super::run::server_us_per_token(&s0, &s1);
    r.whole = Some(whole);
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_cpu_counts_from_the_name_s_closing_parenthesis() {
        let line = "4242 (llm (de) bench) S 1 4242 4242 0 -1 4194304 100 0 0 0 250 50 7 3 20 0 9 0 123 456 789";
        assert_eq!(parse_stat_cpu(line), Some(3.1), "utime 250 + stime 50 + cutime 7 + cstime 3 ticks");
        assert_eq!(parse_stat_cpu("4242 (x) S 1"), None);
    }

    #[test]
    fn cpu_is_interpolated_between_samples() {
        let s = |t: u64, c: f64| Sample { unix_ns: t, cpu_s: c, rss_kib: 0 };
        let v = [s(100, 1.0), s(200, 2.0), s(300, 4.0)];
        assert_eq!(cpu_at(&v, 150), 1.5);
        assert_eq!(cpu_at(&v, 250), 3.0);
        assert_eq!((cpu_at(&v, 50), cpu_at(&v, 400), cpu_at(&[], 5)), (1.0, 4.0, 0.0));
    }

    #[test]
    fn report_tokens_only_when_the_samples_are_whole() {
        let attempt = |samples: &[u64], outcomes: u64| {
            let s: Vec<Value> = samples.iter().map(|t| serde_json::json!({"output_tokens": t})).collect();
            serde_json::json!({"error_count": 1, "request_samples": s, "request_outcomes": {"completed": outcomes}})
        };
        let r = serde_json::json!({"decode": {"cells": [{"attempts": [attempt(&[10, 20], 2), attempt(&[5], 1)]}]}});
        assert_eq!(report_tokens(&r), (Some(35), 2));
        let r = serde_json::json!({"decode": {"cells": [{"attempts": [attempt(&[10, 20], 3)]}]}});
        assert_eq!(report_tokens(&r), (None, 1), "a uniform sample of 3 requests");
        assert_eq!(report_tokens(&serde_json::json!({})), (None, 0));
    }
}
