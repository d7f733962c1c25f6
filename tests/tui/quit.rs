//! The binary's monitor on a pseudo-terminal, quit by the operator with `q`, `y` mid-session:
//! exit 6 (README "Exit codes"), the report saved with `complete: false` (issue 21, item 8;
//! it used to exit 0, like a finished session).

use crate::common::{cluster, validate};
use std::fs::File;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Longest wait for the binary here.
const PATIENCE: Duration = Duration::from_secs(60);

/// A pseudo-terminal of 120x40: its master and its slave.
pub(crate) fn pty() -> (File, File) {
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).expect("a pty");
    grantpt(&master).expect("grantpt");
    unlockpt(&master).expect("unlockpt");
    let name = ptsname(&master, Vec::new()).expect("ptsname");
    let size = rustix::termios::Winsize { ws_row: 40, ws_col: 120, ws_xpixel: 0, ws_ypixel: 0 };
    rustix::termios::tcsetwinsize(&master, size).expect("window size");
    let slave = std::fs::OpenOptions::new().read(true).write(true).open(name.to_str().expect("a path")).expect("slave");
    (File::from(master), slave)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quitting_the_monitor_mid_session_exits_6_with_the_report_kept() {
    let c = cluster(1, 25.0, |_| {}).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("quit.json");
    let r = &c.info().replicas[0];
    let (mut master, slave) = pty();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_llm-decode-bench"));
    cmd.args(["run", "--base-url", &r.url, "--metrics-url", &r.metrics_url, "--ctx", "0", "--conc", "1,2"])
        .args(["--window", "60s", "--settle", "200ms", "--min-stream-tokens", "1024", "--out"])
        .arg(&out)
        .env_remove("OPENAI_API_KEY")
        .env("TERM", "xterm-256color")
        .stdin(Stdio::from(slave.try_clone().expect("slave")))
        .stdout(Stdio::from(slave.try_clone().expect("slave")))
        .stderr(Stdio::from(slave));
    let mut child = cmd.spawn().expect("binary starts");
    // The screen is drained, or the monitor would block on a full terminal.
    let screen = Arc::new(Mutex::new(Vec::new()));
    let mut reader = master.try_clone().expect("master");
    let seen = screen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n @ 1..) = reader.read(&mut buf) {
            seen.lock().expect("screen").extend_from_slice(&buf[..n]);
        }
    });
    let code = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + PATIENCE;
        let shown = |needle: &str| String::from_utf8_lossy(&screen.lock().expect("screen")).contains(needle);
        while !(out.exists() && shown("measuring")) {
            assert!(Instant::now() < deadline, "the monitor never showed a measuring cell");
            std::thread::sleep(Duration::from_millis(50));
        }
        master.write_all(b"q").expect("q");
        std::thread::sleep(Duration::from_millis(300));
        master.write_all(b"y").expect("y");
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait") {
                break s;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("the monitor did not quit");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        (status.code(), out)
    })
    .await
    .expect("joined");
    let (code, out) = code;
    assert_eq!(code, Some(6), "the operator's quit has its own exit code");
    let report = validate(&out);
    assert!(!report.complete, "stopped before the end");
    assert!(report.actions.iter().any(|a| a.action == "stop" || a.action == "stopped"), "{:?}", report.actions);
}
