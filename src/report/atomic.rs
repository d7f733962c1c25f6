//! Atomic file writes: a temporary file in the same directory, fsync, rename, then fsync of
//! the directory so that the rename itself survives a crash.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Temporary names handed out by this process; with the pid it makes every name unique
/// between writers of one process and between processes writing beside each other.
static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// Most temporary names tried before giving up (each try skips a name that already exists).
const TEMP_TRIES: u32 = 64;

/// Writes `bytes` to `path` so that readers see either the old file or the whole new one.
///
/// Parent directories are created as needed. The bytes go to a fresh temporary file beside
/// `path` (`.<name>.<pid>.<n>.tmp`, never an existing file), which is fsynced and renamed
/// over `path`; then the directory is fsynced (on unix). On error the temporary file is
/// removed and `path` is left as it was (unless only the directory fsync failed).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("report");
    let (tmp, mut file) = create_temp(dir, name)?;
    let result = (|| {
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result?;
    sync_dir(dir)
}

/// Creates a new, empty temporary file for `name` in `dir`.
fn create_temp(dir: &Path, name: &str) -> std::io::Result<(PathBuf, File)> {
    let pid = std::process::id();
    let mut last = None;
    for _ in 0..TEMP_TRIES {
        let seq = TEMP_SEQ.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{name}.{pid}.{seq}.tmp"));
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            // A leftover of an earlier process that had this pid: take the next name.
            Err(e) if e.kind() == ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary name")))
}

/// Makes a rename in `dir` durable. File systems that cannot sync a directory (EINVAL,
/// unsupported) are not an error: there is nothing more to do there.
#[cfg(unix)]
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    match File::open(dir).and_then(|d| d.sync_all()) {
        Err(e) if matches!(e.kind(), ErrorKind::InvalidInput | ErrorKind::Unsupported) => Ok(()),
        other => other,
    }
}

/// Directories cannot be opened as files here; the rename is as durable as the OS makes it.
#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_in(dir: &Path) -> Vec<String> {
        let entries = std::fs::read_dir(dir).expect("readable dir");
        let mut names: Vec<String> = entries.map(|e| e.expect("entry").file_name().to_string_lossy().into()).collect();
        names.sort();
        names
    }

    #[test]
    fn writes_and_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/r.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(names_in(p.parent().unwrap()), ["r.json"], "no temporary file left behind");
    }

    #[test]
    fn a_failed_rename_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        // A non-empty directory where the file should go: the temporary file is written, the
        // rename over it fails.
        let p = dir.path().join("r.json");
        std::fs::create_dir(&p).unwrap();
        std::fs::write(p.join("inside"), "x").unwrap();
        assert!(write_atomic(&p, b"new").is_err());
        assert_eq!(names_in(dir.path()), ["r.json"]);
        assert_eq!(names_in(&p), ["inside"], "the directory in the way is untouched");
    }

    #[test]
    fn an_existing_temporary_name_is_never_reused() {
        let dir = tempfile::tempdir().unwrap();
        let next = TEMP_SEQ.load(Ordering::Relaxed);
        let pid = std::process::id();
        // Leftovers of an earlier process with this pid, on the next few names.
        for seq in next..next + 8 {
            std::fs::write(dir.path().join(format!(".r.json.{pid}.{seq}.tmp")), "old").unwrap();
        }
        write_atomic(&dir.path().join("r.json"), b"new").unwrap();
        assert_eq!(std::fs::read(dir.path().join("r.json")).unwrap(), b"new");
        let leftovers = names_in(dir.path()).iter().filter(|n| n.ends_with(".tmp")).count();
        assert_eq!(leftovers, 8, "the leftovers are neither clobbered nor renamed");
    }

    #[test]
    fn concurrent_writers_of_one_file_do_not_clash() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        let payload = |w: usize| vec![b'a' + w as u8; 4096 * (w + 1)];
        std::thread::scope(|s| {
            for w in 0..6 {
                let (p, bytes) = (&p, payload(w));
                s.spawn(move || {
                    for _ in 0..40 {
                        write_atomic(p, &bytes).expect("every write succeeds");
                    }
                });
            }
        });
        let last = std::fs::read(&p).unwrap();
        assert!((0..6).any(|w| last == payload(w)), "the file is one writer's whole payload");
        assert_eq!(names_in(dir.path()), ["r.json"]);
    }
}
