//! `deploy/ssh/run-shards.sh` on loopback: `ssh` and `scp` are shims that run the command
//! and copy the file here (host `down` cannot be reached), the shards are the real binary
//! against the simulator. Checked: two shards start together and their reports are merged;
//! a reused SESSION_ID is refused before any shard starts and the earlier reports are left
//! as they were (never merged again); a shard that fails makes the script's exit status its
//! own and the merged report records it missing.

use crate::collect::{bounded, write_exe};
use crate::common;
use crate::manifests::deploy_dir;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

/// `ssh HOST COMMAND`: the command in bash here (run-shards.sh quotes it with `%q`).
const SSH: &str = r#"#!/bin/sh
host=$1; shift
[ "$host" != down ] || { echo "ssh: connect to host down port 22: Connection refused" >&2; exit 255; }
exec bash -c "$*"
"#;

/// `scp -q HOST:PATH DEST`: a copy here.
const SCP: &str = r#"#!/bin/sh
[ "$1" != -q ] || shift
[ "${1%%:*}" != down ] || exit 1
exec cp "${1#*:}" "$2"
"#;

/// A folder with the shims and the binary, put first on PATH.
fn shims() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_exe(&dir.path().join("ssh"), SSH);
    write_exe(&dir.path().join("scp"), SCP);
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_llm-decode-bench"), dir.path().join("llm-decode-bench")).unwrap();
    dir
}

/// A port `p` with `p` and `p + 1` free on loopback now (the two shards' /metrics).
fn two_free_ports() -> u16 {
    loop {
        let a = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
        let p = a.local_addr().unwrap().port();
        if p < u16::MAX && std::net::TcpListener::bind(("0.0.0.0", p + 1)).is_ok() {
            return p;
        }
    }
}

/// Runs the script for `hosts` with session `session`, reports in `reports`, against the
/// simulated replica at `url` (its metrics page `metrics`).
fn run_shards(shims: &Path, hosts: &[&str], session: &str, reports: &Path, url: &str, metrics: &str) -> Output {
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(deploy_dir().join("ssh/run-shards.sh")).args(hosts).arg("--");
    cmd.args(["--base-url", url, "--metrics-url", metrics, "--ctx", "64", "--conc", "3"]);
    cmd.args(["--window", "1s", "--warmup-timeout", "1s"]);
    let path = format!("{}:{}", shims.display(), std::env::var("PATH").unwrap_or_default());
    cmd.env("PATH", path).env("SESSION_ID", session).env("REPORTS", reports).env_remove("OPENAI_API_KEY");
    cmd.current_dir(reports.parent().unwrap_or(reports));
    cmd.env("START_LEAD", "2").env("METRICS_PORT", two_free_ports().to_string());
    bounded(cmd, Duration::from_secs(120))
}

fn report(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

fn statuses(merged: &serde_json::Value) -> Vec<&str> {
    merged["merge"]["shards"].as_array().expect("merge.shards").iter().map(|s| s["status"].as_str().unwrap()).collect()
}

fn err(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_are_merged_and_a_reused_session_is_refused() {
    let c = common::cluster(1, 25.0, |_| {}).await;
    let r = c.info().replicas[0].clone();
    let (shims, dir) = (shims(), tempfile::tempdir().unwrap());
    let reports: PathBuf = dir.path().join("reports");
    let (s, rep, url, m) = (shims.path().to_path_buf(), reports.clone(), r.url.clone(), r.metrics_url.clone());
    let first = tokio::task::spawn_blocking(move || run_shards(&s, &["local", "local"], "ssh-e2e", &rep, &url, &m));
    let out = first.await.unwrap();
    assert!(out.status.success(), "{}", err(&out));
    let merged = report(&reports.join("merged.json"));
    assert_eq!(statuses(&merged), ["merged", "merged"]);
    assert_eq!(merged["merge"]["session_id"], "ssh-e2e");
    let streams: Vec<u64> = (0..2)
        .map(|i| {
            report(&reports.join(format!("shard-{i}.json")))["decode"]["cells"][0]["attempts"][0]["requested"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(streams, [2, 1], "conc 3 split over the two shards");
    // The same SESSION_ID and folder again: refused before any shard starts, nothing rewritten.
    let before = std::fs::read(reports.join("merged.json")).unwrap();
    let (s, rep, url, m) = (shims.path().to_path_buf(), reports.clone(), r.url.clone(), r.metrics_url.clone());
    let again = tokio::task::spawn_blocking(move || run_shards(&s, &["local", "local"], "ssh-e2e", &rep, &url, &m));
    let out = again.await.unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", err(&out));
    assert!(err(&out).contains("already holds reports"), "{}", err(&out));
    assert_eq!(std::fs::read(reports.join("merged.json")).unwrap(), before, "the earlier merge is left alone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_shard_is_the_exit_status_and_recorded_missing() {
    let c = common::cluster(1, 25.0, |_| {}).await;
    let r = c.info().replicas[0].clone();
    let (shims, dir) = (shims(), tempfile::tempdir().unwrap());
    let reports = dir.path().join("reports");
    let (s, rep) = (shims.path().to_path_buf(), reports.clone());
    let run = tokio::task::spawn_blocking(move || {
        run_shards(&s, &["local", "down"], "ssh-down", &rep, &r.url, &r.metrics_url)
    });
    let out = run.await.unwrap();
    let e = err(&out);
    assert_eq!(out.status.code(), Some(255), "ssh's own status: {e}");
    assert!(e.contains("shard 1 on down failed (exit 255)"), "{e}");
    let merged = report(&reports.join("merged.json"));
    assert_eq!(statuses(&merged), ["merged", "missing"]);
    assert!(!reports.join("shard-1.json").exists());
}
