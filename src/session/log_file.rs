//! `--log-file`: one line format whether the monitor or the headless printer writes it,
//! `2026-12-03T14:35:10.123Z [   12.3s] ctx=0 conc=1: start` (wall clock, then seconds since the
//! session started, then the line the screen shows, its server text escaped by `crate::text_safe`).

use std::io::Write;
use std::path::Path;

/// An open `--log-file`, appended to.
#[derive(Debug)]
pub struct LogFile(std::fs::File);

impl LogFile {
    /// Opens (creates or appends to) `path`; the error names it.
    pub fn open(path: &Path) -> anyhow::Result<LogFile> {
        let open = std::fs::OpenOptions::new().create(true).append(true).open(path);
        open.map(LogFile).map_err(|e| anyhow::anyhow!("cannot open log file {}: {e}", path.display()))
    }

    /// Appends `msg` stamped `at_s` seconds after the session start. A file that fails mid-run
    /// does not stop the session (the screen or stderr still has the line).
    pub fn line(&mut self, at_s: f64, msg: &str) {
        let _ = writeln!(self.0, "{}", format_line(&crate::report::writer::now_rfc3339(), at_s, msg));
    }
}

/// One line of the file: `WALL [   t.ts] msg`.
fn format_line(wall: &str, at_s: f64, msg: &str) -> String {
    format!("{wall} [{at_s:7.1}s] {}", crate::text_safe::line(msg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_has_the_wall_clock_the_session_time_and_the_escaped_text() {
        let line = format_line("2026-12-03T14:35:10.123Z", 12.34, "ctx=0 conc=1: start\u{1b}[2J");
        assert_eq!(line, "2026-12-03T14:35:10.123Z [   12.3s] ctx=0 conc=1: start\\x1b[2J");
    }
}
