//! The shell scripts under `deploy/`: every one parses (`bash -n` or `sh -n`, by its shebang)
//! and passes `shellcheck` (skipped with a printed note where shellcheck is not installed;
//! tests/system-deps.sh installs it), and a broken script fails both checks, so the checks
//! can fail. The scripts that drive other tools are run on loopback with those tools as
//! shims ([`crate::ssh_run`], [`crate::collect`]).

use crate::manifests::deploy_dir;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Every shell script under `deploy/` (by extension or a `#!` line naming a shell).
pub fn scripts() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![deploy_dir()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("deploy/ reads") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if shell_of(&path).is_some() {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The shell a script runs under (`bash` or `sh`), from its `#!` line; None for other files.
fn shell_of(path: &Path) -> Option<&'static str> {
    let text = std::fs::read_to_string(path).ok()?;
    let first = text.lines().next()?;
    let shebang = first.strip_prefix("#!")?;
    match shebang.split_whitespace().last()? {
        s if s.ends_with("bash") => Some("bash"),
        s if s.ends_with("sh") => Some("sh"),
        _ => None,
    }
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("the checker starts")
}

fn said(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// `bash -n` / `sh -n` of `path`: its syntax, without running it.
fn parses(path: &Path) -> Result<(), String> {
    let shell = shell_of(path).expect("a shell script");
    let out = run(Command::new(shell).arg("-n").arg(path));
    if out.status.success() { Ok(()) } else { Err(format!("{shell} -n {}: {}", path.display(), said(&out))) }
}

/// Whether shellcheck is installed.
fn have_shellcheck() -> bool {
    Command::new("shellcheck").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// `shellcheck` of `path` (every severity, the script's own `disable` comments honoured).
fn lints(path: &Path) -> Result<(), String> {
    let out = run(Command::new("shellcheck").arg(path));
    if out.status.success() { Ok(()) } else { Err(said(&out)) }
}

#[test]
fn every_deploy_script_is_found() {
    let names: Vec<String> =
        scripts().iter().map(|p| p.strip_prefix(deploy_dir()).unwrap().display().to_string()).collect();
    for want in ["k8s/start.sh", "k8s/collect.sh", "slurm/shards.sbatch", "ssh/run-shards.sh"] {
        assert!(names.iter().any(|n| n == want), "{want} among {names:?}");
    }
}

#[test]
fn every_deploy_script_parses_and_passes_shellcheck() {
    let shellcheck = have_shellcheck();
    if !shellcheck {
        println!("note: shellcheck is not installed (apt-get install -y shellcheck): only `-n` checked");
    }
    for script in scripts() {
        parses(&script).unwrap_or_else(|e| panic!("{e}"));
        if shellcheck {
            lints(&script).unwrap_or_else(|e| panic!("shellcheck {}:\n{e}", script.display()));
        }
    }
}

#[test]
fn a_broken_script_fails_the_checks() {
    let dir = tempfile::tempdir().unwrap();
    let unclosed = dir.path().join("unclosed.sh");
    std::fs::write(&unclosed, "#!/usr/bin/env bash\nif true; then\n  echo yes\n").unwrap();
    assert!(parses(&unclosed).is_err(), "an unclosed `if` does not parse");
    if have_shellcheck() {
        let unquoted = dir.path().join("unquoted.sh");
        std::fs::write(&unquoted, "#!/usr/bin/env sh\nset -eu\ndir=$1\nrm -rf $dir/reports\n").unwrap();
        parses(&unquoted).expect("it parses");
        let e = lints(&unquoted).expect_err("an unquoted expansion is a finding");
        assert!(e.contains("SC2086"), "{e}");
    }
}
