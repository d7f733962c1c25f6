//! One probe of the SLO search: a serve attempt at the probed load (`serve::run_serve_attempt`),
//! read as the search needs it (pure): the requests that met every bound of the SLO, judged as
//! the serve experiment judges its goodput (`serve::metrics`, vLLM's definitions), out of
//! every request sent (a failed one never meets it), with the attempt's own figures beside.

use super::search::{Judged, Step};
use crate::experiment::serve::metrics::RequestFigures;
use crate::load::sample::RecordedOutcome;
use crate::report::serve::ServeAttempt;
use crate::stats::{Proportion, Slo};

/// What one probe measured, and what the search made of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// Its load and repeat.
    pub step: Step,
    /// Requests that met the SLO, of those sent.
    pub tally: Proportion,
    /// Pooled with the earlier probes at the load, its interval and verdict.
    pub judged: Judged,
    /// Requests that met the SLO per second of the probe (vLLM's `request_goodput`), req/s.
    pub goodput: f64,
    /// Schedule start to the last end, s.
    pub duration_s: f64,
    /// TTFT median and p99 of the completed requests, ms.
    pub ttft_ms: [Option<f64>; 2],
    /// TPOT median and p99 of the completed requests, ms.
    pub tpot_ms: [Option<f64>; 2],
    /// Output tokens of the completed requests.
    pub output_tokens: u64,
    /// Output tokens per second, tok/s.
    pub output_tps: f64,
    /// Requests that failed.
    pub failed: u64,
}

/// The requests of `a` that met `slo` (vLLM's goodput test: TPOT 0 for a one-token reply), of
/// every request it sent.
pub fn tally(a: &ServeAttempt, slo: &Slo) -> Proportion {
    let good = a
        .request_samples
        .iter()
        .filter(|r| r.outcome == RecordedOutcome::Completed)
        .map(|r| RequestFigures {
            completed: true,
            input_tokens: 0,
            output_tokens: r.output_tokens,
            ttft_ms: r.ttft_ms,
            e2el_ms: r.e2e_ms,
        })
        .filter(|f| f.meets(slo))
        .count();
    Proportion::new(good as u64, a.request_samples.len() as u64)
}

impl Probe {
    /// The probe at `step` whose serve attempt was `a`, its tally `tally`, judged `judged`.
    pub fn of(step: Step, a: &ServeAttempt, tally: Proportion, judged: Judged) -> Self {
        let m = &a.metrics;
        let per_s = |n: f64| if m.duration_s > 0.0 { n / m.duration_s } else { 0.0 };
        Self {
            step,
            tally,
            judged,
            goodput: per_s(tally.hits as f64),
            duration_s: m.duration_s,
            ttft_ms: [m.median_ttft_ms, m.p99_ttft_ms],
            tpot_ms: [m.median_tpot_ms, m.p99_tpot_ms],
            output_tokens: m.total_output_tokens,
            output_tps: m.output_throughput,
            failed: m.failed,
        }
    }

    /// The probe as the live panel lists it (the load's requests pooled).
    pub fn live(&self) -> crate::cell::search_live::ProbeLive {
        crate::cell::search_live::ProbeLive {
            load: self.step.load,
            repeat: self.step.repeat,
            requests: self.judged.pooled.trials,
            attainment: self.judged.pooled.share(),
            interval: self.judged.interval,
            verdict: self.judged.verdict,
        }
    }

    /// The log line of the probe: `probe 3: concurrency 8 (repeat 2): 288/288 met the SLO,
    /// 100.0% [98.7%, 100.0%]: pass`.
    pub fn line(&self, index: usize, mode: &str, unit: &str) -> String {
        let pct = |v: f64| format!("{:.1}%", v * 100.0);
        let (lo, hi) = self.judged.interval;
        let p = self.judged.pooled;
        let verdict = match self.judged.verdict {
            Some(true) => "pass",
            Some(false) => "fail",
            None => "unsure, probed again",
        };
        let repeat = if self.step.repeat > 1 { format!(" (repeat {})", self.step.repeat) } else { String::new() };
        format!(
            "probe {index}: {mode} {} {unit}{repeat}: {}/{} met the SLO, {} [{}, {}]: {verdict}",
            fmt_load(self.step.load),
            p.hits,
            p.trials,
            pct(p.share().unwrap_or(0.0)),
            pct(lo),
            pct(hi),
        )
    }
}

/// A load as lines and labels write it: whole streams without decimals, a rate with up to 3.
pub fn fmt_load(load: f64) -> String {
    match load.fract() == 0.0 {
        true => format!("{load:.0}"),
        false => format!("{load:.3}").trim_end_matches('0').to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::json::RequestRecord;
    use std::time::Duration;

    fn record(outcome: RecordedOutcome, ttft_ms: f64, e2e_ms: f64, tokens: u64) -> RequestRecord {
        RequestRecord {
            worker: 0,
            sent_ms: 0.0,
            ttft_ms: Some(ttft_ms),
            e2e_ms,
            output_tokens: tokens,
            input_tokens: None,
            window_tokens: tokens,
            itl_ms: None,
            outcome,
            status: Some(200),
            served_by: None,
            good: None,
            schedule_lag_ms: None,
        }
    }

    #[test]
    fn good_requests_meet_every_bound_and_failures_count_against() {
        let slo = Slo { ttft: Some(Duration::from_millis(100)), tpot: Some(Duration::from_millis(10)), e2e: None };
        let mut a: ServeAttempt = serde_json::from_value(serde_json::json!({
            "attempt": 1, "status": "measured", "started_s": 0.0, "num_prompts": 5, "errors": {},
            "completed": 4, "failed": 1, "total_input_tokens": 0, "total_output_tokens": 40, "duration_s": 2.0,
            "request_throughput": 2.0, "output_throughput": 20.0, "total_token_throughput": 20.0,
            "request_samples": []
        }))
        .unwrap();
        a.request_samples = vec![
            // TTFT 50, TPOT (140 - 50) / 9 = 10 ms: good (bounds are inclusive).
            record(RecordedOutcome::Completed, 50.0, 140.0, 10),
            // TTFT over the bound.
            record(RecordedOutcome::Completed, 150.0, 200.0, 10),
            // TPOT (250 - 50) / 9 = 22 ms over the bound.
            record(RecordedOutcome::Completed, 50.0, 250.0, 10),
            // One token: TPOT counts as 0 (vLLM's goodput).
            record(RecordedOutcome::Completed, 80.0, 80.0, 1),
            record(RecordedOutcome::Failed(crate::load::sample::ErrorKind::ServerError), 10.0, 10.0, 0),
        ];
        let t = tally(&a, &slo);
        assert_eq!(t, Proportion::new(2, 5));
        let step = Step { load: 8.0, repeat: 2 };
        let judged = Judged { pooled: Proportion::new(7, 10), interval: (0.4, 0.9), verdict: Some(false) };
        let p = Probe::of(step, &a, t, judged);
        assert_eq!((p.goodput, p.output_tps, p.failed), (1.0, 20.0, 1));
        assert_eq!(
            p.line(4, "concurrency", "streams"),
            "probe 4: concurrency 8 streams (repeat 2): 7/10 met the SLO, 70.0% [40.0%, 90.0%]: fail"
        );
        assert_eq!((fmt_load(2.5), fmt_load(12.0), fmt_load(1.0 / 3.0)), ("2.5".into(), "12".into(), "0.333".into()));
    }
}
