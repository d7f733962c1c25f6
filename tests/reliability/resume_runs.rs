//! `run --resume` of a session with repetitions (`--num-runs 3`): a cell stopped in its second
//! run continues the runs it lacks (the stopped attempt is no run), the next cells run their
//! three, and each cell's `runs` block is over its three measured runs.

use crate::common::{config, inproc_cluster, validate};
use llm_decode_bench::cell::control::{Command as Cmd, Phase, RunnerEvent};
use llm_decode_bench::report::json::{DecodeCell, SessionReport};
use llm_decode_bench::report::status::AttemptStatus::{Measured, Stopped};
use llm_decode_bench::session::{Prior, resume, start_session, start_with};
use std::time::Duration;

/// Longest virtual time an in-process session may take here.
const LIMIT: Duration = Duration::from_secs(600);

fn cells(r: &SessionReport) -> &[DecodeCell] {
    &r.decode.as_ref().expect("a decode section").cells
}

#[tokio::test(start_paused = true)]
async fn a_cell_stopped_mid_round_continues_the_runs_it_lacks() {
    let cluster = inproc_cluster(1, 1.0, |_| {});
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let r = &cluster.info().replicas[0];
    let mut cfg = config(&r.url, &r.metrics_url, &out, vec![0], vec![1, 2]);
    (cfg.window, cfg.decode.settle, cfg.num_runs) = (Duration::from_secs(1), Duration::from_millis(100), 3);
    let mut h = start_with(cfg.clone(), cluster.backend()).await.expect("preflight passes");
    let second_run = async {
        let mut in_second = false;
        while let Some(ev) = h.events.recv().await {
            match ev {
                RunnerEvent::CellStarted { cell: 0, run: Some(run), .. } => in_second = run.current() == 2,
                RunnerEvent::Phase { cell: 0, phase: Phase::Measuring } if in_second => return,
                _ => {}
            }
        }
    };
    tokio::time::timeout(LIMIT, second_run).await.expect("cell 0 measures its second run");
    h.commands.send(Cmd::Stop).unwrap();
    let saved = tokio::time::timeout(LIMIT, h.join).await.unwrap().unwrap();
    assert!(!saved.complete);
    assert_eq!(cells(&saved)[0].attempts.iter().map(|a| a.status).collect::<Vec<_>>(), [Measured, Stopped]);
    assert_eq!(cells(&saved)[0].runs.as_ref().map(|b| (b.n, b.attempts.clone())), Some((1, vec![1])));
    assert_eq!(saved.plan.settings.get("num-runs").map(String::as_str), Some("3"));

    let prior = Prior { resume: Some(resume::open(&out, &cfg).expect("resumable")), ..Prior::default() };
    let mut h = start_session(cfg.clone(), prior, cluster.backend(), &[]).await.expect("preflight passes");
    let mut started = Vec::new();
    let join = async {
        while let Some(ev) = h.events.recv().await {
            if let RunnerEvent::CellStarted { cell, attempt, run } = ev {
                started.push((cell, attempt, run.map(|r| r.current())));
            }
        }
        h.join.await
    };
    let done = tokio::time::timeout(LIMIT, join).await.unwrap().unwrap();
    assert_eq!(validate(&out), done);
    assert!(done.complete);
    let want = [(0, 3, Some(2)), (0, 4, Some(3)), (1, 1, Some(1)), (1, 2, Some(2)), (1, 3, Some(3))];
    assert_eq!(started, want, "cell 0 goes on with its runs 2 and 3, attempts numbered on");
    let first = &cells(&done)[0];
    assert_eq!(first.attempts.iter().map(|a| a.status).collect::<Vec<_>>(), [Measured, Stopped, Measured, Measured]);
    let block = first.runs.as_ref().expect("a runs block");
    assert_eq!((block.n, block.attempts.clone()), (3, vec![1, 3, 4]), "the stopped attempt is no run");
    assert_eq!(cells(&done)[1].runs.as_ref().map(|b| b.n), Some(3));

    // Another --num-runs cannot continue it.
    let other = llm_decode_bench::config::RunConfig { num_runs: 2, ..cfg };
    let e = resume::open(&out, &other).map(|_| ()).expect_err("refused");
    assert!(e.contains("it was run with --num-runs 3, this run has --num-runs 2"), "{e}");
}
