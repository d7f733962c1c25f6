//! A killed shard resumed (`run --resume FILE --start-at T`, issue 27): two shards of a
//! two-cell decode session against the simulator, shard 1 SIGKILLed in its second cell, then
//! resumed with a new `--start-at` (the saved one has passed). It re-runs only the unfinished
//! cell, in the same session; `report merge` of the two reports is complete, and its warnings
//! name the cell whose shards ran at different timeline starts (and only that one).

use crate::common;
use common::{cluster, validate};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// Shard `index` of 2 against `url` at `start_at`: cells conc 2 then conc 4, 1 s windows.
fn shard(url: &str, metrics: &str, index: u32, start_at: u64, out: &Path) -> std::process::Child {
    let mut cmd = common::bin();
    cmd.args(["run", "--headless", "--base-url", url, "--metrics-url", metrics, "--plan", "decode"]);
    cmd.args(["--ctx", "64", "--conc", "2,4", "--window", "1s", "--warmup-timeout", "1s"]);
    cmd.args(["--shard", &format!("{index}/2"), "--start-at", &start_at.to_string()]);
    cmd.arg("--out").arg(out);
    cmd.spawn().expect("the binary starts")
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_shard_resumed_at_a_new_start_merges_complete_with_a_note() {
    let c = cluster(1, 25.0, |_| {}).await;
    let r = c.info().replicas[0].clone();
    let dir = tempfile::tempdir().unwrap();
    let outs = [dir.path().join("shard-0.json"), dir.path().join("shard-1.json")];
    let start_at = unix_now() + 3;
    let first = shard(&r.url, &r.metrics_url, 0, start_at, &outs[0]);
    let mut killed = shard(&r.url, &r.metrics_url, 1, start_at, &outs[1]);
    // The second cell's slot starts 1 s warmup + 1 s window + the 14 s drain allowance later;
    // its window is open from 1 s into the slot.
    let kill_at = UNIX_EPOCH + Duration::from_secs(start_at + 16) + Duration::from_millis(1_500);
    tokio::time::sleep(kill_at.duration_since(SystemTime::now()).unwrap_or_default()).await;
    killed.kill().expect("SIGKILL");
    killed.wait().unwrap();
    let first = tokio::task::spawn_blocking(move || first.wait_with_output().unwrap());
    let first = tokio::time::timeout(Duration::from_secs(120), first).await.expect("shard 0 ends").unwrap();
    assert!(first.status.success(), "{}", stderr(&first));
    let saved = validate(&outs[1]);
    assert!(!saved.complete, "the killed shard's report is unfinished");
    let id = saved.shard.as_ref().unwrap().session_id.clone();

    // Resumed with a new start: the saved one passed long ago.
    let new_start = unix_now() + 3;
    let mut resume = common::bin();
    resume.args(["run", "--headless", "--resume", outs[1].to_str().unwrap(), "--start-at", &new_start.to_string()]);
    let out = common::output(resume).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let resumed = validate(&outs[1]);
    assert!(resumed.complete);
    let shard = resumed.shard.as_ref().unwrap();
    assert_eq!((shard.session_id.as_str(), shard.start_at_unix_s), (id.as_str(), Some(new_start as f64)));
    assert!(
        resumed.actions.iter().any(|a| a.action.contains("on a new timeline: --start-at")),
        "{:?}",
        resumed.actions
    );
    let cells = &resumed.decode.as_ref().unwrap().cells;
    assert_eq!(cells.iter().map(|c| c.attempts.len()).collect::<Vec<_>>(), [1, 1], "each cell ran once");
    let slot_of = |cell: &str| {
        let starts: Vec<f64> =
            shard.timeline.iter().filter(|s| s.cell.contains(cell)).map(|s| s.slot_start_unix_s).collect();
        starts
    };
    assert_eq!(slot_of("conc=2"), [start_at as f64], "the kept cell keeps its slot");
    assert_eq!(slot_of("conc=4"), [new_start as f64], "the re-run cell is on the new timeline");

    let mut merge = common::bin();
    let merged_path = dir.path().join("merged.json");
    merge.args(["report", "merge"]).args(&outs).arg("--out").arg(&merged_path);
    let out = common::output(merge).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let merged = validate(&merged_path);
    assert!(merged.complete, "{:?}", merged.warnings);
    let notes: Vec<&String> = merged.warnings.iter().filter(|w| w.contains("different timeline starts")).collect();
    assert_eq!(notes.len(), 1, "{:?}", merged.warnings);
    let note = notes[0];
    assert!(note.starts_with("merge: ") && note.contains("conc=4") && !note.contains("conc=2"), "{note}");
    assert!(note.contains("shard 0 at") && note.contains("shard 1 at"), "{note}");
    assert!(stderr(&out).contains("different timeline starts"), "said on stderr too");
    let requested: Vec<u32> = merged.decode.as_ref().unwrap().cells.iter().map(|c| c.attempts[0].requested).collect();
    assert_eq!(requested, [2, 4], "both cells whole: 1 + 1 and 2 + 2 streams");
}
