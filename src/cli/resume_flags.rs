//! `run --resume FILE` alone: the flags the saved session ran with come back from its report.
//!
//! Every setting the report records (`plan.settings`, by flag name: target, model, plan,
//! contexts, concurrencies, window, ...) that the command line (or `--config`) leaves out
//! becomes that flag, spliced in after `run` before clap parses anything, so a restored value
//! is checked exactly as a typed one. The replicas' metrics pages come back the same way from
//! `target.replica_info` (or `metrics_source` for `--prometheus`) when no metrics flag is given.
//! A flag that is given stays; `--resume` then refuses it if it differs from the recorded one
//! (src/session/resume.rs). Flags the report does not record (`--out`, `--headless`,
//! `--log-file`, `--poll-interval`, the API key, ...) only change how the session is watched or
//! where it is written, and may differ freely.

use super::config_file::{flag_value, given};
use super::{Cli, Command as Sub};
use crate::report::json::SessionReport;
use clap::{ArgAction, Command, Parser};
use std::collections::BTreeSet;
use std::ffi::OsString;

/// Passes over the settings: a restored `--plan` brings settings of its own into play.
const PASSES: usize = 3;

/// Ids of the flags that choose where replica metrics come from.
const METRICS_FLAGS: [&str; 4] = ["metrics_url", "no_metrics", "prometheus", "replica_selector"];

/// `argv` with the flags of `run --resume FILE`'s report spliced in; unchanged without
/// `--resume`. A report that cannot be read is the one-line `--resume` error.
pub fn expand(cli: &Command, argv: Vec<OsString>) -> Result<Vec<OsString>, String> {
    let Some(run_at) = argv.iter().skip(1).position(|a| a == "run").map(|i| i + 1) else { return Ok(argv) };
    let Some(run) = cli.find_subcommand("run") else { return Ok(argv) };
    let user: Vec<String> = argv[run_at + 1..].iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let Some(path) = flag_value(&user, "--resume") else { return Ok(argv) };
    let report = crate::session::resume::read(std::path::Path::new(&path))?;
    let mut taken = given(run, &user);
    new_start_needed(&report, &path, &taken, std::time::SystemTime::now())?;
    let mut restored = first_flags(run, &report, &mut taken);
    restored.extend(metrics_flags(&report, &mut taken));
    for _ in 0..PASSES {
        let now = current_settings(&splice(&argv, run_at, &restored));
        let Some(now) = now else { break };
        let more = differing_flags(run, &report, &now, &mut taken);
        if more.is_empty() {
            break;
        }
        restored.extend(more);
    }
    Ok(splice(&argv, run_at, &restored))
}

/// Refuses to restore a shard's `--start-at` that has passed at `now` (the run would refuse
/// it as a typed one, less clearly): a resumed shard is given a new one, which replaces the
/// saved one (src/session/resume.rs); its unfinished cells then run on that timeline.
fn new_start_needed(
    report: &SessionReport,
    path: &str,
    taken: &BTreeSet<String>,
    now: std::time::SystemTime,
) -> Result<(), String> {
    let Some(saved) = report.plan.settings.get("start-at") else { return Ok(()) };
    if taken.contains("start_at") {
        return Ok(());
    }
    let Ok(at) = super::shard_flags::parse_start_at(saved) else { return Ok(()) };
    match now.duration_since(at) {
        Ok(ago) if ago > super::shard_flags::START_AT_PAST_MAX => Err(format!(
            "--resume {path}: the shard's --start-at {saved} passed {:.0} s ago; give it a new one (--start-at T): \
             its unfinished cells run on that timeline, alone unless the other shards resume at the same T",
            ago.as_secs_f64()
        )),
        _ => Ok(()),
    }
}

/// `argv` with `flags` after its `run`.
fn splice(argv: &[OsString], run_at: usize, flags: &[String]) -> Vec<OsString> {
    let mut out = argv[..=run_at].to_vec();
    out.extend(flags.iter().map(OsString::from));
    out.extend(argv[run_at + 1..].iter().cloned());
    out
}

/// `--base-url` (required), `--plan` (it decides which settings apply) and `--shard` (a new
/// `--start-at` given with `--resume` is refused without it), unless given.
fn first_flags(run: &Command, report: &SessionReport, taken: &mut BTreeSet<String>) -> Vec<String> {
    let first = report.plan.settings.iter().filter(|(k, _)| matches!(k.as_str(), "base-url" | "plan" | "shard"));
    first.flat_map(|(k, v)| flag(run, k, v, taken)).collect()
}

/// The settings `argv` gives without the files it names; None when it does not parse (clap
/// or the flag checks say why later).
fn current_settings(argv: &[OsString]) -> Option<std::collections::BTreeMap<String, String>> {
    let Ok(Cli { command: Some(Sub::Run(args)), .. }) = Cli::try_parse_from(argv) else { return None };
    args.to_config().ok().map(|cfg| cfg.settings())
}

/// The recorded settings that differ from `now` and whose flag is not taken, as flags.
fn differing_flags(
    run: &Command,
    report: &SessionReport,
    now: &std::collections::BTreeMap<String, String>,
    taken: &mut BTreeSet<String>,
) -> Vec<String> {
    let differing = report.plan.settings.iter().filter(|(k, v)| now.get(*k) != Some(*v));
    differing.flat_map(|(k, v)| flag(run, k, v, taken)).collect()
}

/// The flag that sets `key` to `value` (`--key=value`, a switch alone, nothing for `default`
/// or an unknown key), unless its flag is taken; takes it.
fn flag(run: &Command, key: &str, value: &str, taken: &mut BTreeSet<String>) -> Vec<String> {
    let Some(arg) = run.get_arguments().find(|a| a.get_long() == Some(key)) else { return Vec::new() };
    if value == "default" || !taken.insert(arg.get_id().to_string()) {
        return Vec::new();
    }
    match (arg.get_action(), value) {
        (ArgAction::SetTrue, "true") => vec![format!("--{key}")],
        (ArgAction::SetTrue, _) => Vec::new(),
        _ => vec![format!("--{key}={value}")],
    }
}

/// The replicas' metrics pages the saved session polled, unless a metrics flag is given:
/// `--prometheus` (and its selector), a `--metrics-url NAME=URL` per replica, or
/// `--no-metrics` for a decode session that polled none.
fn metrics_flags(report: &SessionReport, taken: &mut BTreeSet<String>) -> Vec<String> {
    if METRICS_FLAGS.iter().any(|f| taken.contains(*f)) {
        return Vec::new();
    }
    taken.extend(METRICS_FLAGS.map(String::from));
    if let Some(src) = &report.metrics_source {
        let selector = (!src.selector.is_empty()).then(|| format!("--replica-selector={}", src.selector));
        return std::iter::once(format!("--prometheus={}", src.url)).chain(selector).collect();
    }
    let replicas = &report.target.replica_info;
    let routing = report.plan.kinds.iter().any(|k| k == "routing");
    match replicas.is_empty() {
        // A routing session polls no page unless told to: nothing to restore.
        true if routing => Vec::new(),
        true => vec!["--no-metrics".into()],
        false => replicas.iter().map(|r| format!("--metrics-url={}={}", r.name, r.metrics_url)).collect(),
    }
}

#[cfg(test)]
#[path = "resume_flags_tests.rs"]
mod tests;
