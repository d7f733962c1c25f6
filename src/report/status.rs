//! Outcome names of the report: how an attempt ended, where a cell stands and what limited it. Both serialise
//! as the snake_case strings the report has always used (`measured`, `skipped_by_operator`, ...).

use serde::{Deserialize, Serialize};
use std::fmt;

/// How one attempt (decode, burst or routing phase) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptStatus {
    /// It produced a measurement.
    #[default]
    Measured,
    /// No measurement: every request failed, or no window ran.
    Errored,
    /// The operator paused it; the cell runs again on resume.
    Paused,
    /// The session was stopped while it ran.
    Stopped,
    /// The operator skipped the cell while it ran.
    SkippedByOperator,
}

impl AttemptStatus {
    /// The report name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Measured => "measured",
            Self::Errored => "errored",
            Self::Paused => "paused",
            Self::Stopped => "stopped",
            Self::SkippedByOperator => "skipped_by_operator",
        }
    }
}

impl fmt::Display for AttemptStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a decode or burst cell stands in the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellOutcome {
    /// Not run yet, running, or queued again.
    Pending,
    /// Its last attempt was measured.
    Measured,
    /// No measurement: every request failed.
    Errored,
    /// Skipped before it started (the reason is the cell's `timeout_reason`).
    Skipped,
    /// Skipped by the operator.
    SkippedByOperator,
}

impl CellOutcome {
    /// The report name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Measured => "measured",
            Self::Errored => "errored",
            Self::Skipped => "skipped",
            Self::SkippedByOperator => "skipped_by_operator",
        }
    }
}

impl fmt::Display for CellOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The limit that held a decode attempt below its requested concurrency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapacityLimit {
    /// Requests waited through the window while the running count stayed flat with KV
    /// headroom and no preemptions: the engine's sequence cap (`--max-num-seqs`), inferred
    /// (vLLM's metrics do not expose it).
    MaxNumSeqs,
    /// KV usage near full (at least 95%) or preemptions in the window.
    Kv,
    /// Held back, but the metrics do not say by what (no Prometheus, a queue while the running
    /// count moved, or a warmup that timed out without other evidence).
    Unknown,
}

impl CapacityLimit {
    /// The report name (`max_num_seqs`, `kv`, `unknown`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MaxNumSeqs => "max_num_seqs",
            Self::Kv => "kv",
            Self::Unknown => "unknown",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_serialised_strings() {
        use AttemptStatus as A;
        for s in [A::Measured, A::Errored, A::Paused, A::Stopped, A::SkippedByOperator] {
            assert_eq!(serde_json::to_value(s).ok(), Some(serde_json::json!(s.as_str())));
            assert_eq!(serde_json::from_value::<A>(serde_json::json!(s.to_string())).ok(), Some(s));
        }
        use CellOutcome as C;
        for s in [C::Pending, C::Measured, C::Errored, C::Skipped, C::SkippedByOperator] {
            assert_eq!(serde_json::to_value(s).ok(), Some(serde_json::json!(s.as_str())));
            assert_eq!(serde_json::from_value::<C>(serde_json::json!(s.to_string())).ok(), Some(s));
        }
        assert_eq!(A::SkippedByOperator.as_str(), "skipped_by_operator");
        assert!(serde_json::from_value::<A>(serde_json::json!("pending")).is_err(), "not an attempt status");
        assert!(serde_json::from_value::<C>(serde_json::json!("failed")).is_err(), "never written");
    }
}
