//! The README's set-up holds on a fresh machine: its test command is the one `.ci/run` runs,
//! and every system program a test starts is installed by `tests/system-deps.sh`, which the
//! README names with its Debian package.

use std::path::Path;

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap()
}

/// Every `tests/**/*.rs` file's text.
fn test_sources(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() && !path.ends_with("fuzz") {
            test_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(std::fs::read_to_string(&path).unwrap());
        }
    }
}

/// Programs named by absolute path in the tests (`"/usr/bin/chromium"`), by name.
fn programs_the_tests_start() -> Vec<String> {
    let mut sources = Vec::new();
    test_sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests"), &mut sources);
    let mut names: Vec<String> = sources
        .iter()
        .flat_map(|s| s.match_indices("\"/usr/").map(move |(i, _)| &s[i + 1..]))
        .filter_map(|rest| rest.split('"').next())
        .filter(|p| p.starts_with("/usr/bin/") || p.starts_with("/usr/sbin/"))
        .filter_map(|p| p.rsplit('/').next().filter(|n| !n.is_empty()).map(str::to_string))
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn the_readme_test_command_is_the_one_ci_runs() {
    let ci = read(".ci/run");
    let command = ci.lines().last().unwrap().trim();
    assert!(command.contains("tests/system-deps.sh") && command.ends_with("cargo test"), "{command}");
    assert!(read("README.md").lines().any(|l| l.trim_start().starts_with(command)), "README lacks `{command}`");
}

#[test]
fn every_program_a_test_starts_is_installed_by_the_setup_script() {
    let script = read("tests/system-deps.sh");
    let readme = read("README.md");
    let programs = programs_the_tests_start();
    assert!(programs.contains(&"chromium".to_string()) && programs.contains(&"prometheus".to_string()), "{programs:?}");
    for p in programs {
        let line = script.lines().find(|l| l.starts_with(&format!("need {p} "))).unwrap_or_else(|| {
            panic!("tests/system-deps.sh does not install `{p}`, which a test starts");
        });
        let package = line.split_whitespace().nth(2).unwrap();
        assert!(readme.contains(&format!("`{package}`")), "the README's set-up does not name Debian's `{package}`");
    }
}
