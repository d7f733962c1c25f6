//! Over-saturation within one cell: over its measurement window, does the engine queue or the
//! per-request TTFT keep growing while throughput stays flat? Least-squares slopes with a t
//! test (`stats::slope`), plus a floor on how much the fitted line rises, so a significant but
//! negligible drift is not a verdict.

use super::slope::{Trend, mean_se, trend};
use serde::{Deserialize, Serialize};

/// The smallest fitted rise of the queue over the window that counts, requests.
pub const QUEUE_RISE_MIN: f64 = 1.0;
/// The smallest fitted rise of TTFT over the window that counts, as a fraction of its mean.
pub const TTFT_RISE_MIN: f64 = 0.5;

/// How noisy a cell's throughput is: the standard error of its mean tok/s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TpsNoise {
    /// Where the samples came from: `per_second` (tok/s of each poll interval of the window,
    /// from the engine's live generation counter), `client_per_second` (the client's own tok/s
    /// per 500 ms of the window, when the engine's series is empty or flat, as on engines that
    /// count tokens at request end) or `stream_spread` (the streams' own tok/s).
    pub source: String,
    /// Samples.
    pub n: usize,
    /// Mean of the samples, tok/s.
    pub mean_tps: f64,
    /// Standard error of the aggregate tok/s, tok/s.
    pub se_tps: f64,
}

/// The per-second tok/s noise of `tps` samples; None with fewer than 2.
pub fn per_second_noise(tps: &[f64]) -> Option<TpsNoise> {
    let (mean_tps, se_tps) = mean_se(tps)?;
    Some(TpsNoise { source: "per_second".into(), n: tps.len(), mean_tps, se_tps })
}

/// The noise of an aggregate made of `streams` per-stream rates (tok/s): the aggregate sums
/// them, so its spread is theirs times √n. None with fewer than 2 streams.
pub fn stream_spread_noise(streams: &[f64]) -> Option<TpsNoise> {
    let (mean, se_mean) = mean_se(streams)?;
    let n = streams.len() as f64;
    // se of the mean x n = sd x √n: the spread of a sum of n independent rates.
    let se_tps = se_mean * n;
    Some(TpsNoise { source: "stream_spread".into(), n: streams.len(), mean_tps: mean * n, se_tps })
}

/// The verdict of the within-cell test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SaturationVerdict {
    /// The queue or TTFT grows significantly while tok/s does not.
    OverSaturated,
    /// Neither grows (or tok/s grows with them: still ramping).
    Steady,
    /// Too few points to tell.
    Unknown,
}

/// The within-cell saturation test of one attempt, with its evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Saturation {
    /// Trend of the engine queue (sum of `num_requests_waiting`) per second of the window.
    pub waiting: Option<Trend>,
    /// Trend of TTFT (ms) against request send time (s), requests with a first token.
    pub ttft: Option<Trend>,
    /// Trend of tok/s per poll interval of the window.
    pub tps: Option<Trend>,
    /// Throughput noise of the cell, for the cross-cell knee.
    pub tps_noise: Option<TpsNoise>,
    /// The verdict.
    pub verdict: SaturationVerdict,
    /// The test used, in words.
    pub test: String,
}

/// The test's description, as the report records it.
pub const TEST: &str = "least-squares slope over the window, one-sided t test at 2.5%: over-saturated when \
    the queue (fitted rise >= 1 request) or TTFT (fitted rise >= 50% of its mean) grows while tok/s does not";

/// What one attempt's window holds, for the test.
#[derive(Debug, Clone, Default)]
pub struct WindowSeries {
    /// (seconds into the window, total waiting requests).
    pub waiting: Vec<(f64, f64)>,
    /// (send time, seconds into the attempt; TTFT ms).
    pub ttft: Vec<(f64, f64)>,
    /// (seconds into the window, tok/s over the interval ending then).
    pub tps: Vec<(f64, f64)>,
}

fn grows(t: &Option<Trend>, floor: impl Fn(&Trend) -> f64) -> bool {
    t.as_ref().is_some_and(|t| t.rising() && t.change >= floor(t))
}

/// Runs the test on `s`; `noise` is the cell's throughput noise, kept with the evidence.
pub fn saturation(s: &WindowSeries, noise: Option<TpsNoise>) -> Saturation {
    judge(trend(&s.waiting), trend(&s.ttft), trend(&s.tps), noise)
}

/// The test's verdict from the window's fitted trends (queue, TTFT, tok/s: [`saturation`]
/// fits them; a merged report takes some from a shard), with the evidence.
pub fn judge(waiting: Option<Trend>, ttft: Option<Trend>, tps: Option<Trend>, noise: Option<TpsNoise>) -> Saturation {
    let queue_grows = grows(&waiting, |_| QUEUE_RISE_MIN);
    let ttft_grows = grows(&ttft, |t| TTFT_RISE_MIN * t.mean.abs());
    let tps_rises = tps.as_ref().is_some_and(Trend::rising);
    let verdict = match (&waiting, &ttft) {
        (None, None) => SaturationVerdict::Unknown,
        _ if (queue_grows || ttft_grows) && !tps_rises => SaturationVerdict::OverSaturated,
        _ => SaturationVerdict::Steady,
    };
    Saturation { waiting, ttft, tps, tps_noise: noise, verdict, test: TEST.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(f: impl Fn(f64) -> f64) -> Vec<(f64, f64)> {
        (0..20).map(|i| f64::from(i) * 0.5).map(|x| (x, f(x))).collect()
    }

    #[test]
    fn a_growing_queue_with_flat_throughput_is_over_saturated() {
        let wobble = |x: f64| if (x * 2.0) as i64 % 2 == 0 { 3.0 } else { -3.0 };
        let s = WindowSeries {
            waiting: series(|x| 2.0 * x),
            ttft: series(|x| 100.0 + 80.0 * x),
            tps: series(|x| 500.0 + wobble(x)),
        };
        let r = saturation(&s, None);
        assert_eq!(r.verdict, SaturationVerdict::OverSaturated, "{r:?}");
        assert!(r.waiting.unwrap().rising() && !r.tps.unwrap().rising());
    }

    #[test]
    fn a_steady_queue_or_a_ramp_is_not() {
        let flat = WindowSeries { waiting: series(|_| 12.0), ttft: series(|_| 40.0), tps: series(|_| 500.0) };
        assert_eq!(saturation(&flat, None).verdict, SaturationVerdict::Steady);
        let ramp = WindowSeries { tps: series(|x| 100.0 + 50.0 * x), ..flat.clone() };
        let ramp = WindowSeries { waiting: series(|x| 2.0 * x), ..ramp };
        assert_eq!(saturation(&ramp, None).verdict, SaturationVerdict::Steady, "throughput rises with it");
        let tiny = WindowSeries { waiting: series(|x| 0.01 * x), ..flat };
        assert_eq!(saturation(&tiny, None).verdict, SaturationVerdict::Steady, "below one request");
        assert_eq!(saturation(&WindowSeries::default(), None).verdict, SaturationVerdict::Unknown);
    }

    #[test]
    fn noise_estimates() {
        let n = per_second_noise(&[100.0, 110.0, 90.0, 100.0]).unwrap();
        assert_eq!((n.source.as_str(), n.n), ("per_second", 4));
        assert!((n.mean_tps - 100.0).abs() < 1e-9 && n.se_tps > 0.0);
        let s = stream_spread_noise(&[10.0, 12.0, 8.0, 10.0]).unwrap();
        assert!((s.mean_tps - 40.0).abs() < 1e-9 && s.source == "stream_spread");
        assert!(stream_spread_noise(&[10.0]).is_none());
    }
}
