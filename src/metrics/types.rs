//! The vocabulary of a parsed exposition: metric types, sample roles and sample lines.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The `# TYPE` of a metric family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MetricType {
    /// Monotonic counter.
    Counter,
    /// Gauge.
    Gauge,
    /// Cumulative histogram (`_bucket{le}`, `_sum`, `_count`).
    Histogram,
    /// OpenMetrics gauge histogram (`_bucket{le}`, `_gsum`, `_gcount`).
    GaugeHistogram,
    /// Summary (`{quantile}`, `_sum`, `_count`).
    Summary,
    /// OpenMetrics info (`_info`).
    Info,
    /// OpenMetrics state set.
    StateSet,
    /// No `# TYPE`, or `untyped`/`unknown`/an unrecognised word.
    Untyped,
}

impl MetricType {
    /// Maps a `# TYPE` keyword; anything unrecognised is [`MetricType::Untyped`].
    pub fn from_keyword(word: &str) -> Self {
        match word {
            "counter" => Self::Counter,
            "gauge" => Self::Gauge,
            "histogram" => Self::Histogram,
            "gaugehistogram" => Self::GaugeHistogram,
            "summary" => Self::Summary,
            "info" => Self::Info,
            "stateset" => Self::StateSet,
            _ => Self::Untyped,
        }
    }
}

/// Which part of its family a sample is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleRole {
    /// The family's own value (counter `_total`, gauge, untyped, summary quantile, info).
    Value,
    /// A histogram `_bucket{le}` sample.
    Bucket,
    /// `_sum` / `_gsum`.
    Sum,
    /// `_count` / `_gcount`.
    Count,
    /// An OpenMetrics `_created` sample of a counter/histogram/summary family.
    Created,
}

/// One sample line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The exposed sample name, e.g. `vllm:prompt_tokens_total` or `..._bucket`.
    pub name: String,
    /// All labels, unescaped, including `le`/`quantile`.
    pub labels: BTreeMap<String, String>,
    /// The sample value (may be NaN or ±Inf).
    pub value: f64,
}
