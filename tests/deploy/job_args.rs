//! The shard Job's command line and plan files. What is checked:
//! - every `--flag` of the Job's `run` is a flag (or alias) of `run` in this build, or one of
//!   the scale-out flags issue 27 names (built by other parts of that issue; once they are all
//!   in `run`, the whole command line is parsed by clap with sample values as well);
//! - every `$(NAME)` Kubernetes expands in those args is defined: the Job's index, or a key of
//!   the run ConfigMap (SHARDS in the base, START_AT and SESSION_ID from start.sh);
//! - every plan.toml is read exactly as `run --config FILE` reads it and makes a valid run
//!   configuration (an unknown key, a bad value or a missing target fails).

use crate::manifests::{base_job, deploy_dir, yaml_files};
use clap::{CommandFactory, Parser};
use llm_decode_bench::cli::{Cli, Command as Sub, config_file};
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::PathBuf;

/// The `run` flags issue 27 adds (shards, start instant, session, live page, observer).
const ISSUE_27_FLAGS: [&str; 8] =
    ["shard", "shards", "start-at", "session-id", "metrics-listen", "observe", "prometheus", "client-selector"];

/// The long names and aliases of `run`'s flags in this build.
fn run_flags() -> BTreeSet<String> {
    let cli = Cli::command();
    let run = cli.find_subcommand("run").expect("a run subcommand");
    let mut out = BTreeSet::from(["help".to_string()]);
    for arg in run.get_arguments() {
        out.extend(arg.get_long().into_iter().chain(arg.get_all_aliases().unwrap_or_default()).map(str::to_string));
    }
    out
}

/// The shard container's args in the base Job.
fn shard_args() -> Vec<String> {
    let job = base_job();
    let pod = job.spec.expect("spec").template.spec.expect("pod spec");
    let shard = pod.containers.into_iter().find(|c| c.name == "shard").expect("the shard container");
    assert!(shard.command.is_none(), "the image's ENTRYPOINT runs the binary");
    shard.args.expect("args")
}

/// The long flag names in `args` (`--name` or `--name=value`).
fn flag_names(args: &[String]) -> Vec<String> {
    let longs = args.iter().filter_map(|a| a.strip_prefix("--"));
    longs.map(|l| l.split('=').next().unwrap_or(l).to_string()).collect()
}

/// The `$(NAME)` references Kubernetes expands in `arg` (`$$` is an escaped `$`).
fn references(arg: &str) -> Vec<String> {
    let (mut out, mut rest) = (Vec::new(), arg);
    while let Some(i) = rest.find('$') {
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('(').and_then(|t| t.split_once(')')) {
            out.push(inner.0.to_string());
            rest = inner.1;
        } else {
            rest = after;
        }
    }
    out
}

#[test]
fn the_job_runs_only_flags_the_binary_knows_or_issue_27_names() {
    let args = shard_args();
    assert_eq!(args.first().map(String::as_str), Some("run"));
    let known = run_flags();
    for name in flag_names(&args) {
        assert!(known.contains(&name) || ISSUE_27_FLAGS.contains(&name.as_str()), "--{name} is not a flag of `run`");
    }
    for want in ["config", "headless", "shards", "start-at", "session-id", "metrics-listen", "out"] {
        assert!(flag_names(&args).contains(&want.to_string()), "the Job passes --{want}");
    }
}

#[test]
fn an_unknown_flag_in_the_job_would_fail() {
    let mut args = shard_args();
    args.push("--windw=10s".into());
    let known = run_flags();
    let unknown: Vec<String> = flag_names(&args).into_iter().filter(|n| !known.contains(n)).collect();
    assert!(unknown.contains(&"windw".to_string()), "{unknown:?}");
    assert!(!ISSUE_27_FLAGS.contains(&"windw"));
}

#[test]
fn every_expanded_name_in_the_job_is_defined() {
    let start = std::fs::read_to_string(deploy_dir().join("k8s/start.sh")).expect("start.sh");
    let base = std::fs::read_to_string(deploy_dir().join("k8s/base/kustomization.yaml")).expect("base");
    let defined = |name: &str| match name {
        "JOB_COMPLETION_INDEX" => true,
        "SHARDS" => base.contains("- SHARDS="),
        _ => start.contains(&format!("{name}=%s")),
    };
    let refs: Vec<String> = shard_args().iter().flat_map(|a| references(a)).collect();
    assert_eq!(refs, ["SHARDS", "START_AT", "SESSION_ID", "JOB_COMPLETION_INDEX"]);
    for name in refs {
        assert!(defined(&name), "$({name}) is not defined for the shard container");
    }
    assert_eq!(references("a$$(b)$(C)$"), ["C"], "an escaped `$$(` is no reference");
}

/// `argv` (after the program name) with `run --config FILE` expanded, parsed by clap, and with
/// `validate` turned into a run configuration as `run` does before any load.
fn parse_run(argv: &[String], validate: bool) -> Result<(), String> {
    let full: Vec<OsString> =
        std::iter::once("llm-decode-bench".into()).chain(argv.iter().map(OsString::from)).collect();
    let full = config_file::expand(&Cli::command(), full)?;
    let Some(Sub::Run(run)) = Cli::try_parse_from(full).map_err(|e| e.to_string())?.command else {
        return Err("not a run".into());
    };
    match validate {
        true => run.to_config().map(drop).map_err(|e| e.to_string()),
        false => Ok(()),
    }
}

fn plan_files() -> Vec<PathBuf> {
    let all = yaml_files(&deploy_dir().join("k8s"));
    let dirs: BTreeSet<PathBuf> = all.iter().filter_map(|p| p.parent().map(PathBuf::from)).collect();
    dirs.into_iter().map(|d| d.join("plan.toml")).filter(|p| p.is_file()).collect()
}

#[test]
fn every_plan_file_makes_a_valid_run() {
    let plans = plan_files();
    assert!(plans.len() >= 2, "the base's and the example's plan.toml: {plans:?}");
    for plan in plans {
        let argv = ["run".to_string(), format!("--config={}", plan.display()), "--headless".into()];
        parse_run(&argv, true).unwrap_or_else(|e| panic!("{}: {e}", plan.display()));
    }
}

#[test]
fn the_whole_job_command_line_parses_once_every_flag_is_in_run() {
    let args = shard_args();
    let known = run_flags();
    if flag_names(&args).iter().any(|n| !known.contains(n)) {
        eprintln!("some of issue 27's flags are not in `run` yet: the Job's flags were checked by name only");
        return;
    }
    let plan = deploy_dir().join("k8s/overlays/example/plan.toml");
    let values = [
        ("$(SHARDS)", "4".to_string()),
        ("$(START_AT)", "2026-12-06T08:00:00Z".to_string()),
        ("$(SESSION_ID)", "test-1".to_string()),
        ("$(JOB_COMPLETION_INDEX)", "0".to_string()),
        ("/etc/llm-decode-bench/plan.toml", plan.display().to_string()),
    ];
    let argv: Vec<String> = args.iter().map(|a| values.iter().fold(a.clone(), |a, (k, v)| a.replace(k, v))).collect();
    parse_run(&argv, false).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
}
