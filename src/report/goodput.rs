//! Goodput in the report: the session's SLO as `plan.slo` says it, and the per-attempt
//! `goodput` of decode and burst cells (docs/reports.md §6).

use crate::stats::Slo;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Where the session's service-level objective came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SloSource {
    /// No flag named one: the `--slo-ttft` default (2 s TTFT).
    #[default]
    #[serde(rename = "default")]
    Default,
    /// `--goodput KEY:MS ...`.
    #[serde(rename = "--goodput")]
    Goodput,
    /// `--slo-ttft` and/or `--slo-tpot`.
    #[serde(rename = "--slo-ttft")]
    SloFlags,
    /// The demo's objective, scaled with its speed.
    #[serde(rename = "demo")]
    Demo,
}

impl SloSource {
    /// True when someone chose the objective (a flag, or the demo) rather than the default:
    /// the text tables then show goodput (the JSON report always has it).
    pub fn is_chosen(self) -> bool {
        self != Self::Default
    }
}

/// The session's SLO as the report records it (`plan.slo`): bounds in ms, null when unset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanSlo {
    /// Longest time to first token of a good request, ms.
    pub ttft_ms: Option<f64>,
    /// Longest time per output token, ms.
    pub tpot_ms: Option<f64>,
    /// Longest end-to-end latency, ms.
    pub e2el_ms: Option<f64>,
    /// Which flag named it: `--goodput`, `--slo-ttft`, `default` or `demo`.
    pub source: SloSource,
}

fn ms(d: Option<Duration>) -> Option<f64> {
    d.map(|d| d.as_secs_f64() * 1e3)
}

fn dur(ms: Option<f64>) -> Option<Duration> {
    ms.filter(|v| v.is_finite() && *v >= 0.0).map(|v| crate::units::secs(v / 1e3))
}

impl PlanSlo {
    /// The record of `slo`, named by `source`.
    pub fn of(slo: &Slo, source: SloSource) -> Self {
        Self { ttft_ms: ms(slo.ttft), tpot_ms: ms(slo.tpot), e2el_ms: ms(slo.e2e), source }
    }

    /// The objective it records.
    pub fn slo(&self) -> Slo {
        Slo { ttft: dur(self.ttft_ms), tpot: dur(self.tpot_ms), e2e: dur(self.e2el_ms) }
    }

    /// The line the screen and the tables show: `goodput SLO: TTFT ≤ 2000 ms, TPOT ≤ 50 ms`.
    pub fn describe(&self) -> String {
        format!("goodput SLO: {}", self.slo().describe())
    }
}

/// Goodput of one attempt: how many of its judged requests met the SLO.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Goodput {
    /// Requests that met every bound they were judged on.
    pub good: u64,
    /// Requests judged (docs/reports.md §6 says which).
    pub judged: u64,
    /// good / judged; null when none was judged.
    pub fraction: Option<f64>,
    /// Good requests per second of the window (decode) or of the makespan (burst).
    pub rps: f64,
}

impl Goodput {
    /// `good` of `judged` requests over a span of `span_s` seconds.
    pub fn new(good: u64, judged: u64, span_s: f64) -> Self {
        let fraction = (judged > 0).then(|| good as f64 / judged as f64);
        let rps = if span_s > 0.0 { good as f64 / span_s } else { 0.0 };
        Self { good, judged, fraction, rps }
    }

    /// `7/8 good (88%)`, as the log and the tables print it.
    pub fn describe(&self) -> String {
        match self.fraction {
            Some(f) => format!("{}/{} good ({:.0}%)", self.good, self.judged, f * 100.0),
            None => "0/0 good".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_record_round_trips_and_reads_as_the_screen_shows_it() {
        let slo = Slo::from_goodput(&["ttft:2000 tpot:50".into()]).unwrap();
        let p = PlanSlo::of(&slo, SloSource::Goodput);
        assert_eq!((p.ttft_ms, p.tpot_ms, p.e2el_ms), (Some(2000.0), Some(50.0), None));
        assert_eq!(p.slo(), slo);
        assert_eq!(p.describe(), "goodput SLO: TTFT ≤ 2000 ms, TPOT ≤ 50 ms");
        let json = serde_json::to_value(p).unwrap();
        assert_eq!(json["source"], "--goodput");
        assert!(json["e2el_ms"].is_null());
        assert!(!SloSource::Default.is_chosen() && SloSource::SloFlags.is_chosen());
    }

    #[test]
    fn fraction_and_rate() {
        let g = Goodput::new(3, 4, 2.0);
        assert_eq!((g.fraction, g.rps), (Some(0.75), 1.5));
        assert_eq!(g.describe(), "3/4 good (75%)");
        let none = Goodput::new(0, 0, 0.0);
        assert_eq!((none.fraction, none.rps, none.describe().as_str()), (None, 0.0, "0/0 good"));
    }
}
