//! Printing to stdout and stderr that a closed pipe cannot crash: `report FILE | head`, a
//! pager quit early, `run ... 2>&1 | head`.
//!
//! The standard `println!` and `eprintln!` panic when the write fails (exit 101 and a panic
//! message). SIGPIPE is left ignored, as Rust sets it, rather than restored to its default: a
//! process killed by SIGPIPE mid-session would lose its running cell and the report's last
//! version, while a write that returns EPIPE lets the session go on to save its report. So
//! every print of the crate goes through [`out_line!`](crate::out_line) /
//! [`err_line!`](crate::err_line) and the functions below: after a broken pipe the stream is
//! marked gone and later writes to it are dropped, the command finishes its work and exits
//! with the code it would have had. Other write errors on stdout (a full disk behind `>`) are
//! returned to the caller.

use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write to stdout found its reader gone.
static STDOUT_GONE: AtomicBool = AtomicBool::new(false);
/// Set once a write to stderr found its reader gone.
static STDERR_GONE: AtomicBool = AtomicBool::new(false);

/// Writes `bytes` to `w` and flushes; a broken pipe sets `gone` and is not an error, and
/// nothing is written once `gone` is set.
fn write_quietly(w: &mut impl Write, gone: &AtomicBool, bytes: &[u8]) -> std::io::Result<()> {
    if gone.load(Ordering::Relaxed) {
        return Ok(());
    }
    match w.write_all(bytes).and_then(|()| w.flush()) {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => {
            gone.store(true, Ordering::Relaxed);
            Ok(())
        }
        other => other,
    }
}

/// Writes `bytes` to stdout. A closed pipe is not an error (the output stops there); any
/// other failure is returned.
pub fn write_out(bytes: &[u8]) -> std::io::Result<()> {
    write_quietly(&mut std::io::stdout().lock(), &STDOUT_GONE, bytes)
}

/// Writes `bytes` to stderr; a failure is dropped (there is nowhere left to say it).
pub fn write_err(bytes: &[u8]) {
    let _ = write_quietly(&mut std::io::stderr().lock(), &STDERR_GONE, bytes);
}

/// True once stdout's reader has gone (a write found the pipe closed).
pub fn stdout_gone() -> bool {
    STDOUT_GONE.load(Ordering::Relaxed)
}

/// `println!` that survives a closed stdout: returns the `std::io::Result` of
/// [`write_out`](crate::stdio::write_out) (Ok on a broken pipe).
#[macro_export]
macro_rules! out_line {
    ($($arg:tt)*) => {
        $crate::stdio::write_out(format!("{}\n", format_args!($($arg)*)).as_bytes())
    };
}

/// `eprintln!` that survives a closed stderr ([`write_err`](crate::stdio::write_err)).
#[macro_export]
macro_rules! err_line {
    ($($arg:tt)*) => {
        $crate::stdio::write_err(format!("{}\n", format_args!($($arg)*)).as_bytes())
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer whose reader is gone.
    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_broken_pipe_is_quiet_and_stops_the_stream() {
        let gone = AtomicBool::new(false);
        assert!(write_quietly(&mut Closed, &gone, b"x").is_ok());
        assert!(gone.load(Ordering::Relaxed));
        let mut after = Vec::new();
        assert!(write_quietly(&mut after, &gone, b"dropped").is_ok());
        assert!(after.is_empty(), "nothing is written once the reader is gone");
    }

    #[test]
    fn other_errors_are_returned() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(ErrorKind::StorageFull.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let gone = AtomicBool::new(false);
        assert_eq!(write_quietly(&mut Full, &gone, b"x").unwrap_err().kind(), ErrorKind::StorageFull);
        assert!(!gone.load(Ordering::Relaxed));
    }

    /// Every print of the crate goes through this module: a bare `println!` or `eprintln!`
    /// anywhere else would panic on a closed pipe again.
    #[test]
    fn no_other_module_prints_with_the_std_macros() {
        let mut offenders = Vec::new();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut dirs = vec![root.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("src readable").map(|e| e.expect("entry").path()) {
                if entry.is_dir() {
                    dirs.push(entry);
                    continue;
                }
                let rel = entry.strip_prefix(&root).expect("under src").to_string_lossy().into_owned();
                // build.rs prints to cargo, not to a user; this file names the macros.
                if !rel.ends_with(".rs") || rel == "build.rs" || rel == "stdio.rs" {
                    continue;
                }
                let text = std::fs::read_to_string(&entry).expect("readable");
                for (n, line) in text.lines().enumerate() {
                    let code = line.split("//").next().unwrap_or("");
                    let bare = ["println!(", "eprintln!(", "print!(", "eprint!("]
                        .iter()
                        .any(|m| code.match_indices(m).any(|(i, _)| i == 0 || !is_ident(code.as_bytes()[i - 1])));
                    if bare && !in_test_code(&text, n) {
                        offenders.push(format!("src/{rel}:{}: {}", n + 1, line.trim()));
                    }
                }
            }
        }
        assert!(offenders.is_empty(), "use out_line!/err_line! (src/stdio.rs):\n{}", offenders.join("\n"));
    }

    fn is_ident(b: u8) -> bool {
        b.is_ascii_alphanumeric() || b == b'_'
    }

    /// Whether line `n` of `text` comes after the file's `#[cfg(test)]` module.
    fn in_test_code(text: &str, n: usize) -> bool {
        text.lines().take(n).any(|l| l.trim() == "#[cfg(test)]")
    }
}
