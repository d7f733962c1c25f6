//! A bad network rather than a bad server: the simulator and the binary in a network namespace
//! of their own (`ip netns`, root only), its loopback given netem delay and loss (`tc`, where
//! the kernel has `sch_netem`), then cut for 3 s in the middle of the measurement (the link set
//! down). The streams that lose their server end as `stalled`, the metrics outage marks the
//! attempt's target as lost, and the session finishes. Where no namespace can be made (not
//! root, no iproute2) the test says why on stderr and passes; the namespace, and whatever runs
//! in it, is removed at the end, and one left by a killed run is removed by the next.

use super::{SECRET, spawn_measured};
use llm_decode_bench::load::sample::ErrorKind;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// Prefix of the namespaces this test makes; the test process's pid follows.
const PREFIX: &str = "ldb-hostile-";

fn ip(args: &[&str]) -> std::io::Result<Output> {
    Command::new("ip").args(args).stdin(Stdio::null()).output()
}

/// `ip` in the namespace: Ok, or its stderr.
fn in_ns(ns: &str, args: &[&str]) -> Result<(), String> {
    let mut all = vec!["netns", "exec", ns];
    all.extend_from_slice(args);
    let out = ip(&all).map_err(|e| e.to_string())?;
    match out.status.success() {
        true => Ok(()),
        false => Err(String::from_utf8_lossy(&out.stderr).trim().to_string()),
    }
}

/// A network namespace, deleted (with every process left in it) when dropped.
struct Netns {
    name: String,
}

impl Netns {
    /// A fresh namespace with its loopback up, or why there can be none.
    fn create() -> Result<Netns, String> {
        let uid = Command::new("id").arg("-u").output().map_err(|e| format!("`id -u` failed: {e}"))?;
        if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
            return Err("not root".into());
        }
        let list = ip(&["netns", "list"]).map_err(|e| format!("no `ip` (iproute2): {e}"))?;
        remove_leftovers(&String::from_utf8_lossy(&list.stdout));
        let name = format!("{PREFIX}{}", std::process::id());
        let made = ip(&["netns", "add", &name]).map_err(|e| e.to_string())?;
        if !made.status.success() {
            return Err(format!("`ip netns add` failed: {}", String::from_utf8_lossy(&made.stderr).trim()));
        }
        let ns = Netns { name };
        in_ns(&ns.name, &["ip", "link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// Delay and loss on the loopback; Err says why not (no `tc`, no `sch_netem`).
    fn netem(&self, spec: &[&str]) -> Result<(), String> {
        let mut args = vec!["tc", "qdisc", "add", "dev", "lo", "root", "netem"];
        args.extend_from_slice(spec);
        in_ns(&self.name, &args)
    }

    /// `program args` inside the namespace.
    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.name, program]);
        cmd
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        delete(&self.name);
    }
}

/// The loopback of namespace `ns` down (a partition of everything in it) or up again.
fn link(ns: &str, up: bool) {
    in_ns(ns, &["ip", "link", "set", "lo", if up { "up" } else { "down" }]).expect("link set");
}

/// Ends the processes still in namespace `name` (ours: the simulator), then deletes it.
fn delete(name: &str) {
    if let Ok(out) = ip(&["netns", "pids", name]) {
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            let _ = Command::new("kill").args(["-9", pid]).status();
        }
    }
    let _ = ip(&["netns", "del", name]);
}

/// Deletes the namespaces of earlier runs whose test process is gone (killed before its drop).
fn remove_leftovers(list: &str) {
    for name in list.lines().filter_map(|l| l.split_whitespace().next()) {
        let Some(pid) = name.strip_prefix(PREFIX) else { continue };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            delete(name);
        }
    }
}

/// The simulator in `ns`, one replica on port 18001, once it has said where it listens.
fn simulator(ns: &Netns) -> Child {
    let mut child = ns
        .command(env!("CARGO_BIN_EXE_llm-decode-bench"))
        .args(["sim", "--port", "18000", "--replicas", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("simulator starts");
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let listening = lines.by_ref().map_while(Result::ok).any(|l| l.starts_with("model"));
    assert!(listening, "the simulator said where it listens");
    std::thread::spawn(move || lines.for_each(drop));
    child
}

#[test]
fn a_lossy_slow_network_and_a_partition_mid_stream_end_in_named_kinds() {
    let ns = match Netns::create() {
        Ok(ns) => ns,
        Err(why) => return eprintln!("skipped: no network namespace for the netem test ({why})"),
    };
    match ns.netem(&["delay", "10ms", "2ms", "loss", "1%"]) {
        Ok(()) => eprintln!("netns {}: netem delay 10ms ± 2ms, loss 1% on lo", ns.name),
        Err(why) => eprintln!("netns {}: no netem ({why}); the partition only", ns.name),
    }
    let mut sim = simulator(&ns);
    let dir = tempfile::tempdir().unwrap();
    let (out, log) = (dir.path().join("r.json"), dir.path().join("run.log"));
    // The link goes down 1 s into the 8 s window (however long preflight and warmup took) and
    // comes back 3 s later.
    let cut = {
        let (name, log) = (ns.name.clone(), log.clone());
        std::thread::spawn(move || {
            let measuring = || std::fs::read_to_string(&log).is_ok_and(|l| l.contains("conc=2: measuring"));
            let t0 = std::time::Instant::now();
            while !measuring() {
                assert!(t0.elapsed() < Duration::from_secs(60), "the cell started measuring within 60 s");
                std::thread::sleep(Duration::from_millis(10));
            }
            std::thread::sleep(Duration::from_secs(1));
            link(&name, false);
            std::thread::sleep(Duration::from_secs(3));
            link(&name, true);
        })
    };
    let mut cmd = ns.command(env!("CARGO_BIN_EXE_llm-decode-bench"));
    cmd.args(["run", "--headless", "--base-url", "http://127.0.0.1:18001"])
        .args(["--metrics-url", "http://127.0.0.1:18001/metrics", "--ctx", "0", "--conc", "2", "--window", "8s"])
        .args(["--settle", "100ms", "--warmup-timeout", "10s", "--first-token-timeout", "3s", "--idle-timeout", "1s"])
        .args(["--min-stream-tokens", "1024", "--poll-interval", "100ms"])
        .arg("--out")
        .arg(&out)
        .arg("--log-file")
        .arg(&log);
    let ran = spawn_measured(cmd);
    cut.join().unwrap();
    let _ = sim.kill();
    let _ = sim.wait();
    assert!(matches!(ran.code, Some(0 | 4)), "a finished session: {}", ran.stderr);
    let report = crate::common::validate(&out);
    assert!(report.complete, "{}", ran.stderr);
    let attempts: Vec<_> = report.decode.iter().flat_map(|d| d.cells.iter().flat_map(|c| c.attempts.iter())).collect();
    let named = [ErrorKind::Stalled, ErrorKind::StreamReset, ErrorKind::Connect, ErrorKind::FirstTokenTimeout];
    let kinds: Vec<ErrorKind> = attempts.iter().flat_map(|a| a.errors.keys().copied()).collect();
    assert!(kinds.contains(&ErrorKind::Stalled), "the cut streams stalled: {kinds:?}; {}", ran.stderr);
    assert!(kinds.iter().all(|k| named.contains(k)), "{kinds:?}");
    assert!(
        attempts.iter().any(|a| !a.target_lost.is_empty()),
        "the outage marks the target lost: {:?}",
        report.warnings
    );
    assert!(!std::fs::read_to_string(&out).unwrap().contains(SECRET));
    ran.assert_clean();
    let name = ns.name.clone();
    drop(ns);
    let left = ip(&["netns", "list"]).unwrap();
    assert!(!String::from_utf8_lossy(&left.stdout).contains(&name), "the namespace is removed");
}
