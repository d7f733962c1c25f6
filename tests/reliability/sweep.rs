//! The engine-config sweep (`run --server-cmd`, issue 25 part 1) with the simulator as the
//! server: every set gets its own server and is nested in one report; SIGTERM mid-set leaves
//! no server running; a server that fails to start is an errored set and the sweep goes on;
//! bad sweep flags are one line and exit 2 before any server starts.

use super::exits::Running;
use crate::common::validate;
use llm_decode_bench::report::json::SessionReport;
use llm_decode_bench::report::status::AttemptStatus;
use llm_decode_bench::report::sweep::{SetStatus, SweepSection, SweepSet};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_llm-decode-bench");

/// The simulator as `vllm serve` would be run: one server on `{port}`, `{n}` sequences and
/// `{n}000` KV blocks. It runs as a child of the shell (as a launcher script's server would),
/// so only the kill of the whole process group reaches it: the shell's parent-death signal
/// does not. Its pid goes to `dir/pid-{n}`.
fn sim_cmd(dir: &Path) -> String {
    format!(
        "{BIN} sim --port {{port}} --replicas 1 --no-gateway --speed 25 --max-num-seqs {{n}} --kv-blocks {{n}}000 & \
         echo $! > {}/pid-{{n}}; wait",
        dir.display()
    )
}

/// `run --headless` of a one-cell plan (ctx 0, conc 2) over `--server-cmd cmd`, then `extra`.
fn sweep_cmd(cmd: &str, out: &Path, window: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(["run", "--headless", "--server-cmd", cmd, "--server-grace", "5s", "--server-timeout", "60s"])
        .args(["--ctx", "0", "--conc", "2", "--window", window, "--settle", "200ms", "--warmup-timeout", "20s"])
        .args(["--min-stream-tokens", "1024", "--poll-interval", "100ms", "--seed", "7"])
        .arg("--out")
        .arg(out)
        .args(extra)
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn sweep_of(report: &SessionReport) -> &SweepSection {
    report.sweep.as_ref().expect("a sweep section")
}

fn session_of(set: &SweepSet) -> &SessionReport {
    set.report.as_deref().expect("the set's session report")
}

/// True while `pid` runs: it exists and is not a zombie waiting for init to reap it.
fn alive(pid: i32) -> bool {
    let exists = rustix::process::Pid::from_raw(pid).is_some_and(|p| rustix::process::test_kill_process(p).is_ok());
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let zombie = stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
    exists && !zombie
}

/// The pid the server of set `n` wrote, once written.
fn pid_of(dir: &Path, n: &str) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let read = std::fs::read_to_string(dir.join(format!("pid-{n}"))).ok();
        if let Some(pid) = read.and_then(|s| s.trim().parse().ok()) {
            return pid;
        }
        assert!(Instant::now() < deadline, "no pid file for {n}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// True once `pid` is gone (within a few seconds: the exit is being reaped).
fn gone(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

#[test]
fn a_sweep_runs_each_set_against_its_own_server_in_one_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("sweep.json");
    let cmd = sweep_cmd(&sim_cmd(dir.path()), &out, "1s", &["--server-param", "n=4,6"]);
    let (status, stderr) = Running::spawn(cmd).wait();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("sweep: set 1/2 · n=4: ready in "), "{stderr}");
    let report = validate(&out);
    assert!(report.complete, "every set has an outcome");
    assert!(report.decode.is_none(), "every cell is under its set");
    let sweep = sweep_of(&report);
    assert_eq!(sweep.params, ["n"]);
    assert_eq!(sweep.sets.len(), 2);
    for (set, n) in sweep.sets.iter().zip([4u64, 6]) {
        assert_eq!(set.params.get("n"), Some(&n.to_string()));
        assert_eq!(set.status, SetStatus::Done, "{set:?}");
        assert!(set.startup_s.is_some_and(|s| s > 0.0 && s < 30.0), "{:?}", set.startup_s);
        let server = set.server.as_ref().expect("settings read");
        assert_eq!(server.max_num_seqs, Some(n), "from the log's non-default args line");
        assert_eq!(server.num_gpu_blocks, Some(n * 1000), "from vllm:cache_config_info");
        assert!(
            set.command.as_deref().is_some_and(|c| c.contains(&format!("--max-num-seqs {n} "))),
            "{:?}",
            set.command
        );
        let log = set.log.as_deref().expect("a log path");
        assert!(log.ends_with(&format!("sweep.set-{}.server.log", set.index)), "{log}");
        assert!(std::fs::read_to_string(log).expect("log written").contains("non-default args"));
        let session = session_of(set);
        let cells = &session.decode.as_ref().expect("decode cells").cells;
        assert_eq!(cells.len(), 1);
        assert_eq!(cells[0].attempts.last().map(|a| a.status), Some(AttemptStatus::Measured));
        assert_eq!(session.target.kv_capacity_tokens, Some(n * 1000 * 16), "the set's own server measured");
        assert!(session.target.base_url.ends_with(&set.port.expect("a port").to_string()));
        let pid = pid_of(dir.path(), &n.to_string());
        assert!(gone(pid), "set {n}'s server stopped");
        assert!(set.server_exit.is_some());
    }
    assert_ne!(sweep.sets[0].port, sweep.sets[1].port, "a port per set");
    // The text shows every set, then the sets side by side.
    let text = Command::new(BIN).arg("report").arg(&out).arg("--ascii").output().expect("report runs");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("== set 1/2 · n=4 · done") && text.contains("== set 2/2 · n=6 · done"), "{text}");
    assert!(text.contains("Sets side by side") && text.contains("max_num_seqs"), "{text}");
    let side = Command::new(BIN).args(["compare", "--format", "json"]).arg(&out).output().expect("compare runs");
    assert_eq!(side.status.code(), Some(0), "{}", String::from_utf8_lossy(&side.stderr));
    let side: serde_json::Value = serde_json::from_slice(&side.stdout).expect("JSON");
    assert_eq!(side["sets"].as_array().map(Vec::len), Some(2), "{side}");
}

/// Sends `signals` (e.g. `["TERM"]`) to a sweep mid-set and checks that no server is left.
fn signalled_mid_set(signals: &[&str]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("sweep.json");
    let cmd = sweep_cmd(&sim_cmd(dir.path()), &out, "60s", &["--server-param", "n=4,6"]);
    let mut run = Running::spawn(cmd);
    run.wait_line(": measuring");
    let pid = pid_of(dir.path(), "4");
    let port = validate(&out).sweep.expect("sweep").sets[0].port.expect("port");
    assert!(alive(pid), "the server runs mid-set");
    for s in signals {
        run.signal(s);
    }
    let (status, stderr) = run.wait();
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(gone(pid), "no server left running: pid {pid} still there\n{stderr}");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err(), "port {port} is closed");
    assert!(!dir.path().join("pid-6").exists(), "the next set never started");
    let report = validate(&out);
    assert!(!report.complete);
    let sweep = sweep_of(&report);
    if signals.len() == 1 {
        assert_eq!(sweep.sets[0].status, SetStatus::Stopped, "{stderr}");
        assert!(sweep.sets[0].server_exit.is_some());
    }
    assert_eq!(sweep.sets[1].status, SetStatus::Pending);
}

#[test]
fn sigterm_mid_set_stops_the_server_and_records_the_set() {
    signalled_mid_set(&["TERM"]);
}

#[test]
fn a_second_sigterm_exits_at_once_and_still_kills_the_server() {
    signalled_mid_set(&["TERM", "TERM"]);
}

#[test]
fn a_server_that_fails_to_start_is_an_errored_set_and_the_next_set_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("sweep.json");
    let sets = dir.path().join("sets.jsonl");
    std::fs::write(&sets, "{\"n\": \"many\"}\n{\"n\": 4}\n").expect("sets written");
    let sets = sets.display().to_string();
    let cmd = sweep_cmd(&sim_cmd(dir.path()), &out, "1s", &["--server-params", &sets]);
    let (status, stderr) = Running::spawn(cmd).wait();
    assert_eq!(status.code(), Some(4), "a failed set fails the run: {stderr}");
    assert!(stderr.contains("sweep: set 1/2 · n=many: failed to start"), "{stderr}");
    assert!(stderr.contains("1 set(s) failed") && stderr.contains("--allow-errors"), "{stderr}");
    let report = validate(&out);
    let sweep = sweep_of(&report);
    let failed = &sweep.sets[0];
    assert_eq!(failed.status, SetStatus::FailedToStart);
    assert!(failed.error.as_deref().is_some_and(|e| e.contains("exited before it was ready")), "{failed:?}");
    assert!(failed.log_tail.iter().any(|l| l.contains("invalid value 'many'")), "{:?}", failed.log_tail);
    assert!(failed.report.is_none());
    assert_eq!(sweep.sets[1].status, SetStatus::Done, "the sweep went on");
    assert!(session_of(&sweep.sets[1]).decode.is_some());
    let allowed =
        sweep_cmd(&sim_cmd(dir.path()), &out, "1s", &["--server-params", &sets, "--allow-errors", "--overwrite"]);
    let (status, stderr) = Running::spawn(allowed).wait();
    assert_eq!(status.code(), Some(0), "--allow-errors accepts a failed set: {stderr}");
}

#[test]
fn bad_sweep_flags_are_one_line_and_exit_2_before_any_server_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("sweep.json");
    let marker = dir.path().join("started");
    let cmd = format!("touch {}; sleep 30 # {{port}}", marker.display());
    let cases: [(&[&str], &str); 4] = [
        (&["--server-param", "n=4"], "no {n} placeholder"),
        (&["--server-param", "n="], "empty value"),
        (&["--server-param", "n=4", "--base-url", "http://127.0.0.1:{port}/{m}"], "unknown placeholder {m}"),
        (&["--port", "8000"], "drop --host/--port"),
    ];
    for (extra, want) in cases {
        let (status, stderr) = Running::spawn(sweep_cmd(&cmd, &out, "1s", extra)).wait();
        assert_eq!(status.code(), Some(2), "{extra:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("error: ") && stderr.contains(want), "{extra:?}: {stderr}");
    }
    let (status, stderr) = Running::spawn(sweep_cmd("sleep 30 # {typo}", &out, "1s", &[])).wait();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--server-cmd: unknown placeholder {typo}"), "{stderr}");
    assert!(!marker.exists() && !out.exists(), "no server started, no report written");
}
