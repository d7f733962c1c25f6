//! `run --resume FILE`: continue an interrupted session. The saved report is checked before
//! any load is sent (ours, this schema, the same settings, not complete); its finished cells
//! are kept with their attempts, the rest run, and the report goes on on one timeline.

use super::prior::ResumeFrom;
use super::state::{CellEntry, CellStatus, SessionState};
use crate::config::RunConfig;
use crate::config::settings::first_difference;
use crate::experiment::Experiments;
use crate::report::json::SessionReport;
use crate::report::load::load_report;
use crate::report::shard::SlotRecord;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::time::Instant;

/// Reads the report at `path` for `--resume`: one of ours, of this schema, with its settings
/// recorded; the error is one line.
pub fn read(path: &Path) -> Result<SessionReport, String> {
    let report = load_report(path).map_err(|e| resume_error(path, &e.to_string()))?;
    if report.sweep.is_some() {
        return Err(resume_error(path, "a sweep report (run --server-cmd) cannot be continued: run the sweep again"));
    }
    if report.plan.settings.is_empty() {
        let reason = "the report does not record its settings (written before --resume existed)";
        return Err(resume_error(path, reason));
    }
    Ok(report)
}

fn resume_error(path: &Path, reason: &str) -> String {
    format!("--resume {}: {reason}", path.display())
}

/// Reads `path` and checks it can be continued under `cfg`; the error is one line.
pub fn open(path: &Path, cfg: &RunConfig) -> Result<ResumeFrom, String> {
    let why = |reason: String| resume_error(path, &reason);
    let report = read(path)?;
    let (saved, now) = (replaceable_left_out(&report.plan.settings), replaceable_left_out(&cfg.settings()));
    if let Some(d) = first_difference(&saved, &now) {
        return Err(why(format!("{d}; a flag given with --resume must match the original run's (or be left out)")));
    }
    if report.complete {
        return Err(why("nothing to resume: every cell of that session has an outcome".into()));
    }
    Ok(ResumeFrom { path: path.to_path_buf(), report: Arc::new(report) })
}

/// Settings a resumed run may give anew: `--start-at`, as the saved one of a killed shard has
/// passed. The resumed shard's unfinished cells run on the new timeline; the session id (and
/// the seed derived from it) stays the saved one, restored with the other settings.
pub const RESUME_REPLACES: [&str; 1] = ["start-at"];

/// `settings` without [`RESUME_REPLACES`].
fn replaceable_left_out(settings: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    settings
        .iter()
        .filter(|(k, _)| !RESUME_REPLACES.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Refuses a target that serves another model than the saved session measured.
pub fn check_model(resume: &ResumeFrom, model: &str) -> anyhow::Result<()> {
    match resume.report.model == model {
        true => Ok(()),
        false => anyhow::bail!(
            "--resume {}: it was run against model {}, this target serves {model}",
            resume.path.display(),
            resume.report.model
        ),
    }
}

/// The session start to measure from: the saved session's, so attempt and action times of the
/// resumed run follow on from the saved ones; `now` with a note when the gap cannot be told.
pub fn origin(report: &SessionReport, now: Instant) -> (Instant, Option<String>) {
    match age(report).and_then(|g| now.checked_sub(g)) {
        Some(start) => (start, None),
        None => (now, Some("resumed: times of the resumed run count from its own start, not the saved one's".into())),
    }
}

/// What [`apply`] kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Kept {
    /// Cells kept with an outcome.
    pub finished: usize,
    /// Cells left to run (interrupted ones keep their earlier attempts).
    pub to_run: usize,
}

/// The cell status a saved cell continues with: its outcome when its latest round of runs
/// finished (with one run per cell: its last attempt finished), pending (to run again) when
/// it was interrupted, lacks runs (`--num-runs`: it continues the runs it lacks) or never ran.
fn continued(cell: &CellEntry) -> CellStatus {
    let round = cell.round();
    if !round.complete {
        return CellStatus::Pending;
    }
    cell.round_status()
}

/// Gives every planned cell the attempts `report` holds for it; finished cells leave the
/// queue, and the saved actions come first in the action log.
pub fn apply(report: &SessionReport, experiments: &Experiments, state: &mut SessionState) -> Kept {
    let mut kept = Kept::default();
    for (id, cell) in state.cells.iter_mut().enumerate() {
        let Some(e) = experiments.iter().find(|e| e.owns(&cell.spec)) else { continue };
        let attempts = e.recover(report, &cell.spec, &cell.label);
        cell.attempts = attempts.into_iter().map(Arc::new).collect();
        let status = continued(cell);
        if cell.status != CellStatus::Pending {
            continue; // skipped by the plan (KV fit) as before
        }
        cell.status = status;
        match cell.status.is_final() {
            true => {
                kept.finished += 1;
                state.queue.retain(|q| *q != id);
            }
            false => kept.to_run += 1,
        }
    }
    let mut actions = report.actions.clone();
    actions.append(&mut state.actions);
    state.actions = actions;
    kept
}

/// The saved series, stale stretches and warnings put before the resumed run's own.
pub fn merge_history(saved: &SessionReport, report: &mut SessionReport) {
    let series = std::mem::take(&mut report.replica_series);
    report.replica_series = join_maps(&saved.replica_series, series);
    let stale = std::mem::take(&mut report.replica_stale);
    report.replica_stale = join_maps(&saved.replica_stale, stale);
    let mut warnings = saved.warnings.clone();
    for w in std::mem::take(&mut report.warnings) {
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    report.warnings = warnings;
    if let (Some(was), Some(now)) = (&saved.shard, report.shard.as_mut()) {
        now.timeline = slots_kept(&was.timeline, std::mem::take(&mut now.timeline));
    }
}

/// A resumed shard's timeline: the saved run's slots (each at its own `--start-at`'s instant)
/// but those of attempts run again, then the resumed run's. `report merge` reads a cell's slot
/// on every shard to tell whether they ran it together.
fn slots_kept(saved: &[SlotRecord], now: Vec<SlotRecord>) -> Vec<SlotRecord> {
    let again = |s: &SlotRecord| now.iter().any(|n| (&n.cell, n.attempt) == (&s.cell, s.attempt));
    let mut out: Vec<SlotRecord> = saved.iter().filter(|s| !again(s)).cloned().collect();
    out.extend(now);
    out
}

fn join_maps<T: Clone>(saved: &BTreeMap<String, Vec<T>>, now: BTreeMap<String, Vec<T>>) -> BTreeMap<String, Vec<T>> {
    let mut out = saved.clone();
    for (k, mut v) in now {
        out.entry(k).or_default().append(&mut v);
    }
    out
}

/// The action logged when a session is resumed under `cfg`; it names a new `--start-at`.
pub fn action(resume: &ResumeFrom, kept: Kept, cfg: &RunConfig) -> String {
    let line = format!(
        "resumed session from {}: {} cell(s) kept, {} to run",
        resume.path.display(),
        kept.finished,
        kept.to_run
    );
    let key = RESUME_REPLACES[0];
    match (resume.report.plan.settings.get(key), cfg.settings().get(key)) {
        (Some(was), Some(now)) if was != now => {
            format!("{line}, on a new timeline: --start-at {now} (was {was})")
        }
        _ => line,
    }
}

/// How long ago `report`'s session started, when it can be told.
fn age(report: &SessionReport) -> Option<Duration> {
    humantime::parse_rfc3339(&report.started_at).ok().and_then(|t| SystemTime::now().duration_since(t).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Attempt;
    use crate::report::json::{SeriesPoint, StaleInterval};
    use crate::report::status::AttemptStatus;

    fn point(t_s: f64) -> SeriesPoint {
        SeriesPoint {
            t_s,
            running: None,
            waiting: None,
            kv_usage: None,
            generation_tokens: None,
            prefix_hits_tokens: None,
            preemptions: None,
        }
    }

    fn cell(runs: u32, statuses: &[AttemptStatus]) -> CellEntry {
        let decode = |i: usize, s| {
            Arc::new(Attempt::Decode(Box::new(crate::report::tests_schema::full_attempt(i as u32 + 1, s))))
        };
        let spec = crate::cell::spec::CellSpec::grid(crate::report::kind::ExperimentKind::Decode, 0, 1);
        let attempts = statuses.iter().enumerate().map(|(i, s)| decode(i, *s)).collect();
        CellEntry { spec, label: "c".into(), status: CellStatus::Pending, attempts, runs }
    }

    #[test]
    fn interrupted_cells_run_again_and_finished_ones_keep_their_outcome() {
        use AttemptStatus::*;
        assert_eq!(continued(&cell(1, &[])), CellStatus::Pending);
        assert_eq!(continued(&cell(1, &[Measured])), CellStatus::Measured);
        assert_eq!(continued(&cell(1, &[Errored])), CellStatus::Errored);
        assert_eq!(continued(&cell(1, &[SkippedByOperator])), CellStatus::SkippedByOperator);
        assert_eq!(continued(&cell(1, &[Paused])), CellStatus::Pending);
        assert_eq!(continued(&cell(1, &[Stopped])), CellStatus::Pending);
    }

    #[test]
    fn a_cell_that_lacks_runs_continues_them() {
        use AttemptStatus::*;
        assert_eq!(continued(&cell(3, &[Measured, Measured])), CellStatus::Pending, "one run to go");
        assert_eq!(continued(&cell(3, &[Measured, Stopped])), CellStatus::Pending);
        assert_eq!(continued(&cell(3, &[Measured, Errored, Measured])), CellStatus::Measured);
        assert_eq!(continued(&cell(3, &[Errored, Errored, Errored])), CellStatus::Errored);
        assert_eq!(continued(&cell(3, &[Measured, SkippedByOperator])), CellStatus::Measured, "the skip ended it");
        assert_eq!(continued(&cell(2, &[Measured, Measured, Measured])), CellStatus::Pending, "a re-run's round");
    }

    #[test]
    fn saved_history_comes_first_and_warnings_are_not_repeated() {
        let mut saved = crate::report::tests_schema::minimal_report();
        saved.replica_series.insert("a".into(), vec![point(1.0)]);
        saved.replica_stale.insert("a".into(), vec![StaleInterval { from_s: 1.0, to_s: Some(2.0), error: "x".into() }]);
        saved.warnings = vec!["w1".into()];
        let mut now = crate::report::tests_schema::minimal_report();
        now.replica_series.insert("a".into(), vec![point(9.0)]);
        now.replica_series.insert("b".into(), vec![point(9.5)]);
        now.warnings = vec!["w1".into(), "w2".into()];
        merge_history(&saved, &mut now);
        let times: Vec<f64> = now.replica_series["a"].iter().map(|p| p.t_s).collect();
        assert_eq!(times, [1.0, 9.0]);
        assert_eq!(now.replica_series["b"].len(), 1);
        assert_eq!(now.replica_stale["a"].len(), 1);
        assert_eq!(now.warnings, ["w1", "w2"]);
    }

    #[test]
    fn a_resumed_shard_keeps_the_saved_slots_of_cells_it_does_not_run_again() {
        let saved = [SlotRecord::on_time("a", 1, 100.0), SlotRecord::on_time("b", 1, 116.0)];
        let kept = slots_kept(&saved, vec![SlotRecord::on_time("b", 1, 500.0), SlotRecord::on_time("c", 1, 516.0)]);
        let got: Vec<(&str, f64)> = kept.iter().map(|s| (s.cell.as_str(), s.slot_start_unix_s)).collect();
        assert_eq!(got, [("a", 100.0), ("b", 500.0), ("c", 516.0)]);
    }

    #[test]
    fn the_origin_follows_the_saved_start() {
        let mut r = crate::report::tests_schema::minimal_report();
        let ten_ago = SystemTime::now() - Duration::from_secs(10);
        r.started_at = crate::report::writer::rfc3339_seconds(ten_ago);
        let now = Instant::now() + Duration::from_secs(3600);
        let (start, note) = origin(&r, now);
        let gap = now - start;
        assert!(note.is_none() && gap >= Duration::from_secs(10) && gap < Duration::from_secs(12), "{gap:?}");
        r.started_at = "yesterday".into();
        let (start, note) = origin(&r, now);
        assert!(start == now && note.is_some());
    }
}
