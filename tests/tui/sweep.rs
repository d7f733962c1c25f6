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

/// True while `pid` runs (a zombie waiting for init does not).
fn alive(pid: i32) -> bool {
    let exists = rustix::process::Pid::from_raw(pid).is_some_and(|p| rustix::process::test_kill_process(p).is_ok());
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    exists && stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
}

/// The binary's monitor over a two-set sweep on a pseudo-terminal: `x` skips set 1 (its server
/// stopped, set 2 started in a monitor of its own), then Ctrl-C twice leaves at once (130) and
/// still kills set 2's server.
#[test]
fn the_monitor_skips_a_set_with_x_and_a_double_ctrl_c_leaves_no_server() {
    use std::io::{Read, Write};
    use std::sync::{Arc, Mutex};
    use std::time::Instant;
    let bin = env!("CARGO_BIN_EXE_llm-decode-bench");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("sweep.json");
    let server = format!(
        "{bin} sim --port {{port}} --replicas 1 --no-gateway --speed 25 --max-num-seqs {{n}} & echo $! > {}/pid-{{n}}; wait",
        dir.path().display()
    );
    let (mut master, slave) = super::quit::pty();
    let mut cmd = std::process::Command::new(bin);
    cmd.args(["run", "--server-cmd", &server, "--server-param", "n=4,6", "--ctx", "0", "--conc", "1,2"])
        .args(["--window", "60s", "--settle", "200ms", "--min-stream-tokens", "1024", "--server-grace", "5s", "--out"])
        .arg(&out)
        .env_remove("OPENAI_API_KEY")
        .env("TERM", "xterm-256color")
        .stdin(slave.try_clone().expect("slave"))
        .stdout(slave.try_clone().expect("slave"))
        .stderr(slave);
    let mut child = cmd.spawn().expect("binary starts");
    let screen = Arc::new(Mutex::new(Vec::new()));
    let (mut reader, seen) = (master.try_clone().expect("master"), screen.clone());
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n @ 1..) = reader.read(&mut buf) {
            seen.lock().expect("screen").extend_from_slice(&buf[..n]);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(90);
    let wait_for = |needles: &[&str]| {
        while !needles.iter().all(|n| String::from_utf8_lossy(&screen.lock().expect("screen")).contains(n)) {
            assert!(Instant::now() < deadline, "the screen never showed {needles:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
        screen.lock().expect("screen").clear();
    };
    // The progress lines between the monitors name the set too: wait for its monitor's own
    // words (a key typed before the monitor is up goes to the cooked terminal, not to it).
    wait_for(&["sweep: set 1/2 · n=4: ready in"]);
    wait_for(&["skips this set", "measuring"]);
    master.write_all(b"x").expect("x");
    wait_for(&["sweep: set 2/2 · n=6: ready in"]);
    wait_for(&["skips this set", "measuring"]);
    let pid = std::fs::read_to_string(dir.path().join("pid-6")).expect("set 2's pid").trim().parse().expect("a pid");
    assert!(alive(pid), "set 2's server runs");
    master.write_all(b"\x03").expect("ctrl-c");
    std::thread::sleep(Duration::from_millis(50));
    master.write_all(b"\x03").expect("ctrl-c");
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let shown = String::from_utf8_lossy(&screen.lock().expect("screen")).into_owned();
            let tail: String = shown.chars().rev().take(3000).collect::<Vec<_>>().into_iter().rev().collect();
            panic!("the sweep did not leave; the screen ends with {tail:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130), "Ctrl-C's code");
    let gone = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(pid), "no server left running");
    let report = common::validate(&out);
    let sets = &report.sweep.as_ref().expect("sweep").sets;
    let statuses: Vec<&str> = sets.iter().map(|s| s.status.as_str()).collect();
    assert_eq!(statuses, ["skipped_by_operator", "stopped"]);
    let first = sets[0].report.as_ref().expect("set 1's session");
    assert!(!first.complete, "set 1 was cut short");
}
