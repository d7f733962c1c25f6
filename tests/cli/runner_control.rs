//! The runner's control paths (pause, resume, skip, re-run, stop) and a plain run, on tokio's
//! paused clock against the simulator in process: no socket, no wall-clock wait. Each test
//! drives the session through its handles and waits on runner events; time only moves when
//! every task waits, so the same commands land at the same points of the run every time.

use crate::common;

use common::{config, inproc_cluster, validate};
use llm_decode_bench::cell::control::{Command, Knob, Phase, RunnerEvent};
use llm_decode_bench::config::RunConfig;
use llm_decode_bench::report::json::{DecodeCell, SessionReport};
use llm_decode_bench::session::{SessionHandles, start_with};
use llm_decode_bench::sim::inproc::InProcCluster;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

/// Longest a test may run, in virtual time: a hang fails instead of spinning for ever.
const LIMIT: Duration = Duration::from_secs(600);

/// A running session over an in-process one-replica cluster, with every event it sent.
struct Session {
    cluster: InProcCluster,
    h: SessionHandles,
    out: PathBuf,
    events: Vec<RunnerEvent>,
    _dir: tempfile::TempDir,
}

/// Starts a decode session over `ctx x conc` with 1 s windows, at the engine's real speed.
async fn session(ctx: Vec<u64>, conc: Vec<u32>) -> Session {
    session_with(ctx, conc, |_| {}).await
}

/// [`session`] with its configuration changed by `tweak`.
async fn session_with(ctx: Vec<u64>, conc: Vec<u32>, tweak: impl FnOnce(&mut RunConfig)) -> Session {
    let cluster = inproc_cluster(1, 1.0, |_| {});
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.json");
    let r = &cluster.info().replicas[0];
    let mut cfg = config(&r.url, &r.metrics_url, &out, ctx, conc);
    cfg.window = Duration::from_secs(1);
    cfg.decode.settle = Duration::from_millis(100);
    tweak(&mut cfg);
    let h = start_with(cfg, cluster.backend()).await.expect("preflight passes");
    Session { cluster, h, out, events: Vec::new(), _dir: dir }
}

impl Session {
    /// Waits for the next event `pred` picks.
    async fn until(&mut self, what: &str, pred: impl Fn(&RunnerEvent) -> bool) {
        let wait = async {
            while let Some(ev) = self.h.events.recv().await {
                let hit = pred(&ev);
                self.events.push(ev);
                if hit {
                    return;
                }
            }
            panic!("the session ended before {what}");
        };
        tokio::time::timeout(LIMIT, wait).await.unwrap_or_else(|_| panic!("no {what} in {LIMIT:?}"));
    }

    async fn until_phase(&mut self, cell: usize, phase: Phase) {
        let what = format!("cell {cell} {}", phase.as_str());
        self.until(&what, |e| *e == RunnerEvent::Phase { cell, phase }).await;
    }

    async fn until_finished(&mut self, cell: usize) {
        self.until(
            &format!("cell {cell} finished"),
            |e| matches!(e, RunnerEvent::CellFinished { cell: c, .. } if *c == cell),
        )
        .await;
    }

    fn send(&self, cmd: Command) {
        self.h.commands.send(cmd).expect("the runner reads commands");
    }

    /// Events already sent that nobody waited for yet.
    fn pending_events(&mut self) -> Vec<RunnerEvent> {
        let mut out = Vec::new();
        while let Ok(ev) = self.h.events.try_recv() {
            out.push(ev.clone());
            self.events.push(ev);
        }
        out
    }

    /// Waits for the runner's final report; checks the file holds it and passes the schema.
    async fn report(mut self) -> (SessionReport, Session) {
        let join = &mut self.h.join;
        let report = tokio::time::timeout(LIMIT, join).await.expect("the session ends").expect("the runner ran");
        self.pending_events();
        assert_eq!(validate(&self.out), report, "the file holds the final report");
        (report, self)
    }

    /// (cell, attempt) of every attempt started, in order.
    fn started(&self) -> Vec<(usize, u32)> {
        let started = self.events.iter().filter_map(|e| match e {
            RunnerEvent::CellStarted { cell, attempt, .. } => Some((*cell, *attempt)),
            _ => None,
        });
        started.collect()
    }
}

/// The report name of a status (a string or an enum that serialises to one).
fn name(status: &impl Serialize) -> String {
    serde_json::to_value(status).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

fn cells(r: &SessionReport) -> &[DecodeCell] {
    &r.decode.as_ref().expect("a decode section").cells
}

fn statuses(c: &DecodeCell) -> Vec<String> {
    c.attempts.iter().map(|a| name(&a.status)).collect()
}

/// (action, cell label) of every logged action, in order.
fn actions(r: &SessionReport) -> Vec<(String, Option<String>)> {
    r.actions.iter().map(|a| (a.action.clone(), a.cell.clone())).collect()
}

fn action(name: &str, cell: Option<&str>) -> (String, Option<String>) {
    (name.to_string(), cell.map(str::to_string))
}

#[tokio::test(start_paused = true)]
async fn a_plain_run_measures_every_cell_and_agrees_with_the_sim() {
    let s = session(vec![0, 1024], vec![1, 2]).await;
    let (report, s) = s.report().await;
    assert!(report.complete);
    assert_eq!(s.started(), [(0, 1), (1, 1), (2, 1), (3, 1)]);
    let mut client_tokens = 0;
    let mut requests = 0;
    for c in cells(&report) {
        assert_eq!(
            (name(&c.status), statuses(c)),
            ("measured".into(), vec!["measured".to_string()]),
            "{}",
            c.ctx_label
        );
        let a = &c.attempts[0];
        assert!(
            a.aggregate_tps > 0.0 && a.window_tokens > 0,
            "{} x {}: {} tok/s",
            c.ctx_label,
            c.conc,
            a.aggregate_tps
        );
        assert_eq!(name(&a.aggregate_source), "openai_continuous_usage");
        let ratio = a.prometheus.as_ref().and_then(|p| p.client_over_server).expect("a server rate");
        assert!((ratio - 1.0).abs() < 0.05, "{} x {}: client/server {ratio}", c.ctx_label, c.conc);
        client_tokens += a.request_samples.iter().map(|r| r.output_tokens).sum::<u64>();
        requests += a.request_samples.len() as u64;
    }
    // The client never sees more than the engine made; a cut stream loses at most the
    // tokens of the step in flight when it was cut.
    let server_tokens = s.cluster.replica_stats(0).unwrap().generation_tokens;
    assert!(
        client_tokens <= server_tokens && server_tokens - client_tokens <= requests,
        "client {client_tokens} tokens, sim {server_tokens}, {requests} requests"
    );
}

#[tokio::test(start_paused = true)]
async fn pause_keeps_the_attempt_and_resume_runs_the_cell_again_from_warmup() {
    let mut s = session(vec![0], vec![1, 2]).await;
    s.until_phase(1, Phase::Measuring).await;
    s.send(Command::Pause);
    s.until_finished(1).await;
    // The load is gone: the sim's own gauge, as polled, drops to zero; meanwhile no cell starts.
    let mut metrics = s.h.metrics.clone().expect("polling");
    let idle = metrics.wait_for(|m| m.running_total() == Some(0.0));
    tokio::time::timeout(LIMIT, idle).await.expect("the running gauge drops").expect("the poller runs");
    assert_eq!(s.cluster.replica_stats(0).unwrap().running, 0);
    let idle_events = s.pending_events();
    assert!(!idle_events.iter().any(|e| matches!(e, RunnerEvent::CellStarted { .. })), "{idle_events:?}");
    s.send(Command::Resume);
    s.until("cell 1 attempt 2", |e| *e == RunnerEvent::CellStarted { cell: 1, attempt: 2, run: None }).await;
    s.until_phase(1, Phase::Warming).await;
    let (report, s) = s.report().await;
    assert!(report.complete);
    assert_eq!(s.started(), [(0, 1), (1, 1), (1, 2)]);
    let cell = &cells(&report)[1];
    assert_eq!((name(&cell.status), statuses(cell)), ("measured".into(), vec!["paused".into(), "measured".into()]));
    let logged: Vec<_> = actions(&report).into_iter().filter(|(a, _)| a == "pause" || a == "resume").collect();
    assert_eq!(logged, [action("pause", Some("ctx=0 conc=2")), action("resume", None)]);
    let resumed = report.actions.iter().find(|a| a.action == "resume").unwrap().at_s;
    let again = &cell.attempts[1];
    assert!(
        again.started_s >= resumed && again.warmup_s > 0.0,
        "attempt 2 at {} s, warmup {} s",
        again.started_s,
        again.warmup_s
    );
}

#[tokio::test(start_paused = true)]
async fn skip_ends_the_running_cell_and_drops_a_pending_one() {
    let mut s = session(vec![0], vec![1, 2, 3]).await;
    s.until_phase(0, Phase::Measuring).await;
    s.send(Command::Skip(Some(2)));
    s.send(Command::Skip(None));
    let (report, s) = s.report().await;
    assert!(report.complete);
    assert_eq!(s.started(), [(0, 1), (1, 1)], "the skipped pending cell never starts");
    let c = cells(&report);
    assert_eq!(
        (name(&c[0].status), statuses(&c[0])),
        ("skipped_by_operator".into(), vec!["skipped_by_operator".into()])
    );
    assert_eq!((name(&c[1].status), statuses(&c[1])), ("measured".into(), vec!["measured".into()]));
    assert_eq!((name(&c[2].status), c[2].attempts.len()), ("skipped_by_operator".into(), 0));
    let skips: Vec<_> = actions(&report).into_iter().filter(|(a, _)| a == "skip").collect();
    assert_eq!(skips, [action("skip", Some("ctx=0 conc=3")), action("skip", Some("ctx=0 conc=1"))]);
}

#[tokio::test(start_paused = true)]
async fn rerun_of_a_finished_cell_keeps_both_attempts() {
    let mut s = session(vec![0], vec![1, 2]).await;
    s.until_finished(0).await;
    s.send(Command::Rerun(0));
    let (report, s) = s.report().await;
    assert!(report.complete);
    assert_eq!(s.started(), [(0, 1), (1, 1), (0, 2)], "the re-run comes after the running cell");
    let c = cells(&report);
    assert_eq!((name(&c[0].status), statuses(&c[0])), ("measured".into(), vec!["measured".into(), "measured".into()]));
    assert_eq!(statuses(&c[1]), ["measured"]);
    assert!(actions(&report).contains(&action("rerun", Some("ctx=0 conc=1"))));
}

#[tokio::test(start_paused = true)]
async fn stop_mid_cell_records_a_stopped_attempt_and_an_incomplete_report() {
    let mut s = session(vec![0, 1024], vec![1, 2]).await;
    s.until_phase(0, Phase::Measuring).await;
    s.send(Command::Stop);
    let (report, s) = s.report().await;
    assert!(!report.complete);
    assert_eq!(s.started(), [(0, 1)]);
    let c = cells(&report);
    assert_eq!(statuses(&c[0]), ["stopped"]);
    assert!(c[1..].iter().all(|c| c.attempts.is_empty()), "nothing runs after a stop");
    let logged = actions(&report);
    let stop = logged.iter().position(|a| *a == action("stop", Some("ctx=0 conc=1"))).expect("stop logged");
    assert_eq!(logged.get(stop + 1), Some(&action("stopped", None)), "{logged:?}");
    assert_eq!(s.events.last(), Some(&RunnerEvent::Finished));
}

/// A shard (`--shard 0/2`) applies no command that would put it out of step with the other
/// shards, whichever path sends it (not only the monitor's keys): pause, resume, skip, re-run
/// and the knob are each answered with the note and change nothing; stop still ends it.
#[tokio::test(start_paused = true)]
async fn a_shard_refuses_every_command_that_would_desync_it() {
    let shard = llm_decode_bench::config::shard::ShardSpec::new(0, 2).unwrap();
    let mut s = session_with(vec![0], vec![2, 4], |cfg| cfg.shard = Some(shard)).await;
    s.until_phase(0, Phase::Measuring).await;
    let refused =
        [Command::Pause, Command::Resume, Command::Skip(None), Command::Skip(Some(1)), Command::Knob(Knob::Up)];
    for cmd in refused {
        s.send(cmd);
    }
    s.until_finished(0).await;
    s.send(Command::Rerun(0));
    let (report, s) = s.report().await;
    let note = "sharded run: pause/skip/re-run/knob are not applied, they would put shard 0/2 out of step";
    let notes = s.events.iter().filter(|e| matches!(e, RunnerEvent::Log(l) if l.starts_with(note))).count();
    assert_eq!(notes, 6, "each refused command answered: {:?}", s.events);
    assert!(report.complete);
    assert_eq!(s.started(), [(0, 1), (1, 1)], "nothing paused, skipped or run again");
    let c = cells(&report);
    assert_eq!(statuses(&c[0]), ["measured"]);
    assert_eq!(statuses(&c[1]), ["measured"]);
    assert!(c[0].attempts[0].levels.is_empty(), "the knob did not move the load");
    let applied: Vec<_> =
        actions(&report).into_iter().map(|(a, _)| a).filter(|a| a != "start" && a != "finished").collect();
    assert!(applied.is_empty(), "no operator action recorded: {applied:?}");
}
