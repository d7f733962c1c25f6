//! The trace a serve session replays (`--dataset-name mooncake_trace|azure_trace
//! --dataset-path FILE --replay-speed X`, issue 24): read while the flags are checked, so a
//! file that cannot be read is a one-line error before any load.

use crate::dataset::trace::{Trace, TraceFormat, read_trace};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A trace file, read.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceSource {
    /// Its layout, the `--dataset-name`.
    pub format: TraceFormat,
    /// The file, as given.
    pub path: PathBuf,
    /// Its first `--num-prompts` requests and the file's figures.
    pub trace: Arc<Trace>,
    /// How much faster than the trace its requests are sent (`--replay-speed`: 2 halves every gap).
    pub speed: ReplaySpeed,
}

impl TraceSource {
    /// Reads the first `n` requests of `path`, or says in one line why it cannot.
    pub fn load(format: TraceFormat, path: &Path, n: usize, speed: ReplaySpeed) -> Result<Self, String> {
        let trace = read_trace(path, format, n).map_err(|e| e.to_string())?;
        Ok(Self { format, path: path.to_path_buf(), trace: Arc::new(trace), speed })
    }

    /// When request `i` is sent, after the replay's start.
    pub fn offset(&self, i: usize) -> std::time::Duration {
        crate::units::secs(self.trace.requests[i].at_ms / 1e3 / self.speed.get())
    }

    /// How long the replay's arrivals span.
    pub fn span(&self) -> std::time::Duration {
        crate::units::secs(self.trace.span_ms() / 1e3 / self.speed.get())
    }
}

/// `--replay-speed`: a positive, finite factor on the trace's pace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplaySpeed(f64);

impl ReplaySpeed {
    /// The trace's own pace.
    pub const REAL_TIME: Self = Self(1.0);

    /// `x` when it is positive and finite.
    pub fn new(x: f64) -> Result<Self, String> {
        match x.is_finite() && x > 0.0 {
            true => Ok(Self(x)),
            false => Err(format!("{x}: the replay speed is a factor above 0 (1: the trace's pace, 2: twice as fast)")),
        }
    }

    /// The factor.
    pub fn get(self) -> f64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_speed_divides_the_trace_s_times() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let line = |ts: u32| format!("{{\"timestamp\": {ts}, \"input_length\": 4, \"output_length\": 2}}\n");
        std::fs::write(&path, [line(1000), line(1500), line(3000)].concat()).unwrap();
        let t = TraceSource::load(TraceFormat::Mooncake, &path, 9, ReplaySpeed::new(2.0).unwrap()).unwrap();
        assert_eq!(t.offset(1), std::time::Duration::from_millis(250));
        assert_eq!(t.span(), std::time::Duration::from_millis(1000));
        assert!(ReplaySpeed::new(0.0).is_err() && ReplaySpeed::new(f64::INFINITY).is_err());
        assert!(ReplaySpeed::new(-1.0).unwrap_err().contains("above 0"));
    }
}
