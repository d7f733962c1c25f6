//! The monitor's loop drives a real session against the simulator with scripted keys: pause,
//! resume, skip, re-run, save, quit; the report then holds every attempt and action. Ctrl-C
//! once stops the session with the report saved, twice leaves at once; both exit 130.

use crate::common;

use common::{cluster, config};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use llm_decode_bench::cell::control::{LiveAttempt, Phase};
use llm_decode_bench::cmd::exit::{self, SessionEnd};
use llm_decode_bench::config::RunConfig;
use llm_decode_bench::report::json::SessionReport;
use llm_decode_bench::session::snapshot::SessionSnapshot;
use llm_decode_bench::session::start;
use llm_decode_bench::session::state::CellStatus;
use llm_decode_bench::tui::{Abandoned, ChannelInput, Ending, LoopOptions, run_loop};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// The common small decode configuration: one context, four concurrencies, 1 s windows.
fn session_config(base: &str, metrics: &str, out: &Path) -> RunConfig {
    let mut cfg = config(base, metrics, out, vec![0], vec![1, 2, 3, 4]);
    cfg.window = Duration::from_millis(1000);
    cfg.decode.warmup_timeout = Duration::from_secs(10);
    cfg.decode.settle = Duration::from_millis(100);
    cfg
}

/// Waits until `pred` holds for the channel's value (or fails the test after 15 s).
async fn until<T>(rx: &mut watch::Receiver<T>, what: &str, pred: impl Fn(&T) -> bool) {
    let wait = async {
        while !pred(&rx.borrow_and_update()) {
            rx.changed().await.expect("the session is still running");
        }
    };
    tokio::time::timeout(Duration::from_secs(15), wait).await.unwrap_or_else(|_| panic!("timed out waiting: {what}"));
}

/// Polls `pred` every 20 ms for at most 5 s.
async fn eventually(what: &str, mut pred: impl FnMut() -> bool) {
    for _ in 0..250 {
        if pred() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting: {what}");
}

fn press(keys: &mpsc::UnboundedSender<Event>, code: KeyCode) {
    keys.send(Event::Key(KeyEvent::new(code, KeyModifiers::NONE))).expect("the loop reads keys");
}

fn status(s: &SessionSnapshot, cell: usize) -> CellStatus {
    s.cells[cell].status.clone()
}

fn report_actions(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let report: Option<SessionReport> = serde_json::from_str(&text).ok();
    report.map(|r| r.actions.into_iter().map(|a| a.action).collect()).unwrap_or_default()
}

/// The loop task of [`spawn_ui`]: its result and the terminal of the last frame.
type UiTask = tokio::task::JoinHandle<(anyhow::Result<(SessionReport, Ending)>, Terminal<TestBackend>)>;

/// The monitor's loop over `h` in a 120x40 `TestBackend`, fed by the returned key sender.
fn spawn_ui(h: llm_decode_bench::session::SessionHandles) -> (mpsc::UnboundedSender<Event>, UiTask) {
    let (keys, rx) = mpsc::unbounded_channel();
    let ui = tokio::spawn(async move {
        let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
        let result = run_loop(&mut terminal, h, ChannelInput(rx), LoopOptions { fps: 30, log_widget: false }).await;
        (result, terminal)
    });
    (keys, ui)
}

type Snap = watch::Receiver<Arc<SessionSnapshot>>;

/// Polls `pred` every 20 ms of real time for at most 5 s, off the runtime (a blocking task holds
/// a paused clock still): for what another thread does, such as the report writer.
async fn eventually_real(what: &'static str, mut pred: impl FnMut() -> bool + Send + 'static) {
    let poll = move || {
        for _ in 0..250 {
            if pred() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    };
    assert!(tokio::task::spawn_blocking(poll).await.unwrap(), "timed out waiting: {what}");
}

/// p, p, s on cell 1; then h x5 (cell 0), r, w.
async fn script(
    keys: &mpsc::UnboundedSender<Event>,
    snap: &mut Snap,
    live: &mut watch::Receiver<LiveAttempt>,
    c: &llm_decode_bench::sim::inproc::InProcCluster,
    out: &Path,
) {
    until(live, "cell 1 measuring", |l| l.cell == Some(1) && l.phase == Phase::Measuring).await;
    assert!(c.replica_stats(0).unwrap().running > 0, "load flows");
    press(keys, KeyCode::Char('p'));
    until(snap, "paused", |s| s.paused && status(s, 1) == CellStatus::Pending && s.cells[1].attempts == 1).await;
    eventually("the sim's running gauge drops to 0", || c.replica_stats(0).unwrap().running == 0).await;
    press(keys, KeyCode::Char('p'));
    until(snap, "resumed", |s| !s.paused && s.current == Some(1)).await;
    press(keys, KeyCode::Char('s'));
    until(snap, "skipped", |s| status(s, 1) == CellStatus::SkippedByOperator).await;
    for _ in 0..5 {
        press(keys, KeyCode::Char('h'));
    }
    press(keys, KeyCode::Char('r'));
    until(snap, "cell 0 ran again", |s| s.cells[0].attempts == 2 && status(s, 0) == CellStatus::Measured).await;
    press(keys, KeyCode::Char('w'));
    let out = out.to_path_buf();
    eventually_real("the saved report lists the save", move || report_actions(&out).iter().any(|a| a == "save")).await;
}

/// The scripted keys on the paused clock against the in-process cluster: a 1 s window outlasts
/// the key presses however busy the machine is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_keys_pause_resume_skip_rerun_save_and_quit() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tui.json");
    let path = out.clone();
    let (result, terminal) = common::paused(move || async move {
        let c = common::inproc_cluster(1, 25.0, |_| {});
        let r = &c.info().replicas[0];
        let cfg = session_config(&r.url, &r.metrics_url, &path);
        let h = llm_decode_bench::session::start_with(cfg, c.backend()).await.expect("preflight passes");
        let (mut snap, mut live) = (h.snapshot.clone(), h.live.clone());
        let (keys, ui) = spawn_ui(h);
        script(&keys, &mut snap, &mut live, &c, &path).await;
        press(&keys, KeyCode::Char('q'));
        press(&keys, KeyCode::Char('y'));
        tokio::time::timeout(Duration::from_secs(20), ui).await.expect("quits").unwrap()
    })
    .await;
    let (report, ending) = result.expect("the loop returns the report");
    assert_eq!(ending, Ending::Quit, "q, y mid-session is the operator's quit (exit 6)");
    assert!(!report.complete, "stopped before the end");
    let file: SessionReport = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(file, report, "the file holds the final report");

    let cells = &report.decode.as_ref().unwrap().cells;
    let statuses = |i: usize| cells[i].attempts.iter().map(|a| a.status.as_str()).collect::<Vec<_>>();
    assert_eq!(statuses(0), ["measured", "measured"], "re-run keeps both attempts");
    assert_eq!(statuses(1), ["paused", "skipped_by_operator"]);
    assert_eq!(cells[1].status.as_str(), "skipped_by_operator");
    let actions: Vec<(&str, f64)> = report.actions.iter().map(|a| (a.action.as_str(), a.at_s)).collect();
    let mut last = 0.0;
    for want in ["pause", "resume", "skip", "rerun", "save", "stop"] {
        // `stop` names the running cell; between cells the runner records `stopped` only.
        let found = actions.iter().find(|(a, _)| *a == want || (want == "stop" && *a == "stopped"));
        let (_, at) = found.unwrap_or_else(|| panic!("{want} in {actions:?}"));
        assert!(*at >= last, "{want} at {at} s comes after the previous action ({last} s)");
        last = *at;
    }
    let pause = report.actions.iter().find(|a| a.action == "pause").unwrap();
    assert_eq!(pause.cell.as_deref(), Some("ctx=0 conc=2"));

    let screen = terminal.backend().to_string();
    for needle in ["DONE", "skip", "Sustained decode", "Replicas (session ended)", "report written"] {
        assert!(screen.contains(needle), "{needle} missing from the last frame:\n{screen}");
    }
}

fn ctrl_c(keys: &mpsc::UnboundedSender<Event>) {
    let key = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    keys.send(Event::Key(key)).expect("the loop reads keys");
}

type Ui = tokio::task::JoinHandle<anyhow::Result<(SessionReport, Ending)>>;

/// A one-cell session (60 s window) in the loop, its keys, and the report path once it measures.
async fn measuring_session(c: &llm_decode_bench::sim::Cluster, out: &Path) -> (mpsc::UnboundedSender<Event>, Ui) {
    let r = &c.info().replicas[0];
    let mut cfg = session_config(&r.url, &r.metrics_url, out);
    cfg.conc = vec![2];
    cfg.window = Duration::from_secs(60);
    let h = start(cfg).await.expect("preflight passes");
    let mut live = h.live.clone();
    let (keys, ui) = spawn_ui(h);
    let ui = tokio::spawn(async move { ui.await.expect("the loop ran").0 });
    until(&mut live, "cell 0 measuring", |l| l.cell == Some(0) && l.phase == Phase::Measuring).await;
    (keys, ui)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_ctrl_c_stops_the_session_with_the_report_saved_and_exit_130() {
    let c = cluster(1, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tui.json");
    let (keys, ui) = measuring_session(&c, &out).await;
    ctrl_c(&keys);
    let result = tokio::time::timeout(Duration::from_secs(20), ui).await.expect("stops").unwrap();
    let (report, ending) = result.expect("the loop waits for the report");
    assert!(ending.interrupted() && !report.complete);
    assert_eq!(common::validate(&out), report, "the file holds the final report");
    let attempts = &report.decode.as_ref().unwrap().cells[0].attempts;
    assert_eq!(attempts.iter().map(|a| a.status.as_str()).collect::<Vec<_>>(), ["stopped"]);
    let end = SessionEnd { interrupted: exit::interruption(ending.interrupted()), ..SessionEnd::default() };
    assert_eq!(end.code(), exit::INTERRUPTED);
}

/// On one thread, so both key presses are queued before the loop reads the first: the second
/// always comes while the session is stopping.
#[tokio::test(flavor = "current_thread")]
async fn a_second_ctrl_c_while_stopping_leaves_at_once_with_the_report_and_exit_130() {
    let c = cluster(1, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tui.json");
    let (keys, ui) = measuring_session(&c, &out).await;
    ctrl_c(&keys);
    ctrl_c(&keys);
    let result = tokio::time::timeout(Duration::from_secs(20), ui).await.expect("leaves").unwrap();
    let err = result.expect_err("left without waiting for the runner");
    assert!(err.is::<Abandoned>(), "{err:#}");
    assert_eq!(exit::after_error(&err), exit::INTERRUPTED, "Ctrl-C's code, never 1");
    let left = common::validate(&out);
    assert!(!left.complete, "the report written so far stays, incomplete");
}

/// With the monitor's `hold_after_last`, a finished session keeps its runner: `r` re-runs a
/// finished cell, and `q` then leaves at once with the report complete (exit 0's ending).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_session_reruns_cells_until_the_operator_quits() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tui.json");
    let path = out.clone();
    let (result, screen) = common::paused(move || async move {
        let c = common::inproc_cluster(1, 25.0, |_| {});
        let r = &c.info().replicas[0];
        let mut cfg = session_config(&r.url, &r.metrics_url, &path);
        (cfg.conc, cfg.hold_after_last) = (vec![2], true);
        let h = llm_decode_bench::session::start_with(cfg, c.backend()).await.expect("preflight passes");
        let mut snap = h.snapshot.clone();
        let (keys, ui) = spawn_ui(h);
        until(&mut snap, "every cell final", |s| s.finished && s.current.is_none()).await;
        press(&keys, KeyCode::Char('r'));
        until(&mut snap, "the cell ran again", |s| s.cells[0].attempts == 2 && s.finished && s.current.is_none()).await;
        press(&keys, KeyCode::Char('q'));
        let (result, terminal) = tokio::time::timeout(Duration::from_secs(20), ui).await.expect("quits").unwrap();
        (result, terminal.backend().to_string())
    })
    .await;
    let (report, ending) = result.expect("the loop returns the report");
    assert_eq!(ending, Ending::Finished, "q after the last cell is no mid-session quit");
    assert!(report.complete, "the report stays complete: {:?}", report.actions);
    assert_eq!(common::validate(&out), report, "the file holds the final report");
    let cell = &report.decode.as_ref().unwrap().cells[0];
    assert_eq!(cell.attempts.iter().map(|a| a.status.as_str()).collect::<Vec<_>>(), ["measured", "measured"]);
    let actions: Vec<&str> = report.actions.iter().map(|a| a.action.as_str()).collect();
    assert_eq!(actions, ["start", "finished", "rerun", "finished"], "{actions:?}");
    assert!(screen.contains("DONE") && screen.contains("Replicas (final: ctx=0 conc=2)"), "{screen}");
}
