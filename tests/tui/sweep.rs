//! The monitor of one parameter set of a sweep (`run --server-cmd`): the set line under the
//! header, `x` skipping the set, and the loop leaving by itself once the set's session ends.

use crate::common;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use insta::assert_snapshot;
use llm_decode_bench::cell::control::{Command, Phase};
use llm_decode_bench::report::json::SessionReport;
use llm_decode_bench::tui::{Action, ChannelInput, Ending, LoopOptions, SetLine, fixtures, run_set_loop};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::time::Duration;
use tokio::sync::mpsc;

fn set_line() -> SetLine {
    SetLine {
        index: 2,
        total: 3,
        params: "max_num_seqs=16".into(),
        startup: Duration::from_millis(83_200),
        log: "sessions/20261205T101500Z.set-2.server.log".into(),
    }
}

fn draw(app: &llm_decode_bench::tui::App, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test terminal");
    terminal.draw(|f| f.render_widget(app, f.area())).expect("draws");
    terminal
}

#[test]
fn the_set_line_names_the_set_its_start_up_and_its_log() {
    let mut app = fixtures::measuring();
    app.set_line = Some(set_line());
    assert_snapshot!(draw(&app, 160, 48).backend());
}

#[test]
fn a_narrow_set_line_drops_the_log_first() {
    let mut app = fixtures::measuring();
    app.set_line = Some(set_line());
    assert_snapshot!(draw(&app, 80, 24).backend());
}

#[test]
fn x_skips_only_a_sweeps_set() {
    let mut plain = fixtures::measuring();
    assert_eq!(plain.update(Action::SkipSet), None);
    assert!(plain.notice.as_deref().is_some_and(|n| n.contains("--server-cmd")), "{:?}", plain.notice);
    let mut app = fixtures::measuring();
    app.set_line = Some(set_line());
    assert_eq!(app.update(Action::SkipSet), Some(Command::Stop));
    assert!(app.skipping_set());
    let line = draw(&app, 160, 48).backend().buffer().content().iter().map(|c| c.symbol()).collect::<String>();
    assert!(line.contains("skipping this set…"), "the set line says so");
}

/// The loop of a set over a session of `conc` cells against the in-process simulator; `x`
/// pressed once the second cell measures when `skip`.
async fn set_session(conc: Vec<u32>, skip: bool) -> (SessionReport, Ending) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("set.json");
    common::paused(move || async move {
        let c = common::inproc_cluster(1, 25.0, |_| {});
        let r = &c.info().replicas[0];
        let mut cfg = common::config(&r.url, &r.metrics_url, &out, vec![0], conc);
        cfg.window = Duration::from_millis(1000);
        let h = llm_decode_bench::session::start_with(cfg, c.backend()).await.expect("preflight passes");
        let mut live = h.live.clone();
        let (keys, rx) = mpsc::unbounded_channel();
        let ui = tokio::spawn(async move {
            let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
            let opts = LoopOptions { fps: 30, log_widget: false };
            run_set_loop(&mut terminal, h, ChannelInput(rx), opts, Some(set_line())).await
        });
        if skip {
            let second =
                |l: &llm_decode_bench::cell::control::LiveAttempt| l.cell == Some(1) && l.phase == Phase::Measuring;
            while !second(&live.borrow_and_update()) {
                live.changed().await.expect("the session runs");
            }
            keys.send(Event::Key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE))).expect("keys read");
        }
        let ended = tokio::time::timeout(Duration::from_secs(120), ui).await.expect("the loop leaves by itself");
        drop(keys);
        ended.expect("the loop task").expect("a report")
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x_stops_the_sets_session_and_the_loop_returns_skipped() {
    let (report, ending) = set_session(vec![1, 2, 3], true).await;
    assert_eq!(ending, Ending::SkippedSet);
    assert!(!report.complete, "the set's last cell never ran");
    let cells = &report.decode.as_ref().expect("decode").cells;
    assert!(cells[2].attempts.is_empty(), "{:?}", cells[2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sets_monitor_leaves_when_its_session_ends() {
    let (report, ending) = set_session(vec![1], false).await;
    assert_eq!(ending, Ending::Finished, "no q needed: the sweep goes on with the next set");
    assert!(report.complete);
}
