//! Tests of `run --resume FILE` restoring the saved session's flags.

use super::*;
use crate::config::RunConfig;
use crate::report::json::ReplicaInfo;
use clap::CommandFactory;
use std::path::Path;

/// `run ARGS...` parsed and checked (the resume file read), after both expansions.
fn session(args: &[&str]) -> Result<(RunConfig, crate::session::Prior), String> {
    let argv: Vec<OsString> = ["llm-decode-bench", "run"].iter().chain(args).map(OsString::from).collect();
    let argv = expand(&Cli::command(), argv)?;
    let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
    let Some(Sub::Run(run)) = cli.command else { panic!("a run") };
    run.to_session()
}

/// The configuration of [`session`].
fn parse(args: &[&str]) -> Result<RunConfig, String> {
    session(args).map(|(cfg, _)| cfg)
}

/// An unfinished report at `path`, saved by `run --base-url http://127.0.0.1:9 ARGS...`.
fn saved(path: &Path, args: &[&str]) -> SessionReport {
    let mut all = vec!["--base-url", "http://127.0.0.1:9"];
    all.extend_from_slice(args);
    let cfg = parse(&all).expect("the original flags are valid");
    let mut report = crate::report::tests_schema::minimal_report();
    report.plan.settings = cfg.settings();
    report.plan.kinds = cfg.plans.iter().map(|p| p.as_str().to_string()).collect();
    write(path, &report);
    report
}

fn write(path: &Path, report: &SessionReport) {
    std::fs::write(path, serde_json::to_vec(report).expect("json")).expect("written");
}

#[test]
fn resume_alone_restores_every_recorded_setting() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let file = path.to_str().unwrap();
    let original = [
        "--ctx",
        "0,4k",
        "--conc",
        "1,3",
        "--window",
        "3s",
        "--settle",
        "0.25s",
        "--model",
        "m",
        "--endpoint",
        "completions",
        "--run-burst",
        "--max-tokens",
        "2k",
        "--request-rate",
        "2,inf",
        "--burstiness",
        "0.5",
        "--goodput",
        "ttft:500",
        "tpot:40",
        "--idle-timeout",
        "90s",
    ];
    let report = saved(&path, &original);
    let (cfg, prior) = session(&["--resume", file]).expect("nothing to retype");
    assert_eq!(cfg.settings(), report.plan.settings);
    assert_eq!(
        (cfg.base_url.as_str(), cfg.conc.clone(), cfg.window.as_millis()),
        ("http://127.0.0.1:9", vec![1, 3], 3000)
    );
    assert!(cfg.decode.run_burst && prior.resume.is_some());
    assert_eq!(cfg.out.as_deref(), Some(path.as_path()), "the report goes back to the file");
}

#[test]
fn a_restored_plan_brings_its_own_settings_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let original =
        ["--plan", "routing,serve", "--rps", "3.5", "--rounds", "1", "--count", "8", "--ctx", "512", "--seed", "7"];
    let report = saved(&path, &original);
    let cfg = parse(&["--resume", path.to_str().unwrap()]).expect("restored");
    assert_eq!(cfg.settings(), report.plan.settings);
    assert_eq!((cfg.routing.rps, cfg.routing.rounds, cfg.serve.num_prompts), (3.5, 1, 8));
}

#[test]
fn a_given_flag_stays_and_is_refused_when_it_differs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let file = path.to_str().unwrap();
    saved(&path, &["--window", "3s", "--conc", "1,2"]);
    assert!(parse(&["--resume", file, "--window", "3s"]).is_ok(), "the same value may be given");
    let e = parse(&["--resume", file, "--window=5s"]).unwrap_err();
    assert!(e.contains("it was run with --window 3s, this run has --window 5s") && !e.contains('\n'), "{e}");
    let e = parse(&["--resume", file, "--max-concurrency", "4"]).unwrap_err();
    assert!(e.contains("--conc 1,2"), "an alias counts as the flag: {e}");
    // Flags the report does not record may change.
    let other = dir.path().join("other.json");
    let cfg = parse(&["--resume", file, "--out", other.to_str().unwrap(), "--poll-interval", "500ms"]).unwrap();
    assert_eq!(cfg.out.as_deref(), Some(other.as_path()));
}

#[test]
fn the_metrics_pages_come_back_unless_given() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let file = path.to_str().unwrap();
    let mut report = saved(&path, &[]);
    let page = |name: &str| ReplicaInfo {
        name: name.into(),
        metrics_url: format!("http://10.0.0.1:800{}/metrics", name.len()),
        dialect: "vllm-v1".into(),
        kv_capacity_tokens: None,
    };
    report.target.replica_info = vec![page("a"), page("bb")];
    write(&path, &report);
    let names = |c: &RunConfig| c.metrics.iter().map(|m| (m.name.clone(), m.url.clone())).collect::<Vec<_>>();
    let cfg = parse(&["--resume", file]).unwrap();
    assert_eq!(
        names(&cfg),
        [("a".into(), "http://10.0.0.1:8001/metrics".into()), ("bb".into(), "http://10.0.0.1:8002/metrics".into())]
    );
    let cfg = parse(&["--resume", file, "--replica", "c=http://10.0.0.2/metrics"]).unwrap();
    assert_eq!(names(&cfg).len(), 1, "a given page replaces the saved ones");
    report.target.replica_info.clear();
    write(&path, &report);
    assert!(parse(&["--resume", file]).unwrap().no_metrics, "a session that polled no page");
}

#[test]
fn an_unreadable_report_is_the_one_line_resume_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    let e = parse(&["--resume", missing.to_str().unwrap()]).unwrap_err();
    assert!(e.starts_with("--resume ") && e.contains("cannot read") && !e.contains('\n'), "{e}");
    let argv: Vec<OsString> = ["x", "run", "--base-url", "http://h"].map(OsString::from).to_vec();
    assert_eq!(expand(&Cli::command(), argv.clone()).unwrap(), argv, "without --resume argv is untouched");
}

#[test]
fn a_killed_shard_resumes_on_a_new_start_at_and_keeps_its_session() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shard-1.json");
    let file = path.to_str().unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let mut report = saved(&path, &["--shard", "1/2", "--start-at", &(now + 60).to_string()]);
    let id = report.plan.settings["session-id"].clone();
    // Killed long ago: its start instant has passed.
    report.plan.settings.insert("start-at".into(), format!("{}.000", now - 600));
    write(&path, &report);
    let e = parse(&["--resume", file]).unwrap_err();
    assert!(e.starts_with("--resume ") && e.contains(" s ago; give it a new one (--start-at T)"), "{e}");
    assert!(!e.contains('\n'), "{e}");
    let new = (now + 30).to_string();
    let cfg = parse(&["--resume", file, "--start-at", &new]).expect("a new --start-at replaces the saved one");
    assert_eq!(cfg.session_id.as_deref(), Some(id.as_str()), "the session id stays");
    assert_eq!(cfg.shard.map(|s| (s.index, s.count)), Some((1, 2)));
    let at = cfg.start_at.unwrap().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    assert_eq!(at, now + 30);
    let e = parse(&["--resume", file, "--start-at", &new, "--window", "9s"]).unwrap_err();
    assert!(e.contains("this run has --window 9s"), "other settings still may not change: {e}");
    // A start that has not passed is restored as it was.
    report.plan.settings.insert("start-at".into(), format!("{}.000", now + 45));
    write(&path, &report);
    let cfg = parse(&["--resume", file]).unwrap();
    assert_eq!(cfg.start_at.unwrap().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs(), now + 45);
}
