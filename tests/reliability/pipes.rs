//! Reliability (issue 21, item 3): a closed stdout or stderr (`report FILE | true`, `run ...
//! 2>&1 | head`) ends the output quietly, never with a panic (exit 101): the command finishes
//! its work with the exit code it would have had, and a session still saves its whole report.

use crate::common::{bin, cluster, validate};
use llm_decode_bench::report::status::AttemptStatus;
use std::path::Path;
use std::process::{Output, Stdio};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/report_example.json");

/// The write end of a pipe whose reader is already gone: every write to it is EPIPE.
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    writer.into()
}

/// `args` with stdout closed; stderr read.
async fn closed_stdout(args: &[&str]) -> Output {
    let mut cmd = bin();
    cmd.args(args).stdout(closed_pipe());
    crate::common::output(cmd).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn printing_commands_exit_quietly_on_a_closed_stdout() {
    let cases: [&[&str]; 8] = [
        &["report", FIXTURE],
        &["report", FIXTURE, "--format", "html"],
        &["report", FIXTURE, "--format", "csv", "--per-request"],
        &["report", FIXTURE, "--format", "markdown"],
        &["compare", FIXTURE, FIXTURE],
        &["completions", "bash"],
        &["config", "--print-default"],
        &["man"],
    ];
    for args in cases {
        let out = closed_stdout(args).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
}

/// `compare`'s stdout on a full disk (`> file`, here /dev/full: every write is ENOSPC) is no
/// pass: exit 5 and one line, where a closed pipe (above) is not an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_to_a_full_disk_is_exit_5_not_a_pass() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    let mut cmd = bin();
    cmd.args(["compare", FIXTURE, FIXTURE]).stdout(Stdio::from(full));
    let out = crate::common::output(cmd).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("cannot write the comparison to stdout"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// A one-cell headless session against `c`'s replica, written to `out`.
fn session(c: &llm_decode_bench::sim::Cluster, out: &Path) -> std::process::Command {
    let r = &c.info().replicas[0];
    let mut cmd = bin();
    cmd.args(["run", "--headless", "--base-url", &r.url, "--metrics-url", &r.metrics_url])
        .args(["--ctx", "0", "--conc", "2", "--window", "1s", "--settle", "200ms", "--min-stream-tokens", "1024"])
        .arg("--out")
        .arg(out);
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_with_its_output_gone_still_runs_to_its_saved_report() {
    let c = cluster(1, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().expect("tempdir");
    // `run ... 2>&1 | true`: both streams closed before the first line (the banner).
    let both = dir.path().join("both.json");
    let mut cmd = session(&c, &both);
    cmd.stdout(closed_pipe()).stderr(closed_pipe());
    let out = crate::common::output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "the session's own exit code, not a panic's 101");
    let report = validate(&both);
    assert!(report.complete, "the session ran to its end and saved its report");
    let statuses: Vec<_> = report.decode.expect("decode").cells[0].attempts.iter().map(|a| a.status).collect();
    assert_eq!(statuses, [AttemptStatus::Measured]);
    // `run ... | head`: only the final tables fail; stderr shows no panic.
    let tables = dir.path().join("tables.json");
    let mut cmd = session(&c, &tables);
    cmd.stdout(closed_pipe());
    let out = crate::common::output(cmd).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(validate(&tables).complete);
}
