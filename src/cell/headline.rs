//! The headline figures of an attempt, whatever its experiment, and the one-line summary the
//! log and the progress printer show.

use crate::report::baseline::{Baseline, Delta, Pick, deltas_text};
use crate::report::compare::CellKey;
pub(crate) use crate::report::error_notes::ErrorReason;
pub(crate) use crate::report::error_notes::{REASON_CHARS, reasons_text};
use crate::report::status::AttemptStatus;
use crate::report::text::format::{LimitMark, fmt_ms_unit};
use std::collections::BTreeMap;

/// Headline figures of a cell's latest attempt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Headline {
    /// Aggregate (decode) or output (burst, routing) tok/s.
    pub tps: f64,
    /// Average running requests (Prometheus).
    pub running_avg: Option<f64>,
    /// Requested streams.
    pub requested: u32,
    /// What held it back (capacity-limited, and by what) or a warmup timeout: the matrices'
    /// `*kv`, `*seq`, `*?`, `!`.
    pub limit: LimitMark,
    /// Failed requests.
    pub errors: u64,
    /// TTFT p50, ms.
    pub ttft_p50_ms: Option<f64>,
    /// TTFT p95, ms.
    pub ttft_p95_ms: Option<f64>,
    /// ITL p50, ms (decode: per stream over the window; burst: per token, as `vllm bench
    /// serve` names it).
    pub itl_p50_ms: Option<f64>,
    /// TPOT p50 of completed requests, (e2e - ttft) / (output tokens - 1), ms.
    pub tpot_p50_ms: Option<f64>,
    /// (good, requests) under the SLO (routing phases).
    pub good: Option<(u64, u64)>,
    /// Requests per replica (routing phases).
    pub replica_split: BTreeMap<String, u64>,
    /// Prefix-cache hit ratio (routing phases, serve and decode cells).
    pub hit_ratio: Option<f64>,
    /// The prefix cache served more than the attempt's own prompts share (serve and decode
    /// cells, routing phases): the matrices' `W`.
    pub warm_cache: bool,
    /// How the attempt ended.
    pub status: AttemptStatus,
    /// Every error kind with its count and one reason, most frequent first.
    pub error_reasons: Vec<ErrorReason>,
}

impl Headline {
    /// Its deltas against the baseline's cell matched by `key` (throughput, TTFT p50, goodput
    /// where both sides have them); none unless the attempt measured.
    pub fn baseline_deltas(&self, key: &CellKey, b: &Baseline) -> Vec<(Pick, Delta)> {
        self.baseline_deltas_with_runs(key, b, &BTreeMap::new())
    }

    /// [`Headline::baseline_deltas`] of a cell that repeated its runs (`--num-runs`): `runs`
    /// holds its figures over them (`experiment::runs`), so a delta inside the interval of the
    /// difference of the means reads `within_noise`.
    pub fn baseline_deltas_with_runs(
        &self,
        key: &CellKey,
        b: &Baseline,
        runs: &BTreeMap<String, crate::stats::RunStats>,
    ) -> Vec<(Pick, Delta)> {
        if self.status != AttemptStatus::Measured {
            return Vec::new();
        }
        let good = self.good.filter(|(_, n)| *n > 0).map(|(g, n)| g as f64 / n as f64);
        let of = |names: &[&str]| names.iter().find_map(|n| runs.get(*n)).copied();
        let now = [
            (Pick::Throughput, Some(self.tps), of(&["aggregate_tok_s", "output_tok_s"])),
            (Pick::TtftP50, self.ttft_p50_ms, of(&["p50_ttft_ms"])),
            (Pick::Goodput, good, of(&["goodput_ratio"])),
        ];
        b.deltas_with_runs(key, &now)
    }
}

/// [`attempt_line`] followed by its deltas against `--baseline` (`; vs baseline tok/s -80% TTFT
/// +33%`) when the baseline has the cell.
pub(crate) fn attempt_line_against(h: &Headline, key: &CellKey, b: Option<&Baseline>) -> String {
    let deltas = b.map(|b| h.baseline_deltas(key, b)).unwrap_or_default();
    match deltas.is_empty() {
        true => attempt_line(h),
        false => format!("{}; vs baseline {}", attempt_line(h), deltas_text(&deltas)),
    }
}

/// A per-token latency (ITL, TPOT) with its unit: one decimal below 10 ms (`0.4 ms`, `7.0 ms`),
/// so a fast engine does not read `0`; above, as [`fmt_ms_unit`] (`42 ms`, `1.20 s`); `—`
/// without data. The log line and the monitor's live panel both use it, so one figure reads
/// the same in both.
pub(crate) fn fmt_token_ms(ms: Option<f64>) -> String {
    match ms {
        Some(v) if v.is_finite() && v.abs() < 9.95 => format!("{v:.1} ms"),
        other => fmt_ms_unit(other),
    }
}

/// A one-line summary of an attempt for logs and progress output.
pub fn attempt_line(h: &Headline) -> String {
    let running = match (h.running_avg, h.requested) {
        (Some(r), y) => format!(" ({r:.0}/{y}){}", h.limit.text()),
        (None, _) => String::new(),
    };
    let good = h.good.map(|(g, n)| format!(" good {g}/{n}")).unwrap_or_default();
    // ITL when known, or when there is no TPOT either (`—`); TPOT when known.
    let mut per_token = String::new();
    if h.itl_p50_ms.is_some() || h.tpot_p50_ms.is_none() {
        per_token += &format!("  ITL p50 {}", fmt_token_ms(h.itl_p50_ms));
    }
    if h.tpot_p50_ms.is_some() {
        per_token += &format!("  TPOT p50 {}", fmt_token_ms(h.tpot_p50_ms));
    }
    let reasons = match h.error_reasons.is_empty() {
        true => String::new(),
        false => format!(" ({})", reasons_text(&h.error_reasons, REASON_CHARS)),
    };
    format!(
        "{}: {:.1} tok/s{running}{good}  TTFT p50 {}{per_token}  errors {}{reasons}",
        h.status,
        h.tps,
        fmt_ms_unit(h.ttft_p50_ms),
        h.errors
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::sample::ErrorKind;
    use crate::report::kind::ExperimentKind;

    #[test]
    fn the_log_line_names_the_deltas_against_a_baseline() {
        let mut saved = crate::report::tests_schema::full_report();
        saved.decode.as_mut().unwrap().cells[1].attempts[1].aggregate_tps = 200.0;
        let b = Baseline::of("base.json", saved);
        let key = CellKey::cell(ExperimentKind::Decode, 16_384, 8);
        let h = Headline { tps: 150.0, ..Headline::default() };
        let line = attempt_line_against(&h, &key, Some(&b));
        assert_eq!(line, format!("{}; vs baseline tok/s -25%", attempt_line(&h)));
        assert_eq!(attempt_line_against(&h, &CellKey::cell(ExperimentKind::Decode, 0, 1), Some(&b)), attempt_line(&h));
        assert_eq!(attempt_line_against(&h, &key, None), attempt_line(&h));
        let paused = Headline { status: AttemptStatus::Paused, ..h };
        assert_eq!(attempt_line_against(&paused, &key, Some(&b)), attempt_line(&paused), "only measured attempts");
    }

    #[test]
    fn the_log_line_names_each_error_kind_with_its_reason() {
        let reasons = vec![
            ErrorReason { kind: ErrorKind::BadRequest, count: 2, example: Some("HTTP 400: too long\x1b[2J".into()) },
            ErrorReason { kind: ErrorKind::Stalled, count: 1, example: None },
        ];
        let h = Headline { errors: 3, error_reasons: reasons, ..Headline::default() };
        let line = attempt_line(&h);
        assert!(line.ends_with(r#"errors 3 (bad_request 2: "HTTP 400: too long\x1b[2J"; stalled 1)"#), "{line}");
        let long = ErrorReason { kind: ErrorKind::ServerError, count: 1, example: Some("x".repeat(500)) };
        let text = reasons_text(&[long], 10);
        assert_eq!(text, format!("server_error 1: \"{}…\"", "x".repeat(9)));
        assert!(attempt_line(&Headline::default()).ends_with("errors 0"), "no reasons, no parentheses");
    }

    #[test]
    fn itl_and_tpot_show_when_known() {
        let h = Headline { tps: 10.0, ttft_p50_ms: Some(80.0), ..Headline::default() };
        assert!(attempt_line(&h).contains("TTFT p50 80 ms  ITL p50 —  errors 0"), "{}", attempt_line(&h));
        let burst = Headline { itl_p50_ms: Some(7.0), tpot_p50_ms: Some(7.5), ..h.clone() };
        assert!(attempt_line(&burst).contains("ITL p50 7.0 ms  TPOT p50 7.5 ms"), "{}", attempt_line(&burst));
        let fast = Headline { itl_p50_ms: Some(0.4), tpot_p50_ms: Some(42.0), ..h.clone() };
        assert!(attempt_line(&fast).contains("ITL p50 0.4 ms  TPOT p50 42 ms"), "{}", attempt_line(&fast));
        let routing = Headline { tpot_p50_ms: Some(58.0), ..h };
        let line = attempt_line(&routing);
        assert!(line.contains("TTFT p50 80 ms  TPOT p50 58 ms") && !line.contains("ITL"), "{line}");
    }
}
