//! `deploy/k8s/collect.sh` run against a `kubectl` shim: a script that answers the few
//! commands collect.sh sends (the Job's completions, a pod per index, its shard container's
//! exit code, `cp` of its report, `exec touch`) from a folder standing for the cluster. The
//! reports are the two shard fixtures, so the real `report merge` merges them. Checked: the
//! output folder argument, the exit status and the merged report when a shard failed, and the
//! bounded wait for a shard that never ends.

use crate::manifests::deploy_dir;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The shim: pods are `pod-I`; `cluster/pod-I.exit` holds a pod's shard exit code (absent:
/// still running), `cluster/pod-I.json` its report (absent: none written).
const KUBECTL: &str = r#"#!/bin/sh
cluster=$FAKE_CLUSTER
case "$1 $2" in
"get job") echo 2 ;;
"get pods") for a in "$@"; do case $a in *completion-index=*) echo "pod-${a##*=}" ;; esac; done ;;
"get pod") cat "$cluster/$3.exit" 2>/dev/null || true ;;
"cp "*) src=$6; pod=${src%%:*}; cp "$cluster/$pod.json" "$7" 2>/dev/null || { echo "no such file" >&2; exit 1; } ;;
"exec "*) touch "$cluster/$6.collected" ;;
*) echo "kubectl shim: $*" >&2; exit 1 ;;
esac
"#;

struct Fake {
    dir: tempfile::TempDir,
}

impl Fake {
    /// A cluster of two shard pods; `ended[i]` is pod i's exit code (None: still running),
    /// `report[i]` whether it wrote its report.
    fn new(ended: [Option<i32>; 2], report: [bool; 2]) -> Fake {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        let cluster = dir.path().join("cluster");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&cluster).unwrap();
        write_exe(&bin.join("kubectl"), KUBECTL);
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_llm-decode-bench"), bin.join("llm-decode-bench")).unwrap();
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        for i in 0..2 {
            if let Some(code) = ended[i] {
                std::fs::write(cluster.join(format!("pod-{i}.exit")), code.to_string()).unwrap();
            }
            if report[i] {
                std::fs::copy(fixtures.join(format!("shard_{i}_of_2.json")), cluster.join(format!("pod-{i}.json")))
                    .unwrap();
            }
        }
        Fake { dir }
    }

    /// Runs collect.sh with `args` (namespace, folder, timeout) from the fake's folder.
    fn collect(&self, args: &[&str]) -> Output {
        let path = format!("{}:{}", self.dir.path().join("bin").display(), std::env::var("PATH").unwrap_or_default());
        let mut cmd = Command::new("sh");
        cmd.arg(deploy_dir().join("k8s/collect.sh")).args(args).current_dir(self.dir.path());
        cmd.env("PATH", path).env("FAKE_CLUSTER", self.dir.path().join("cluster"));
        bounded(cmd, std::time::Duration::from_secs(60))
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
}

/// Runs `cmd` with its output piped; killed (and the test failed) when it runs past `limit`.
pub fn bounded(mut cmd: Command, limit: std::time::Duration) -> Output {
    use std::process::Stdio;
    let child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("it starts");
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.expect("its output"),
        Err(_) => {
            let _ = Command::new("kill").arg(id.to_string()).status();
            panic!("still running after {limit:?}: killed");
        }
    }
}

/// Writes `text` to `path` as an executable script.
pub fn write_exe(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn merged(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).expect("a merged report")).expect("JSON")
}

fn statuses(report: &serde_json::Value) -> Vec<String> {
    let shards = report["merge"]["shards"].as_array().expect("merge.shards");
    shards.iter().map(|s| s["status"].as_str().unwrap().to_string()).collect()
}

#[test]
fn every_report_lands_in_the_folder_given_and_is_merged() {
    let fake = Fake::new([Some(0), Some(0)], [true, true]);
    let out = fake.collect(&["bench-ns", "out/run1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(fake.path("out/run1/shard-0.json").is_file() && fake.path("out/run1/shard-1.json").is_file());
    assert!(!fake.path("reports").exists(), "nothing in the default folder");
    assert_eq!(statuses(&merged(&fake.path("out/run1/merged.json"))), ["merged", "merged"]);
    assert!(fake.path("cluster/pod-0.collected").exists() && fake.path("cluster/pod-1.collected").exists());
}

#[test]
fn a_failed_shard_is_exit_1_and_the_rest_are_merged() {
    let fake = Fake::new([Some(0), Some(3)], [true, false]);
    let out = fake.collect(&[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("shard 1: exit 3") && err.contains("shard 1: no report"), "{err}");
    assert_eq!(statuses(&merged(&fake.path("reports/merged.json"))), ["merged", "missing"]);
}

#[test]
fn the_wait_for_a_shard_is_bounded() {
    let fake = Fake::new([Some(0), None], [true, false]);
    let out = fake.collect(&["llm-bench", "reports", "0"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("shard 1 (pod pod-1) had not ended after 0 s; nothing merged"), "{err}");
    assert!(!fake.path("reports/merged.json").exists());
    let bad = fake.collect(&["llm-bench", "reports", "ten"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
}

#[test]
fn a_folder_holding_earlier_reports_is_refused_before_any_wait() {
    let fake = Fake::new([Some(0), Some(0)], [true, true]);
    assert!(fake.collect(&["llm-bench", "reports"]).status.success());
    let before = std::fs::read(fake.path("reports/shard-0.json")).unwrap();
    let again = fake.collect(&["llm-bench", "reports"]);
    let err = stderr(&again);
    assert_eq!(again.status.code(), Some(2), "{err}");
    assert!(err.contains("reports already holds reports"), "{err}");
    assert_eq!(std::fs::read(fake.path("reports/shard-0.json")).unwrap(), before, "left as it was");
}
