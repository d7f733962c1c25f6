//! Latency distributions read back from a report, for `compare` and the `vllm bench serve`
//! export: per-request samples (`request_samples`) where the attempt has them, else the
//! summary the report stored (a decode or burst `Summary`, or a routing phase's p50/p95/p99).
//! Everything here is in milliseconds.

use super::json::{DecodeAttempt, RequestRecord};
use super::phase::PhaseLatency;
use crate::load::sample::RecordedOutcome;
use crate::stats::{Samples, Summary};

/// Where a [`Dist`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DistSource {
    /// Computed from per-request samples: every percentile, mean and standard deviation.
    Samples,
    /// The report's stored summary: p50, p90, p95, p99, mean, min, max.
    Summary,
    /// A routing phase's stored p50, p95 and p99 (seconds in the report, ms here).
    Phase,
    /// Nothing was recorded.
    None,
}

impl DistSource {
    /// The name written in exports (`request_samples`, `summary`, `phase`, `none`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Samples => "request_samples",
            Self::Summary => "summary",
            Self::Phase => "phase",
            Self::None => "none",
        }
    }
}

/// One latency distribution of an attempt, ms.
#[derive(Debug, Clone)]
pub(crate) enum Dist {
    /// Per-request values.
    Samples(Samples),
    /// A stored summary only.
    Summary(Summary),
    /// A routing phase's percentiles, converted to ms.
    Phase(PhaseLatency),
    /// Nothing recorded.
    None,
}

impl Dist {
    /// The samples when there is at least one, else the stored summary (if any).
    pub(crate) fn samples_or(values: impl IntoIterator<Item = f64>, summary: Option<&Summary>) -> Self {
        let samples: Samples = values.into_iter().collect();
        match (samples.is_empty(), summary) {
            (false, _) => Self::Samples(samples),
            (true, Some(s)) => Self::Summary(*s),
            (true, None) => Self::None,
        }
    }

    /// A stored summary (ms), or nothing.
    pub(crate) fn summary(summary: Option<&Summary>) -> Self {
        summary.map_or(Self::None, |s| Self::Summary(*s))
    }

    /// A routing phase's latency (seconds), converted to ms; nothing when every value is null.
    pub(crate) fn phase(lat: &PhaseLatency) -> Self {
        let ms = |v: Option<f64>| v.map(|s| s * 1e3);
        let lat = PhaseLatency { p50: ms(lat.p50), p95: ms(lat.p95), p99: ms(lat.p99) };
        if lat.p50.is_none() && lat.p95.is_none() && lat.p99.is_none() { Self::None } else { Self::Phase(lat) }
    }

    /// Where the values come from.
    pub(crate) fn source(&self) -> DistSource {
        match self {
            Self::Samples(_) => DistSource::Samples,
            Self::Summary(_) => DistSource::Summary,
            Self::Phase(_) => DistSource::Phase,
            Self::None => DistSource::None,
        }
    }

    /// Arithmetic mean, when known.
    pub(crate) fn mean(&self) -> Option<f64> {
        match self {
            Self::Samples(s) => s.mean(),
            Self::Summary(s) => Some(s.mean),
            Self::Phase(_) | Self::None => None,
        }
    }

    /// Population standard deviation; known from samples only.
    pub(crate) fn std_dev(&self) -> Option<f64> {
        match self {
            Self::Samples(s) => s.std_dev(),
            _ => None,
        }
    }

    /// The `q`-th percentile: any `q` from samples (numpy's linear method), else only the
    /// percentiles the summary stored (0 and 100 are its min and max).
    pub(crate) fn percentile(&self, q: f64) -> Option<f64> {
        match self {
            Self::Samples(s) => s.quantile(q),
            Self::Summary(s) => stored(q, &[(0.0, s.min), (50.0, s.p50), (90.0, s.p90), (95.0, s.p95), (99.0, s.p99)])
                .or((q == 100.0).then_some(s.max)),
            Self::Phase(p) => [(50.0, p.p50), (95.0, p.p95), (99.0, p.p99)].iter().find(|(k, _)| *k == q)?.1,
            Self::None => None,
        }
    }
}

fn stored(q: f64, table: &[(f64, f64)]) -> Option<f64> {
    table.iter().find(|(k, _)| *k == q).map(|(_, v)| *v)
}

/// The request completed (neither cut at the window's end nor failed).
pub(crate) fn completed(r: &RequestRecord) -> bool {
    r.outcome == RecordedOutcome::Completed
}

/// Requests of a decode attempt with `outcome` (`None`: all of them), from its exact
/// `request_outcomes`; a report written before that field counts its `request_samples`,
/// which then held every request.
pub(crate) fn request_count(a: &DecodeAttempt, outcome: Option<RecordedOutcome>) -> u64 {
    let wanted = |o: &RecordedOutcome| outcome.is_none_or(|w| w == *o);
    match a.request_outcomes.is_empty() {
        true => a.request_samples.iter().filter(|r| wanted(&r.outcome)).count() as u64,
        false => a.request_outcomes.iter().filter(|(o, _)| wanted(o)).map(|(_, n)| n).sum(),
    }
}

/// TTFT of every request whose first token arrived (completed or cut), ms.
pub(crate) fn ttft_values(records: &[RequestRecord]) -> impl Iterator<Item = f64> + '_ {
    records.iter().filter_map(|r| r.ttft_ms)
}

/// Per-request TPOT as the decode tables name it (docs/reports.md §1.2), (last token − first
/// token) / (tokens − 1), of every request with two tokens or more, ms.
pub(crate) fn itl_values(records: &[RequestRecord]) -> impl Iterator<Item = f64> + '_ {
    records.iter().filter_map(|r| r.itl_ms)
}

/// TPOT of completed requests with more than one output token, (e2e − TTFT) / (tokens − 1), ms.
pub(crate) fn tpot_values(records: &[RequestRecord]) -> impl Iterator<Item = f64> + '_ {
    records.iter().filter(|r| completed(r) && r.output_tokens > 1).filter_map(|r| {
        let ttft = r.ttft_ms?;
        Some((r.e2e_ms - ttft) / (r.output_tokens - 1) as f64)
    })
}

/// End-to-end latency of completed requests, ms.
pub(crate) fn e2e_values(records: &[RequestRecord]) -> impl Iterator<Item = f64> + '_ {
    records.iter().filter(|r| completed(r)).map(|r| r.e2e_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests_example::{request, summary};

    #[test]
    fn samples_give_every_percentile_and_summaries_their_own() {
        let d = Dist::samples_or([1.0, 2.0, 3.0, 4.0], None);
        assert_eq!(d.source(), DistSource::Samples);
        assert!((d.percentile(99.9).unwrap() - 3.997).abs() < 1e-9);
        assert_eq!(d.mean(), Some(2.5));
        assert!(d.std_dev().is_some());
        let s = summary(10.0);
        let d = Dist::samples_or(std::iter::empty(), Some(&s));
        assert_eq!(d.source(), DistSource::Summary);
        assert_eq!((d.percentile(50.0), d.percentile(99.0), d.percentile(100.0)), (Some(15.0), Some(35.0), Some(40.0)));
        assert_eq!((d.percentile(99.9), d.std_dev()), (None, None));
        assert_eq!(Dist::samples_or(std::iter::empty(), None).source(), DistSource::None);
    }

    #[test]
    fn phases_are_converted_to_ms() {
        let d = Dist::phase(&PhaseLatency { p50: Some(0.25), p95: None, p99: Some(1.5) });
        assert_eq!((d.percentile(50.0), d.percentile(95.0), d.percentile(99.0)), (Some(250.0), None, Some(1500.0)));
        assert_eq!((d.mean(), d.percentile(90.0)), (None, None));
        assert_eq!(Dist::phase(&PhaseLatency::default()).source(), DistSource::None);
    }

    #[test]
    fn per_request_values_follow_their_definitions() {
        let mut cut = request(1, "cut");
        cut.ttft_ms = Some(100.0);
        let mut one = request(2, "completed");
        one.output_tokens = 1;
        let records = vec![request(0, "completed"), cut, one, request(3, "server_error")];
        assert_eq!(ttft_values(&records).count(), 4, "every first token counts");
        let tpot: Vec<f64> = tpot_values(&records).collect();
        assert_eq!(tpot, vec![(56_500.0 - 480.0) / 4095.0], "completed, more than one token");
        assert_eq!(e2e_values(&records).count(), 2);
        assert_eq!(itl_values(&records).count(), 4);
    }
}
