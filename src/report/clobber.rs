//! Whether a command may write where the user said: no file is replaced silently (issue 21).
//!
//! Every writer of a user-named file checks its path before any work (exit 2, one line):
//! a session report (`run --out`, the demo's `--out`) goes to a new file, to the file
//! `--resume` continues, or over anything with `--overwrite`; an existing session report is
//! named as such (and, when unfinished, `--resume` offered). A derived output (`report --out`,
//! `bench --json`, `sim --ready-file`) may replace an earlier output of its own kind that it
//! recognises, never a session report or another file, unless `--overwrite`. A `--log-file` is
//! only appended to, so it may be any file but a session report (a log line would break it).

use super::load::{LoadError, load_report};
use std::path::Path;

/// Files larger than this are not read to tell what they are (they are refused all the same).
const SNIFF_LIMIT: u64 = 256 << 20;

/// What a path holds before a command writes there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Existing {
    /// Nothing: the file would be new.
    Nothing,
    /// A session report of ours, described (`a complete session report (model, started ...)`).
    Report {
        /// What it is, for the message.
        what: String,
        /// It has `complete: false`: `--resume` can continue it.
        unfinished: bool,
    },
    /// Any other file.
    Other,
}

/// What `path` holds: nothing, one of our session reports, or another file.
pub(crate) fn existing(path: &Path) -> Existing {
    let Ok(meta) = std::fs::metadata(path) else { return Existing::Nothing };
    if meta.len() > SNIFF_LIMIT {
        return Existing::Other;
    }
    let report = |what: String, unfinished| Existing::Report { what, unfinished };
    match load_report(path) {
        Ok(r) => {
            let state = if r.complete { "a complete" } else { "an unfinished" };
            report(format!("{state} session report ({}, started {})", r.model, r.started_at), !r.complete)
        }
        Err(LoadError::Version { found }) => report(format!("a session report of schema version {found}"), false),
        Err(LoadError::Damaged(_)) => report("a damaged session report".into(), false),
        Err(LoadError::Unreadable { .. } | LoadError::NotJson(_) | LoadError::Foreign(_)) => Existing::Other,
    }
}

/// Whether `a` and `b` name the same existing file.
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Checks that a session report may be written at `path` (given as `flag`): a new file, the
/// file being resumed (`resumed`), or anything with `overwrite`.
pub(crate) fn check_report_path(
    path: &Path,
    flag: &str,
    overwrite: bool,
    resumed: Option<&Path>,
) -> Result<(), String> {
    if overwrite || resumed.is_some_and(|r| same_file(r, path)) {
        return Ok(());
    }
    let shown = path.display();
    match existing(path) {
        Existing::Nothing => Ok(()),
        Existing::Report { what, unfinished } => {
            let resume = if unfinished { format!("--resume {shown} continues it, ") } else { String::new() };
            Err(format!("{flag} {shown} holds {what}; {resume}--overwrite replaces it, or name another file"))
        }
        Existing::Other => Err(format!(
            "{flag} {shown} exists and is not a session report; --overwrite replaces it, or name another file"
        )),
    }
}

/// Checks that a derived output may be written at `path` (given as `flag`): a new file, an
/// earlier output that `ours` recognises from its bytes, or anything with `overwrite`.
pub(crate) fn check_output(
    path: &Path,
    flag: &str,
    overwrite: bool,
    ours: impl Fn(&[u8]) -> bool,
) -> Result<(), String> {
    if overwrite {
        return Ok(());
    }
    let shown = path.display();
    match existing(path) {
        Existing::Nothing => Ok(()),
        Existing::Report { what, .. } => {
            Err(format!("{flag} {shown} holds {what}; --overwrite replaces it, or name another file"))
        }
        Existing::Other if std::fs::read(path).is_ok_and(|b| ours(&b)) => Ok(()),
        Existing::Other => Err(format!("{flag} {shown} already exists; --overwrite replaces it, or name another file")),
    }
}

/// Checks that `--log-file` (`log`) can take appended lines: not the session's report file
/// (`report`), not a session report at all, and openable for appending (created if need be).
pub(crate) fn check_log_file(log: &Path, report: Option<&Path>) -> Result<(), String> {
    let shown = log.display();
    if report.is_some_and(|r| r == log || same_file(r, log)) {
        return Err(format!("--log-file {shown} is the report file; name another file"));
    }
    if let Existing::Report { what, .. } = existing(log) {
        return Err(format!("--log-file {shown} holds {what}: log lines would break it; name another file"));
    }
    let open = std::fs::OpenOptions::new().create(true).append(true).open(log);
    open.map(drop).map_err(|e| format!("--log-file {shown}: cannot open it for appending: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests_schema::minimal_report;

    fn report_at(path: &Path, complete: bool) {
        let mut r = minimal_report();
        r.complete = complete;
        std::fs::write(path, serde_json::to_vec(&r).unwrap()).unwrap();
    }

    #[test]
    fn existing_files_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let (done, part, notes) = (dir.path().join("d.json"), dir.path().join("p.json"), dir.path().join("n.txt"));
        report_at(&done, true);
        report_at(&part, false);
        std::fs::write(&notes, "my notes").unwrap();
        assert_eq!(existing(&dir.path().join("new.json")), Existing::Nothing);
        assert!(
            matches!(existing(&done), Existing::Report { unfinished: false, ref what } if what.starts_with("a complete"))
        );
        assert!(matches!(existing(&part), Existing::Report { unfinished: true, .. }));
        assert_eq!(existing(&notes), Existing::Other);
        std::fs::write(&notes, r#"{"schema_version": 1, "tool": {"name": "llm-decode-bench"}}"#).unwrap();
        assert!(matches!(existing(&notes), Existing::Report { .. }), "an older report of ours is still ours");
    }

    #[test]
    fn a_report_path_takes_a_new_file_the_resumed_one_or_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let (part, notes) = (dir.path().join("p.json"), dir.path().join("n.txt"));
        report_at(&part, false);
        std::fs::write(&notes, "my notes").unwrap();
        assert!(check_report_path(&dir.path().join("new.json"), "--out", false, None).is_ok());
        let e = check_report_path(&part, "--out", false, None).unwrap_err();
        assert!(e.contains("holds an unfinished session report") && e.contains("--resume "), "{e}");
        assert!(check_report_path(&part, "--out", false, Some(&part)).is_ok(), "the resumed file");
        assert!(check_report_path(&part, "--out", true, None).is_ok());
        let e = check_report_path(&notes, "--out", false, None).unwrap_err();
        assert!(e.contains("exists and is not a session report") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn an_output_replaces_only_its_own_kind() {
        let dir = tempfile::tempdir().unwrap();
        let (part, old) = (dir.path().join("p.json"), dir.path().join("old.json"));
        report_at(&part, false);
        std::fs::write(&old, "ours").unwrap();
        let ours = |b: &[u8]| b == b"ours";
        assert!(check_output(&old, "--json", false, ours).is_ok());
        assert!(check_output(&old, "--out", false, |_| false).unwrap_err().contains("already exists"));
        assert!(check_output(&part, "--json", false, |_| true).unwrap_err().contains("holds an unfinished"));
        assert!(check_output(&part, "--json", true, |_| false).is_ok());
    }

    #[test]
    fn a_log_file_is_never_a_report() {
        let dir = tempfile::tempdir().unwrap();
        let (part, log) = (dir.path().join("p.json"), dir.path().join("run.log"));
        report_at(&part, false);
        assert!(check_log_file(&part, None).unwrap_err().contains("log lines would break it"));
        assert!(check_log_file(&log, Some(&log)).unwrap_err().contains("is the report file"));
        assert!(check_log_file(&log, Some(&part)).is_ok() && log.exists(), "created for appending");
        assert!(check_log_file(&dir.path().join("no/such/dir/x.log"), None).is_err());
    }
}
