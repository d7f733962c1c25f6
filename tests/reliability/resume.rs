//! Reliability: `run --resume FILE` continues an interrupted session (finished cells kept, the
//! rest run) with the flags its report records (none retyped), and refuses a flag that differs,
//! a foreign JSON and a complete session in one line, before any load is sent (exit 2, README
//! "Exit codes").

use super::exits::Running;
use crate::common::{self, cluster, config, inproc_cluster, validate};
use llm_decode_bench::cell::control::{Command as Cmd, Phase, RunnerEvent};
use llm_decode_bench::report::json::{DecodeCell, SessionReport};
use llm_decode_bench::report::status::AttemptStatus;
use llm_decode_bench::session::{Prior, resume, start_session, start_with};
use llm_decode_bench::sim::Cluster;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Longest virtual time an in-process session may take here.
const LIMIT: Duration = Duration::from_secs(600);

fn cells(r: &SessionReport) -> &[DecodeCell] {
    &r.decode.as_ref().expect("a decode section").cells
}

fn statuses(c: &DecodeCell) -> Vec<AttemptStatus> {
    c.attempts.iter().map(|a| a.status).collect()
}

#[tokio::test(start_paused = true)]
async fn a_stopped_session_resumes_with_its_finished_cells_kept() {
    let cluster = inproc_cluster(1, 1.0, |_| {});
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let r = &cluster.info().replicas[0];
    let mut cfg = config(&r.url, &r.metrics_url, &out, vec![0], vec![1, 2, 3]);
    cfg.window = Duration::from_secs(1);
    cfg.decode.settle = Duration::from_millis(100);
    let mut h = start_with(cfg.clone(), cluster.backend()).await.expect("preflight passes");
    let measuring = async {
        while let Some(ev) = h.events.recv().await {
            if ev == (RunnerEvent::Phase { cell: 1, phase: Phase::Measuring }) {
                return;
            }
        }
    };
    tokio::time::timeout(LIMIT, measuring).await.expect("cell 1 measures");
    h.commands.send(Cmd::Stop).unwrap();
    let saved = tokio::time::timeout(LIMIT, h.join).await.unwrap().unwrap();
    assert!(!saved.complete);
    let before: Vec<_> = cells(&saved).iter().map(statuses).collect();
    assert_eq!(before, [vec![AttemptStatus::Measured], vec![AttemptStatus::Stopped], vec![]]);

    let prior =
        Prior { resume: Some(resume::open(&out, &cfg).expect("the saved session can be resumed")), ..Prior::default() };
    let mut h = start_session(cfg, prior, cluster.backend(), &[]).await.expect("preflight passes");
    let mut started = Vec::new();
    let join = async {
        while let Some(ev) = h.events.recv().await {
            if let RunnerEvent::CellStarted { cell, attempt, .. } = ev {
                started.push((cell, attempt));
            }
        }
        h.join.await
    };
    let done = tokio::time::timeout(LIMIT, join).await.unwrap().unwrap();
    assert_eq!(validate(&out), done, "the report went back to the resumed file");
    assert!(done.complete);
    assert_eq!(started, [(1, 2), (2, 1)], "only the unfinished cells ran, attempts numbered on");
    assert_eq!(cells(&done)[0], cells(&saved)[0], "the finished cell is kept as it was");
    let after: Vec<_> = cells(&done).iter().map(statuses).collect();
    assert_eq!(after[1], [AttemptStatus::Stopped, AttemptStatus::Measured], "the stopped attempt is kept");
    assert_eq!(after[2], [AttemptStatus::Measured]);
    assert_eq!(done.started_at, saved.started_at, "one session, one start");
    assert_eq!(done.actions[..saved.actions.len()], saved.actions[..], "the saved actions come first");
    let resumed = &done.actions[saved.actions.len()].action;
    assert!(resumed.contains("1 cell(s) kept, 2 to run"), "{resumed}");
    for (name, points) in &saved.replica_series {
        assert!(done.replica_series[name].len() > points.len(), "{name}: the saved series is kept and goes on");
    }
}

/// `run --headless` against the cluster's replica: two ctx-0 cells (conc 1 and 2), then `extra`.
fn run_cmd(c: &Cluster, out: &Path, window: &str, extra: &[&str]) -> Command {
    super::exits::run_cmd_conc(c, out, window, "1,2", extra)
}

/// A refused resume: exit 2, one line on stderr containing `needle`.
fn refused(cmd: Command, needle: &str) {
    let (status, stderr) = Running::spawn(cmd).wait();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--resume ") && stderr.contains(needle), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_resumes_after_sigterm_and_refuses_what_it_cannot_continue() {
    let c = cluster(1, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("r.json");
    let mut run = Running::spawn(run_cmd(&c, &out, "2s", &[]));
    run.wait_line("ctx=0 conc=2: measuring");
    run.signal("TERM");
    let (status, stderr) = run.wait();
    assert_eq!(status.code(), Some(143), "{stderr}");
    let saved = validate(&out);
    let copy = dir.path().join("copy.json");
    std::fs::copy(&out, &copy).unwrap();
    let url = &c.info().replicas[0].metrics_url;
    let served = || async {
        common::sample_value(&common::metrics_text(&common::client(), url).await, "vllm:request_success_total")
    };
    let before = served().await;

    let other = dir.path().join("other.json");
    refused(run_cmd(&c, &other, "3s", &["--resume", copy.to_str().unwrap()]), "--window 2s, this run has --window 3s");
    let foreign = dir.path().join("vllm.json");
    std::fs::write(&foreign, r#"{"backend":"vllm","completed":64}"#).unwrap();
    refused(run_cmd(&c, &other, "2s", &["--resume", foreign.to_str().unwrap()]), "not an llm-decode-bench");
    assert_eq!(served().await, before, "a refused resume sends no load");

    // `--resume FILE` alone: every flag of the original run comes back from the report.
    let mut alone = Command::new(env!("CARGO_BIN_EXE_llm-decode-bench"));
    alone.args(["run", "--headless", "--resume"]).arg(&copy).env_remove("OPENAI_API_KEY");
    alone.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let (status, stderr) = Running::spawn(alone).wait();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let done = validate(&copy);
    assert_eq!(done.plan.settings, saved.plan.settings, "the same settings");
    assert_eq!(done.target.replica_info, saved.target.replica_info, "the same metrics pages");
    assert!(done.complete, "{stderr}");
    assert_eq!(cells(&done)[0], cells(&saved)[0], "the measured cell is kept");
    assert_eq!(statuses(&cells(&done)[1]), [AttemptStatus::Stopped, AttemptStatus::Measured]);
    refused(run_cmd(&c, &other, "2s", &["--resume", copy.to_str().unwrap()]), "nothing to resume");
    assert!(served().await > before, "the resumed run sent load");
    assert!(!other.exists(), "no refused run wrote a report");
}
