//! Reliability (issue 21, item 1): no command replaces a file silently. `run --out` refuses an
//! existing file that is not one of our reports, and keeps an existing report unless `--resume`
//! names it or `--overwrite` is given; `--log-file`, `report --out`, `bench --json` and
//! `sim --ready-file` are held to the same rule; all before any load (exit 2, one line).

use crate::common::{self, bin, cluster, output, validate};
use llm_decode_bench::sim::Cluster;
use std::path::Path;
use std::process::Output;

/// `run --headless` of one ctx-0 cell against `c`'s replica, to `out`, then `extra`.
fn run(c: &Cluster, out: &Path, extra: &[&str]) -> std::process::Command {
    let r = &c.info().replicas[0];
    let mut cmd = bin();
    cmd.args(["run", "--headless", "--base-url", &r.url, "--metrics-url", &r.metrics_url])
        .args(["--ctx", "0", "--conc", "1", "--window", "1s", "--settle", "200ms", "--min-stream-tokens", "1024"])
        .arg("--out")
        .arg(out)
        .args(extra);
    cmd
}

/// A refusal: exit 2, one line on stderr containing `needle`.
fn refused(out: &Output, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
}

async fn served(c: &Cluster) -> Option<f64> {
    let text = common::metrics_text(&common::client(), &c.info().replicas[0].metrics_url).await;
    common::sample_value(&text, "vllm:request_success_total")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_out_keeps_every_existing_file_unless_told() {
    let c = cluster(1, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "my precious notes\n").expect("seeded");
    refused(&output(run(&c, &notes, &[])).await, "exists and is not a session report; --overwrite replaces it");
    assert_eq!(std::fs::read_to_string(&notes).expect("kept"), "my precious notes\n");
    assert_eq!(served(&c).await, Some(0.0), "refused before any load");

    // A finished report is kept, and named as one.
    let done = dir.path().join("done.json");
    let first = output(run(&c, &done, &[])).await;
    assert_eq!(first.status.code(), Some(0), "{}", String::from_utf8_lossy(&first.stderr));
    let before = std::fs::read(&done).expect("report");
    refused(&output(run(&c, &done, &[])).await, "holds a complete session report");
    assert_eq!(std::fs::read(&done).expect("kept"), before, "byte for byte");

    // An interrupted one too, with --resume offered; the log file is never the report.
    let mut part = validate(&done);
    part.complete = false;
    let partial = dir.path().join("part.json");
    std::fs::write(&partial, serde_json::to_vec_pretty(&part).expect("json")).expect("seeded");
    let shown = partial.display().to_string();
    refused(&output(run(&c, &partial, &[])).await, &format!("--resume {shown} continues it"));
    let other = dir.path().join("other.json");
    refused(&output(run(&c, &other, &["--log-file", &shown])).await, "log lines would break it");
    let log_is_out = ["--log-file", other.to_str().expect("UTF-8")];
    refused(&output(run(&c, &other, &log_is_out)).await, "is the report file");
    assert!(!other.exists());
    let served_before = served(&c).await;

    // --overwrite replaces it.
    let again = output(run(&c, &notes, &["--overwrite"])).await;
    assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
    assert!(validate(&notes).complete);
    assert!(served(&c).await > served_before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn derived_outputs_replace_only_their_own_kind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/report_example.json");
    let notes = dir.path().join("notes.md");
    std::fs::write(&notes, "mine").expect("seeded");
    let shown = notes.to_str().expect("UTF-8");
    let report = |extra: &[&str]| {
        let mut cmd = bin();
        cmd.args(["report", fixture, "--format", "markdown", "--out", shown]).args(extra);
        output(cmd)
    };
    refused(&report(&[]).await, "--out ");
    assert_eq!(std::fs::read_to_string(&notes).expect("kept"), "mine");
    assert_eq!(report(&["--overwrite"]).await.status.code(), Some(0));
    assert!(std::fs::read_to_string(&notes).expect("rendered").starts_with("# llm-decode-bench"));

    // Checked before the bench measures or the simulator listens.
    let mut bench = bin();
    bench.args(["bench", "--json", fixture]);
    refused(&output(bench).await, "holds a complete session report");
    let mut sim = bin();
    sim.args(["sim", "--port", "0", "--ready-file", shown]);
    refused(&output(sim).await, "--ready-file ");
}
