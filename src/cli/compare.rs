//! `llm-decode-bench compare BASE [NEW]`: flags of comparing two session reports (or the sets
//! of sweep reports).

use crate::report::compare::render::CompareFormat;
use crate::stats::{PercentileList, percentile_list};
use clap::Args;
use std::path::PathBuf;

/// Largest `--threshold`, percent.
const MAX_THRESHOLD_PCT: f64 = 1000.0;

/// `5%` or `5` (percent), from 0 to 1000.
pub(crate) fn threshold(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let number = t.strip_suffix('%').unwrap_or(t).trim();
    match number.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=MAX_THRESHOLD_PCT).contains(&v) => Ok(v),
        Ok(_) => Err(format!("`{s}` is outside 0%..{MAX_THRESHOLD_PCT}%")),
        Err(_) => Err(format!("`{s}` is not a percentage (write e.g. 5%)")),
    }
}

/// Flags of `llm-decode-bench compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The reference session report (e.g. the last release's); alone, a sweep report
    /// (`run --server-cmd`) whose sets are shown side by side.
    pub base: PathBuf,
    /// The session report under test (two sweep reports are compared set by set, sets paired
    /// by their parameters).
    pub new: Option<PathBuf>,
    /// A headline figure (decode aggregate tok/s, burst output tok/s, routing output tok/s and
    /// goodput) worse by more than this fails the comparison with exit code 1.
    #[arg(long, value_parser = threshold, default_value = "5%")]
    pub threshold: f64,
    /// Output: a plain table, GitHub markdown, or machine-readable JSON.
    #[arg(long, value_enum, default_value_t)]
    pub format: CompareFormat,
    /// Latency percentiles to compare, comma-separated, e.g. 50,90,99,99.9 (as vLLM's
    /// `--metric-percentiles`).
    #[arg(long, value_parser = percentile_list, default_value = "50,99")]
    pub percentiles: PercentileList,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_are_percentages() {
        assert_eq!(threshold("5%"), Ok(5.0));
        assert_eq!(threshold(" 2.5 % "), Ok(2.5));
        assert_eq!(threshold("0"), Ok(0.0));
        assert!(threshold("-1%").unwrap_err().contains("outside"));
        assert!(threshold("five").unwrap_err().contains("not a percentage"));
        assert!(threshold("nan").is_err());
    }
}
