//! When the report cannot be written to its path: checking the path before a session starts,
//! the fallback file a failed save goes to instead, and the record of how the saves went (for
//! the exit code, `src/cmd/exit.rs`).

use super::atomic::write_atomic;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The fallback file of the report at `path`: `llm-decode-bench-<pid>-<file name>` in the
/// system temporary directory.
pub(crate) fn fallback_path(path: &Path) -> PathBuf {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("report.json");
    std::env::temp_dir().join(format!("llm-decode-bench-{}-{name}", std::process::id()))
}

/// Writes `bytes` to the fallback file of `path`; returns where.
pub(crate) fn write_fallback(path: &Path, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let fallback = fallback_path(path);
    if fallback == path {
        return Err(std::io::Error::other("the report path is its own fallback"));
    }
    write_atomic(&fallback, bytes)?;
    Ok(fallback)
}

/// Checks that a report can be written at `path` (the `--out` flag, named `flag` in the
/// message): not a directory, not a device, and its directory (or the nearest existing
/// ancestor, which the writer would create it in) takes a new file. Writes nothing but a
/// probe file, removed at once.
pub(crate) fn check_writable(path: &Path, flag: &str) -> Result<(), String> {
    let shown = path.display();
    let trailing = path.as_os_str().to_string_lossy().ends_with(std::path::MAIN_SEPARATOR);
    if trailing || path.is_dir() {
        return Err(format!("{flag} {shown} is a directory; name a file, e.g. {}", path.join("report.json").display()));
    }
    if let Ok(meta) = std::fs::metadata(path)
        && !meta.is_file()
    {
        return Err(format!("{flag} {shown} is not a regular file"));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let existing = dir.ancestors().find(|a| a.as_os_str().is_empty() || a.exists()).unwrap_or(Path::new("."));
    let existing = if existing.as_os_str().is_empty() { Path::new(".") } else { existing };
    if !existing.is_dir() {
        return Err(format!("{flag} {shown}: {} is not a directory", existing.display()));
    }
    probe(existing).map_err(|e| format!("{flag} {shown}: cannot write in {}: {e}", existing.display()))
}

/// Creates and removes a file in `dir`.
fn probe(dir: &Path) -> std::io::Result<()> {
    let file = dir.join(format!(".llm-decode-bench-probe.{}", std::process::id()));
    OpenOptions::new().write(true).create_new(true).open(&file)?;
    std::fs::remove_file(&file)
}

/// How the saves of one report went, updated by the writer thread after every write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SaveRecord {
    /// Writes attempted.
    pub writes: u64,
    /// Of those, writes that failed at the report's path.
    pub failures: u64,
    /// The latest write failed at the report's path.
    pub last_failed: bool,
    /// The fallback file of the latest failed write, when that went there.
    pub fallback: Option<PathBuf>,
    /// The error of the latest failed write.
    pub last_error: Option<String>,
}

/// A [`SaveRecord`] shared by the writer thread and the session's caller.
#[derive(Debug, Default)]
pub struct SaveLog(Mutex<SaveRecord>);

impl SaveLog {
    /// The record as it stands.
    pub fn get(&self) -> SaveRecord {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Notes one write: its error at the report's path, if any, and where the fallback went.
    pub fn note(&self, error: Option<&std::io::Error>, fallback: Option<&Path>) {
        let mut r = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        r.writes += 1;
        r.last_failed = error.is_some();
        if let Some(e) = error {
            r.failures += 1;
            r.last_error = Some(e.to_string());
            r.fallback = fallback.map(Path::to_path_buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_devices_and_files_in_the_way_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let msg = check_writable(d, "--out").expect_err("a directory");
        assert!(msg.starts_with("--out ") && msg.contains("is a directory"), "{msg}");
        let slash = format!("{}/new/", d.display());
        assert!(check_writable(Path::new(&slash), "--out").expect_err("dir/").contains("is a directory"));
        std::fs::write(d.join("file"), "x").expect("seeded");
        let under = check_writable(&d.join("file/r.json"), "--out").expect_err("under a file");
        assert!(under.contains("is not a directory"), "{under}");
        assert!(check_writable(Path::new("/dev/null"), "--out").expect_err("device").contains("regular file"));
        assert_eq!(check_writable(&d.join("a/b/r.json"), "--out"), Ok(()));
        assert!(!d.join("a").exists(), "the check creates no directory");
        assert_eq!(check_writable(&d.join("file"), "--out"), Ok(()), "an existing report is replaced");
        assert_eq!(std::fs::read_dir(d).expect("dir").count(), 1, "no probe left");
    }

    #[test]
    fn the_fallback_goes_to_the_temp_dir() {
        let path = Path::new("/nonexistent/dir/fallback-test.json");
        let at = write_fallback(path, b"{}").expect("written");
        assert!(
            at.starts_with(std::env::temp_dir()) && at.to_string_lossy().ends_with("-fallback-test.json"),
            "{at:?}"
        );
        assert_eq!(std::fs::read(&at).expect("read"), b"{}");
        std::fs::remove_file(at).expect("removed");
    }
}
