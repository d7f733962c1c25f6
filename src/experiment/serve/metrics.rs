//! `vllm bench serve`'s result figures from one attempt's requests (pure). As vLLM computes
//! them: latencies and token totals are of completed requests only; TPOT per request is
//! (e2el - ttft) / (output tokens - 1), for requests of two tokens or more; ITL is every gap
//! between consecutive content chunks of a request; std is the population standard deviation
//! and percentiles interpolate linearly (numpy's defaults; ITL percentiles past
//! [`crate::stats::gap_dist::EXACT_CAP`] gaps come from a histogram, within 0.1%); goodput
//! counts a one-token request's TPOT as 0.

use crate::load::sample::RequestSample;
use crate::report::serve::ServeMetrics;
use crate::stats::{GapDist, Samples, Slo};
use std::time::Duration;

/// What one request contributes to the figures, ms (its gaps go to [`ServeGaps`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RequestFigures {
    /// The server completed it.
    pub completed: bool,
    /// Prompt tokens sent.
    pub input_tokens: u64,
    /// Output tokens received.
    pub output_tokens: u64,
    /// Send to first content chunk.
    pub ttft_ms: Option<f64>,
    /// Send to last byte.
    pub e2el_ms: f64,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The chunk gaps of completed requests, folded in as each request ends so no request keeps
/// its timeline: bounded distributions, exact up to [`crate::stats::gap_dist::EXACT_CAP`]
/// values and within 0.1% beyond (docs/reports.md §1.2).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ServeGaps {
    /// Gaps between consecutive content chunks (vLLM's ITL).
    pub chunk_ms: GapDist,
    /// The same gaps spread over their tokens (a chunk of k tokens after gap g: k values g/k).
    pub token_ms: GapDist,
}

impl ServeGaps {
    /// Adds the gaps of `s` if the server completed it.
    pub(crate) fn add(&mut self, s: &RequestSample) {
        if !s.completed() {
            return;
        }
        for (a, b) in s.marks.pairs() {
            let gap = (b.at_us.saturating_sub(a.at_us)) as f64 / 1e3;
            self.chunk_ms.push(gap);
            let k = b.tokens.saturating_sub(a.tokens).max(1);
            self.token_ms.push_n(gap / k as f64, k);
        }
    }
}

/// Mean, median, population std and p99 of a gap distribution; all None when empty.
fn describe_gaps(d: &GapDist) -> [Option<f64>; 4] {
    [d.mean(), d.percentile(50.0), d.std_dev(), d.percentile(99.0)]
}

impl RequestFigures {
    /// The figures of sample `s`, whose prompt was `input_tokens` long.
    pub(crate) fn of(s: &RequestSample, input_tokens: u64) -> Self {
        Self {
            completed: s.completed(),
            input_tokens,
            output_tokens: s.output_tokens,
            ttft_ms: s.ttft().map(ms),
            e2el_ms: ms(s.e2e()),
        }
    }

    /// TPOT, when the request has two output tokens or more and a first token.
    pub(crate) fn tpot_ms(&self) -> Option<f64> {
        let ttft = self.ttft_ms?;
        (self.output_tokens > 1).then(|| (self.e2el_ms - ttft) / (self.output_tokens - 1) as f64)
    }

    /// True when it met every bound of `slo` (a one-token request's TPOT counts as 0, as vLLM's goodput).
    pub(crate) fn meets(&self, slo: &Slo) -> bool {
        let d = |v: f64| crate::units::secs(v / 1e3);
        slo.is_met(self.ttft_ms.map(d), Some(d(self.tpot_ms().unwrap_or(0.0))), Some(d(self.e2el_ms)))
    }
}

/// Mean, median, population std and p99 of `values`; all None when empty.
pub(crate) fn describe(values: impl IntoIterator<Item = f64>) -> [Option<f64>; 4] {
    let mut s: Samples = values.into_iter().collect();
    [s.mean(), s.percentile(50.0), s.std_dev(), s.percentile(99.0)]
}

/// The figures of `reqs` (their chunk gaps folded in `gaps`) over `duration_s`, with
/// `request_goodput` under `slo` when given.
pub(crate) fn serve_metrics(
    reqs: &[RequestFigures],
    gaps: &ServeGaps,
    duration_s: f64,
    slo: Option<&Slo>,
) -> ServeMetrics {
    let ok: Vec<&RequestFigures> = reqs.iter().filter(|r| r.completed).collect();
    let per_s = |n: f64| if duration_s > 0.0 { n / duration_s } else { 0.0 };
    let input: u64 = ok.iter().map(|r| r.input_tokens).sum();
    let output: u64 = ok.iter().map(|r| r.output_tokens).sum();
    let [mean_ttft_ms, median_ttft_ms, std_ttft_ms, p99_ttft_ms] = describe(ok.iter().filter_map(|r| r.ttft_ms));
    let [mean_tpot_ms, median_tpot_ms, std_tpot_ms, p99_tpot_ms] = describe(ok.iter().filter_map(|r| r.tpot_ms()));
    let [mean_itl_ms, median_itl_ms, std_itl_ms, p99_itl_ms] = describe_gaps(&gaps.chunk_ms);
    let [mean_itl_token_ms, median_itl_token_ms, std_itl_token_ms, p99_itl_token_ms] = describe_gaps(&gaps.token_ms);
    let [mean_e2el_ms, median_e2el_ms, std_e2el_ms, p99_e2el_ms] = describe(ok.iter().map(|r| r.e2el_ms));
    let good = slo.map(|slo| per_s(ok.iter().filter(|r| r.meets(slo)).count() as f64));
    ServeMetrics {
        completed: ok.len() as u64,
        failed: (reqs.len() - ok.len()) as u64,
        total_input_tokens: input,
        total_output_tokens: output,
        duration_s,
        request_throughput: per_s(ok.len() as f64),
        output_throughput: per_s(output as f64),
        total_token_throughput: per_s((input + output) as f64),
        request_goodput: good,
        mean_ttft_ms,
        median_ttft_ms,
        std_ttft_ms,
        p99_ttft_ms,
        mean_tpot_ms,
        median_tpot_ms,
        std_tpot_ms,
        p99_tpot_ms,
        mean_itl_ms,
        median_itl_ms,
        std_itl_ms,
        p99_itl_ms,
        mean_itl_token_ms,
        median_itl_token_ms,
        std_itl_token_ms,
        p99_itl_token_ms,
        mean_e2el_ms,
        median_e2el_ms,
        std_e2el_ms,
        p99_e2el_ms,
    }
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
