//! The helper subcommands on the binary: `--version` with the commit, `completions`, `man`,
//! `config --print-default`, and `run --config` errors before any load.

use std::process::{Command, Output};

fn bin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_llm-decode-bench")).args(args).output().expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let out = stdout(&bin(&["--version"]));
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let commit = head.unwrap_or_else(|| "unknown".into());
    assert_eq!(out.trim(), format!("llm-decode-bench {} (commit {commit})", env!("CARGO_PKG_VERSION")));
}

#[test]
fn completions_and_the_man_page_cover_every_subcommand() {
    for shell in ["bash", "zsh", "fish"] {
        let o = bin(&["completions", shell]);
        assert!(o.status.success(), "{shell}");
        let text = stdout(&o);
        for flag in ["--window", "--resume", "--config", "--max-concurrency"] {
            assert!(text.contains(flag.trim_start_matches('-')), "{shell} completes {flag}");
        }
    }
    let man = stdout(&bin(&["man"]));
    assert!(man.starts_with(".ie") || man.contains(".TH llm-decode-bench 1"), "{}", &man[..200.min(man.len())]);
    for page in ["llm\\-decode\\-bench\\-run", "llm\\-decode\\-bench\\-sim", "\\-\\-window"] {
        assert!(man.contains(page), "the man page has {page}");
    }
    assert_eq!(bin(&["completions", "tcsh"]).status.code(), Some(2));
}

#[test]
fn config_prints_a_default_and_bad_files_fail_before_load() {
    let o = bin(&["config", "--print-default"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("\nwindow = \"30s\"\n"));
    assert_eq!(bin(&["config"]).status.code(), Some(2));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.toml");
    std::fs::write(&path, "base-url = \"http://127.0.0.1:9\"\nwindw = \"1s\"\n").unwrap();
    let o = bin(&["run", "--config", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("unknown key `windw`"), "{err}");
    let o = bin(&["run", "--config", dir.path().join("none.toml").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
}
