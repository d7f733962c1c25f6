//! Two shards of a serve session on the `--start-at` timeline (issue 27) as two headless
//! processes against the simulator: with `--request-timeout` each serve cell has a slot every
//! shard computes alike, both shards start each cell's schedule at the slot's instant (within
//! 100 ms of each other, from the reports' `shard.timeline`), and `report merge` of the two
//! reports holds every request of the single-process schedule. Without `--request-timeout`
//! the cells keep no slot and the log says why.

use crate::common;
use common::{cluster, validate};
use llm_decode_bench::report::json::SessionReport;
use llm_decode_bench::report::shard::SlotRecord;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Requests of each serve cell.
const PROMPTS: u64 = 12;

/// Starts shard `index` of 2 against `url` at `start_at` (unix s): two serve cells (12
/// requests at 24/s and 48/s, at most 4 in flight), with `extra` flags.
fn shard(url: &str, metrics: &str, index: u32, start_at: u64, out: &Path, extra: &[&str]) -> std::process::Child {
    let mut cmd = common::bin();
    cmd.args(["run", "--headless", "--base-url", url, "--metrics-url", metrics, "--plan", "serve"]);
    cmd.args(["--ctx", "32", "--conc", "4", "--request-rate", "24,48", "--num-prompts", "12", "--output", "16"]);
    cmd.args(["--shard", &format!("{index}/2"), "--start-at", &start_at.to_string(), "--session-id", "serve-tl"]);
    cmd.args(extra).arg("--out").arg(out);
    cmd.stderr(std::process::Stdio::piped()).spawn().expect("the binary starts")
}

fn finish(child: std::process::Child) -> String {
    let out = child.wait_with_output().expect("the shard ends");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "exit {:?}: {err}", out.status);
    err
}

/// Runs both shards to their end with `extra`; their reports and logs.
async fn run_both(extra: &'static [&'static str], dir: &Path) -> (Vec<SessionReport>, Vec<String>, u64) {
    let c = cluster(1, 25.0, |_| {}).await;
    let r = &c.info().replicas[0];
    let start_at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 4;
    let outs = [dir.join("s0.json"), dir.join("s1.json")];
    let kids: Vec<_> = (0..2).map(|i| shard(&r.url, &r.metrics_url, i, start_at, &outs[i as usize], extra)).collect();
    let logs = tokio::task::spawn_blocking(move || kids.into_iter().map(finish).collect::<Vec<_>>());
    let logs = tokio::time::timeout(Duration::from_secs(150), logs).await.expect("both shards end").unwrap();
    (outs.iter().map(|o| validate(o)).collect(), logs, start_at)
}

fn slots(r: &SessionReport) -> Vec<SlotRecord> {
    r.shard.as_ref().expect("a shard section").timeline.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_cells_start_together_on_both_shards_and_merge_to_the_whole_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let (reports, _, start_at) = run_both(&["--request-timeout", "5s"], dir.path()).await;
    let (a, b) = (slots(&reports[0]), slots(&reports[1]));
    assert_eq!((a.len(), b.len()), (2, 2), "both serve cells have a slot on both shards: {a:?} {b:?}");
    // 3 s lead + 12 / 24 s + 5 s + 4 s, then 3 s + 12 / 48 s + 5 s + 4 s.
    assert_eq!(a[0].slot_start_unix_s, start_at as f64);
    assert!((a[0].slot_s - 12.5).abs() < 1e-9 && (a[1].slot_s - 12.25).abs() < 1e-9, "{a:?}");
    assert!((a[1].slot_start_unix_s - (start_at as f64 + 12.5)).abs() < 1e-9);
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(
            (&x.cell, x.slot_start_unix_s, x.window_due_unix_s),
            (&y.cell, y.slot_start_unix_s, y.window_due_unix_s)
        );
        let due = x.window_due_unix_s.expect("a schedule instant");
        assert_eq!(due, x.slot_start_unix_s + 3.0, "the schedule starts after the lead");
        let (ox, oy) = (x.window_opened_unix_s.unwrap(), y.window_opened_unix_s.unwrap());
        assert!((ox - oy).abs() < 0.1, "{}: schedules started {ox} and {oy}", x.cell);
        assert!((ox - due).abs() < 0.1 && (oy - due).abs() < 0.1, "{}: {ox} {oy} vs {due}", x.cell);
        assert!((x.started_unix_s - y.started_unix_s).abs() < 0.1, "{}: slots started apart", x.cell);
    }
    // Each shard sent its k mod 2 share; the merge holds every request of the schedule.
    let merged = dir.path().join("m.json");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let args =
        ["report", "merge", &s(&dir.path().join("s0.json")), &s(&dir.path().join("s1.json")), "--out", &s(&merged)];
    let out = common::run_bin(args.map(String::from).to_vec()).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let m = validate(&merged);
    let cells = &m.serve.as_ref().expect("a merged serve section").cells;
    assert_eq!(cells.len(), 2);
    for c in cells {
        let a = &c.attempts[0];
        assert_eq!(a.metrics.completed + a.metrics.failed, PROMPTS, "{}: every request once", c.request_rate);
        assert_eq!(a.metrics.completed, PROMPTS, "{}: none cut by the timeout", c.request_rate);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_request_timeout_serve_cells_have_no_slot_and_the_log_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let (reports, logs, _) = run_both(&[], dir.path()).await;
    assert!(slots(&reports[0]).is_empty(), "{:?}", slots(&reports[0]));
    assert!(
        logs[0].contains("no slot on the timeline (its requests have no time limit (--request-timeout))"),
        "{}",
        logs[0]
    );
    let done: u64 = reports.iter().map(|r| r.serve.as_ref().unwrap().cells[0].attempts[0].metrics.completed).sum();
    assert_eq!(done, PROMPTS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversation_cells_get_slots_and_merge_their_counts() {
    let c = cluster(1, 25.0, |_| {}).await;
    let r = &c.info().replicas[0];
    let dir = tempfile::tempdir().unwrap();
    let start_at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 4;
    let outs = [dir.path().join("c0.json"), dir.path().join("c1.json")];
    let kids: Vec<_> = (0..2)
        .map(|i| {
            let mut cmd = common::bin();
            cmd.args(["run", "--headless", "--base-url", &r.url, "--metrics-url", &r.metrics_url]);
            cmd.args(["--plan", "conversation", "--num-conversations", "6", "--turns", "3", "--max-concurrency", "3"]);
            cmd.args(["--random-output-len", "8", "--think-time", "uniform:10ms..50ms", "--request-timeout", "4s"]);
            cmd.args(["--shard", &format!("{i}/2"), "--start-at", &start_at.to_string(), "--session-id", "conv-tl"]);
            cmd.arg("--out").arg(&outs[i as usize]);
            cmd.stderr(std::process::Stdio::piped()).spawn().expect("the binary starts")
        })
        .collect();
    let logs = tokio::task::spawn_blocking(move || kids.into_iter().map(finish).collect::<Vec<_>>());
    tokio::time::timeout(Duration::from_secs(150), logs).await.expect("both shards end").unwrap();
    let reports: Vec<SessionReport> = outs.iter().map(|o| validate(o)).collect();
    let opened: Vec<f64> = reports
        .iter()
        .map(|r| {
            let slot = &slots(r)[0];
            // 3 s lead, every conversation at once (inf), 3 turns of 4 s and 2 pauses of 50 ms, 4 s.
            assert!((slot.slot_s - (3.0 + 12.1 + 4.0)).abs() < 1e-9, "{slot:?}");
            slot.window_opened_unix_s.expect("its schedule started")
        })
        .collect();
    assert!((opened[0] - opened[1]).abs() < 0.1, "{opened:?}");
    let m = common::merge_validated(&outs, &dir.path().join("m.json")).await;
    let a = &m.extensions[0].cells[0].attempts[0];
    assert_eq!(a.requests, 18, "6 conversations of 3 turns, split 3 + 3");
    assert_eq!(a.ttft_p50_ms, None, "no median of the shards' medians");
}
