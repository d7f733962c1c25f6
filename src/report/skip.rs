//! Why a cell was skipped before it ran: a kind the renderers and the monitor match on, and the
//! reason text the report keeps in `timeout_reason`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What kept a cell from running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipKind {
    /// ctx x conc needs more KV cache than the capacity times `--kv-oversubscribe`.
    KvCache,
    /// The prompt (with the output the cell wants) is longer than the model's context.
    ContextLength,
    /// The plan cannot run it as given (e.g. an empty serve prompt).
    Plan,
    /// Past its row's knee under `--stop-at-knee`.
    PastKnee,
}

impl SkipKind {
    /// The report name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::KvCache => "kv_cache",
            Self::ContextLength => "context_length",
            Self::Plan => "plan",
            Self::PastKnee => "past_knee",
        }
    }

    /// The kind of a skip recorded by a report written before `skip` was kept, from its reason:
    /// `--stop-at-knee` named itself at the end, a context misfit named max_model_len, and
    /// every other skip was a KV misfit.
    pub fn of_legacy_reason(reason: &str) -> Self {
        if reason.ends_with("(--stop-at-knee)") {
            Self::PastKnee
        } else if reason.contains("max_model_len") {
            Self::ContextLength
        } else {
            Self::KvCache
        }
    }
}

/// Why a cell is skipped: its kind and the sentence that says it, with the figures (the
/// deficit in tokens, the knee it is past).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    /// What kept it from running.
    pub kind: SkipKind,
    /// The reason as the report and the monitor print it.
    pub reason: String,
}

impl Skip {
    /// A skip of `kind` for `reason`.
    pub fn new(kind: SkipKind, reason: impl Into<String>) -> Self {
        Self { kind, reason: reason.into() }
    }
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

/// The kind of a report cell's skip: the recorded `skip`, else read from `timeout_reason` for
/// reports written before `skip` was kept; None when neither is there.
pub fn kind_of(skip: Option<SkipKind>, timeout_reason: Option<&str>) -> Option<SkipKind> {
    skip.or_else(|| timeout_reason.map(SkipKind::of_legacy_reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_have_report_names_and_old_reports_are_read_by_their_reason() {
        for k in [SkipKind::KvCache, SkipKind::ContextLength, SkipKind::Plan, SkipKind::PastKnee] {
            assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{}\"", k.as_str()));
        }
        let knee = "past the knee at conc 8 (ctx 16k) (--stop-at-knee)";
        assert_eq!(kind_of(None, Some(knee)), Some(SkipKind::PastKnee));
        let fit = "a prompt of 8k tokens plus 32 output tokens and a 64-token template margin exceed max_model_len 8192; deficit 96 tokens";
        assert_eq!(kind_of(None, Some(fit)), Some(SkipKind::ContextLength));
        assert_eq!(kind_of(None, Some("needs 140000 KV tokens, 131072 available")), Some(SkipKind::KvCache));
        assert_eq!(kind_of(Some(SkipKind::Plan), Some(knee)), Some(SkipKind::Plan), "the recorded kind wins");
        assert_eq!(kind_of(None, None), None);
        assert_eq!(Skip::new(SkipKind::Plan, "empty").to_string(), "empty");
    }
}
