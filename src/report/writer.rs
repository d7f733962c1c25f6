//! Writes the session report atomically to its file, choosing a timestamped name by default.

use super::atomic::write_atomic;
use super::json::SessionReport;
use std::collections::BTreeSet;
use std::fs::OpenOptions;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Directory of default-named reports, relative to the working directory.
pub const DEFAULT_DIR: &str = "sessions";

/// Last second humantime can format (9999-12-31T23:59:59Z), seconds since the epoch.
const MAX_RFC3339_SECS: u64 = 253_402_300_799;

/// Default paths handed out by this process, so that two writers never share one before
/// either has written its file.
static CLAIMED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// Owns the report's output path and (re)writes the whole report there atomically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportWriter {
    path: PathBuf,
    /// The claim on a default name, until the first write puts the report there.
    claim: Option<Arc<Claim>>,
}

/// A hidden `.<name>.claim` file beside a default-named report: another process looking for
/// a free name skips a name claimed so, before the report itself exists. Removed once the
/// report is written, or when the writer goes.
#[derive(Debug, PartialEq, Eq)]
struct Claim(PathBuf);

impl Drop for Claim {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl ReportWriter {
    /// A writer for `explicit`, or for `sessions/<UTC timestamp>.json` when `None`.
    ///
    /// An explicit path is used as given (`--out` is checked beforehand, src/report/clobber.rs).
    /// A default path never names a file that already exists, that another writer of this
    /// process was given, or that another process claimed: `-1`, `-2`, ... are appended to the
    /// timestamp until the name is free.
    pub fn new(explicit: Option<PathBuf>) -> ReportWriter {
        match explicit {
            Some(path) => ReportWriter { path, claim: None },
            None => ReportWriter::in_dir(Path::new(DEFAULT_DIR), SystemTime::now()),
        }
    }

    /// A writer for a free default name in `dir` for the time `now` (see [`ReportWriter::new`]);
    /// `dir` is created to hold the name's claim.
    pub fn in_dir(dir: &Path, now: SystemTime) -> ReportWriter {
        let (path, claim) = claim_free_path(dir, &file_stem(now));
        ReportWriter { path, claim: claim.map(|c| Arc::new(Claim(c))) }
    }

    /// Where the report is written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `report` as pretty JSON (with a final newline), replacing the previous version
    /// atomically; parent directories are created as needed.
    pub fn write(&self, report: &SessionReport) -> std::io::Result<()> {
        write_atomic(&self.path, &to_bytes(report)?)?;
        self.release_claim();
        Ok(())
    }

    /// The report is at its path: the name needs no claim any more.
    fn release_claim(&self) {
        if let Some(claim) = &self.claim {
            let _ = std::fs::remove_file(&claim.0);
        }
    }

    /// [`ReportWriter::write`]; when that fails, writes the report to its fallback file
    /// ([`super::fallback::fallback_path`]) instead. Returns the error at the report's path and,
    /// when there was one, how the fallback went (where it was written, or why not).
    pub fn write_or_fallback(&self, report: &SessionReport) -> (std::io::Result<()>, Option<std::io::Result<PathBuf>>) {
        let bytes = match to_bytes(report) {
            Ok(b) => b,
            Err(e) => return (Err(e), None),
        };
        match write_atomic(&self.path, &bytes) {
            Ok(()) => {
                self.release_claim();
                (Ok(()), None)
            }
            Err(e) => (Err(e), Some(super::fallback::write_fallback(&self.path, &bytes))),
        }
    }
}

/// The report as pretty JSON with a final newline.
fn to_bytes(report: &SessionReport) -> std::io::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(report).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// The current time as RFC 3339 UTC with whole seconds, e.g. `2026-11-29T17:30:15Z`.
pub fn now_rfc3339() -> String {
    rfc3339_seconds(SystemTime::now())
}

/// `time` as RFC 3339 UTC with whole seconds; times before 1970 or after 9999 are clamped.
pub fn rfc3339_seconds(time: SystemTime) -> String {
    humantime::format_rfc3339_seconds(clamp_time(time)).to_string()
}

/// The default report file name for `now`: its UTC timestamp, e.g. `20261129T173015Z.json`.
pub fn default_file_name(now: SystemTime) -> String {
    format!("{}.json", file_stem(now))
}

/// The compact UTC timestamp used as the default file stem: `20261129T173015Z`.
fn file_stem(now: SystemTime) -> String {
    rfc3339_seconds(now).chars().filter(|c| !matches!(c, '-' | ':')).collect()
}

/// `time` limited to the range humantime formats (its formatter panics outside it).
fn clamp_time(time: SystemTime) -> SystemTime {
    let max = UNIX_EPOCH + Duration::from_secs(MAX_RFC3339_SECS);
    match time.duration_since(UNIX_EPOCH) {
        Err(_) => UNIX_EPOCH,
        Ok(_) if time > max => max,
        Ok(_) => time,
    }
}

/// The first of `dir/stem.json`, `dir/stem-1.json`, ... that does not exist and that neither
/// this process nor another one claimed, now claimed; with its claim file (None when `dir`
/// takes no file: the first write will say why).
fn claim_free_path(dir: &Path, stem: &str) -> (PathBuf, Option<PathBuf>) {
    let mut claimed = CLAIMED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let candidate = |n: u32| match n {
        0 => dir.join(format!("{stem}.json")),
        n => dir.join(format!("{stem}-{n}.json")),
    };
    // Without its directory a name cannot be claimed, and two processes would pick the same.
    let _ = std::fs::create_dir_all(dir);
    // Finite: each claim or file takes one suffix, far fewer than u32::MAX.
    for path in (0..u32::MAX).map(candidate) {
        if claimed.contains(&path) || path.exists() {
            continue;
        }
        let claim = claim_path(&path);
        let taken = match OpenOptions::new().write(true).create_new(true).open(&claim) {
            Ok(_) => Some(claim),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(_) => None,
        };
        claimed.insert(path.clone());
        return (path, taken);
    }
    (candidate(u32::MAX), None)
}

/// The claim file of the default-named report `path`: `.<file name>.claim` beside it.
fn claim_path(path: &Path) -> PathBuf {
    let name = path.file_name().map_or_else(|| "report.json".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.claim"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests_schema::{full_report, minimal_report};

    /// 2026-11-29T17:30:15Z.
    fn at_seed_time() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_795_973_415)
    }

    /// File names in `dir`, sorted.
    fn names_in(dir: &Path) -> Vec<String> {
        let entries = std::fs::read_dir(dir).expect("readable dir");
        let mut names: Vec<String> = entries.map(|e| e.expect("entry").file_name().to_string_lossy().into()).collect();
        names.sort();
        names
    }

    #[test]
    fn timestamps_and_default_names() {
        assert_eq!(rfc3339_seconds(at_seed_time()), "2026-11-29T17:30:15Z");
        assert_eq!(default_file_name(at_seed_time() + Duration::from_millis(999)), "20261129T173015Z.json");
        assert_eq!(default_file_name(UNIX_EPOCH - Duration::from_secs(5)), "19700101T000000Z.json");
        let far = UNIX_EPOCH + Duration::from_secs(MAX_RFC3339_SECS * 2);
        assert_eq!(rfc3339_seconds(far), "9999-12-31T23:59:59Z");
        let now = now_rfc3339();
        assert_eq!((now.len(), now.as_bytes()[10], now.ends_with('Z')), (20, b'T', true), "{now}");
    }

    #[test]
    fn default_path_is_a_timestamp_under_its_dir() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sessions = dir.path().join(DEFAULT_DIR);
        let writer = ReportWriter::in_dir(&sessions, SystemTime::now());
        assert!(writer.path().starts_with(&sessions), "{:?}", writer.path());
        let name = writer.path().file_name().and_then(|n| n.to_str()).unwrap_or_default();
        assert!(name.ends_with(".json") && name.len() >= "20261129T173015Z.json".len(), "{name}");
    }

    #[test]
    fn a_name_another_process_claimed_is_skipped_and_claims_go_with_the_write() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Another process's claim on the first name: its report is not written yet.
        std::fs::write(dir.path().join(".20261129T173015Z.json.claim"), "").expect("seeded");
        let writer = ReportWriter::in_dir(dir.path(), at_seed_time());
        assert_eq!(writer.path(), dir.path().join("20261129T173015Z-1.json"));
        assert!(dir.path().join(".20261129T173015Z-1.json.claim").exists(), "claimed before any write");
        writer.write(&minimal_report()).expect("written");
        assert_eq!(names_in(dir.path()), [".20261129T173015Z.json.claim", "20261129T173015Z-1.json"]);
        // A writer that never writes leaves no claim behind.
        drop(ReportWriter::in_dir(dir.path(), at_seed_time()));
        assert_eq!(names_in(dir.path()).len(), 2);
    }

    #[test]
    fn explicit_path_is_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("mine.json");
        std::fs::write(&path, "old").expect("seeded");
        let writer = ReportWriter::new(Some(path.clone()));
        assert_eq!(writer.path(), path);
        writer.write(&minimal_report()).expect("written");
        let want = format!("{{\n  \"schema_version\": {},", crate::report::json::SCHEMA_VERSION);
        assert!(std::fs::read_to_string(&path).expect("read").starts_with(&want));
    }

    #[test]
    fn default_names_do_not_collide() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sessions = dir.path().join("sessions");
        let first = ReportWriter::in_dir(&sessions, at_seed_time());
        let second = ReportWriter::in_dir(&sessions, at_seed_time());
        assert_eq!(first.path(), sessions.join("20261129T173015Z.json"));
        assert_eq!(second.path(), sessions.join("20261129T173015Z-1.json"));
        std::fs::create_dir_all(&sessions).expect("dir");
        std::fs::write(sessions.join("20261129T173015Z-2.json"), "someone else's").expect("seeded");
        let third = ReportWriter::in_dir(&sessions, at_seed_time());
        assert_eq!(third.path(), sessions.join("20261129T173015Z-3.json"));
        for writer in [&first, &second, &third] {
            writer.write(&minimal_report()).expect("written");
        }
        let existing = std::fs::read_to_string(sessions.join("20261129T173015Z-2.json")).expect("read");
        assert_eq!(existing, "someone else's");
        assert_eq!(names_in(&sessions).len(), 4);
    }

    #[test]
    fn repeated_writes_leave_one_valid_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let writer = ReportWriter::in_dir(dir.path(), at_seed_time());
        let mut report = full_report();
        for n in 0..5 {
            report.warnings.push(format!("write {n}"));
            writer.write(&report).expect("written");
            let text = std::fs::read_to_string(writer.path()).expect("read");
            let back: SessionReport = serde_json::from_str(&text).expect("valid report");
            assert_eq!(back, report);
        }
        assert_eq!(names_in(dir.path()), ["20261129T173015Z.json"], "no temporary file left");
    }

    #[test]
    fn write_errors_are_returned() {
        let dir = tempfile::tempdir().expect("tempdir");
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "x").expect("seeded");
        let writer = ReportWriter::new(Some(blocker.join("report.json")));
        assert!(writer.write(&minimal_report()).is_err());
    }
}
