//! End-to-end `run --baseline FILE` (issue 12): a baseline session run in process on the
//! paused clock (its figures the engine model's, whatever the machine's load), then a session
//! the binary ran against a slowed simulator on loopback (`--speed` 5 instead of 25, which a busy
//! machine only slows further) with the first as its baseline: every delta has the sign of a
//! slowdown in the report and in the final tables. A baseline that cannot be read exits 2 before
//! any load; one that shares no cell warns.

use crate::common;

use common::{bin, cluster, output, paused_decode_session, validate};
use llm_decode_bench::report::baseline::text::DECODE_TITLE;
use llm_decode_bench::report::compare::{Better, Change};
use llm_decode_bench::sim::Cluster;
use std::path::Path;

/// A short headless decode session (ctx 1k at `conc`: its TTFT is prefill, which the speed
/// scales, not loopback overhead) against the cluster's replica, with
/// `extra` flags; returns its exit code, stdout and stderr.
async fn session(c: &Cluster, out: &Path, conc: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let r = &c.info().replicas[0];
    let mut cmd = bin();
    cmd.args(["run", "--headless", "--base-url", &r.url, "--metrics-url", &r.metrics_url])
        .args(["--ctx", "1k", "--conc", conc, "--window", "1s", "--settle", "200ms", "--warmup-timeout", "20s"])
        .args(["--min-stream-tokens", "1024", "--poll-interval", "100ms"])
        .args(extra)
        .arg("--out")
        .arg(out);
    let o = output(cmd).await;
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into(), String::from_utf8_lossy(&o.stderr).into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slowed_simulator_shows_worse_deltas_against_its_baseline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (fast, slow) = (dir.path().join("fast.json"), dir.path().join("slow.json"));
    let baseline = paused_decode_session(25.0, vec![1024], vec![1, 2], &fast).await;
    assert!(baseline.complete && validate(&fast) == baseline, "the file holds the final report");
    let tables = llm_decode_bench::report::tables::render_text(&baseline, false, false);
    assert!(!tables.contains(DECODE_TITLE), "no deltas without --baseline:\n{tables}");

    let base = fast.to_str().unwrap();
    let (code, out, err) = session(&cluster(1, 5.0, |_| {}).await, &slow, "1,2", &["--baseline", base]).await;
    assert_eq!(code, Some(0), "{err}");
    let report = validate(&slow);
    let info = report.plan.baseline.as_ref().expect("plan.baseline");
    assert_eq!((info.path.as_str(), &info.started_at), (base, &validate(&fast).started_at));
    for cell in &report.decode.as_ref().unwrap().cells {
        let f = |name: &str| cell.baseline.iter().find(|f| f.name == name).expect(name).clone();
        let (tps, ttft) = (f("aggregate_tok_s"), f("p50_ttft_ms"));
        assert_eq!((tps.better, tps.change), (Better::Higher, Change::Worse), "conc {}: {tps:?}", cell.conc);
        assert!(tps.delta_pct.unwrap() < -40.0, "a fifth of the speed: {tps:?}");
        assert_eq!((ttft.better, ttft.change), (Better::Lower, Change::Worse), "conc {}: {ttft:?}", cell.conc);
        assert!(ttft.delta_pct.unwrap() > 0.0, "{ttft:?}");
    }
    // The final tables: the delta matrix, one negative tok/s delta per column.
    let table = out.split(DECODE_TITLE).nth(1).unwrap_or_else(|| panic!("no delta matrix:\n{out}"));
    let row = table.lines().find(|l| l.starts_with("│ 1k ")).unwrap_or_else(|| panic!("no ctx 1k row:\n{table}"));
    assert_eq!(row.matches(" -").count(), 2, "{row}");
    let ttft = table.lines().nth(table.lines().position(|l| l == row).unwrap() + 1).unwrap();
    assert_eq!(ttft.matches("TTFT +").count(), 2, "TTFT rose in both cells: {ttft}");
    assert!(out.contains(base), "the legend names the file:\n{out}");
    // The progress lines: each measured cell with its deltas.
    let measured = err.lines().filter(|l| l.contains(": measured: ") && l.contains("; vs baseline tok/s -"));
    assert_eq!(measured.filter(|l| l.contains(" TTFT +")).count(), 2, "{err}");

    // A baseline without any of this plan's cells: a warning, no deltas.
    let other = dir.path().join("other.json");
    let (code, out, err) = session(&cluster(1, 25.0, |_| {}).await, &other, "3", &["--baseline", base]).await;
    assert_eq!(code, Some(0), "{err}");
    let warning = err.lines().filter(|l| l.contains("warning: --baseline") && l.contains("no result for any cell"));
    assert_eq!(warning.count(), 1, "{err}");
    assert!(validate(&other).decode.unwrap().cells.iter().all(|c| c.baseline.is_empty()));
    assert!(out.contains(DECODE_TITLE) && out.contains(" — "), "the matrix says there was nothing to compare:\n{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_baseline_that_cannot_be_read_exits_2_before_any_load() {
    let dir = tempfile::tempdir().expect("tempdir");
    let not_json = dir.path().join("notes.txt");
    std::fs::write(&not_json, "hello").unwrap();
    let missing = dir.path().join("missing.json");
    for (file, why) in [(&missing, "cannot read"), (&not_json, "not JSON")] {
        let out = dir.path().join("never.json");
        let mut cmd = bin();
        // Port 9 (discard) on loopback: nothing answers, so any load attempt would fail with 3.
        cmd.args(["run", "--headless", "--base-url", "http://127.0.0.1:9", "--baseline"])
            .arg(file)
            .arg("--out")
            .arg(&out);
        let o = output(cmd).await;
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.contains("--baseline") && err.contains(why), "{err}");
        assert!(!out.exists(), "no report written");
    }
}
