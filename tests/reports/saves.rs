//! End-to-end: the report writer thread. The report is written once at the start; a save asked
//! for mid-cell lands on disk while the cell keeps measuring; the final report is written,
//! returned and announced before the end.

use crate::common;

use common::{cluster, config, validate};
use llm_decode_bench::cell::control::{Command, Phase, RunnerEvent};
use llm_decode_bench::session::start;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_mid_cell_is_written_without_ending_the_cell() {
    let c = cluster(1, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("saved.json");
    let r = &c.info().replicas[0];
    let mut cfg = config(&r.url, &r.metrics_url, &out, vec![0], vec![1]);
    cfg.window = Duration::from_secs(30);
    let mut h = start(cfg).await.expect("preflight");
    let (mut started_write, mut measuring) = (false, false);
    while !(started_write && measuring) {
        match h.events.recv().await.expect("runner alive") {
            RunnerEvent::Phase { phase: Phase::Measuring, .. } => measuring = true,
            RunnerEvent::Saved(path) => {
                assert!(!started_write, "one write at the start, then none until a cell ends or a save");
                assert_eq!(path, out.display().to_string());
                started_write = true;
            }
            _ => {}
        }
    }
    let first = validate(&out);
    let actions: Vec<&str> = first.actions.iter().map(|a| a.action.as_str()).collect();
    assert_eq!((first.complete, actions), (false, vec!["start"]), "the report written at the start");
    h.commands.send(Command::Save).expect("runner listens");
    // The window is 30 s long: the only write before it ends is the one asked for.
    let saved = loop {
        match h.events.recv().await.expect("runner alive") {
            RunnerEvent::Saved(path) => break path,
            RunnerEvent::CellFinished { .. } => panic!("the cell ended before the save"),
            _ => {}
        }
    };
    assert_eq!(saved, out.display().to_string());
    let mid = validate(&out);
    assert!(!mid.complete);
    let cell = &mid.decode.as_ref().expect("decode section").cells[0];
    assert_eq!((cell.status.as_str(), cell.attempts.len()), ("pending", 0), "the cell is still running");
    let actions: Vec<&str> = mid.actions.iter().map(|a| a.action.as_str()).collect();
    assert_eq!(actions, ["start", "save"]);

    h.commands.send(Command::Stop).expect("runner listens");
    let mut tail = Vec::new();
    while let Some(ev) = h.events.recv().await {
        let end = ev == RunnerEvent::Finished;
        tail.push(ev);
        if end {
            break;
        }
    }
    let report = tokio::time::timeout(Duration::from_secs(20), h.join).await.expect("stops promptly").expect("runner");
    assert!(validate(&out) == report, "the file holds the returned final report");
    assert_eq!(report.decode.as_ref().expect("decode").cells[0].attempts[0].status.as_str(), "stopped");
    let last_two: Vec<_> = tail.iter().rev().take(2).rev().cloned().collect();
    assert_eq!(last_two, [RunnerEvent::Saved(out.display().to_string()), RunnerEvent::Finished]);
}
