//! The client's view of one attempt, computed from its samples after the fact (pure).

use super::sample_window::{Window, push_gaps, record, sources_by_tokens, stream_window};
use crate::load::sample::{ErrorKind, Outcome, RequestSample, TokenSource};
use crate::report::json::RequestRecord;
use crate::stats::{Samples, Summary};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::Instant;

/// Client-side statistics of one attempt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientStats {
    /// Output tokens inside the window, all streams.
    pub window_tokens: u64,
    /// Window tokens / window length, tok/s (0 without a window).
    pub aggregate_tps: f64,
    /// Token sources of the window, most tokens first.
    pub sources: Vec<TokenSource>,
    /// Aggregate / requested streams, tok/s.
    pub per_request_tps: f64,
    /// 1 / median per-stream ITL, tok/s.
    pub user_tps: Option<f64>,
    /// TTFT of first tokens that arrived before the window closed, ms.
    pub ttft_ms: Option<Summary>,
    /// Per-stream window ITL, ms.
    pub itl_ms: Option<Summary>,
    /// Per-token ITL, ms.
    pub itl_token_ms: Option<Summary>,
    /// Per-chunk ITL, ms.
    pub itl_chunk_ms: Option<Summary>,
    /// TPOT of completed requests, ms.
    pub tpot_ms: Option<Summary>,
    /// Latency of requests the server completed before the window closed, ms.
    pub latency_ms: Option<Summary>,
    /// Failed requests by kind.
    pub errors: BTreeMap<ErrorKind, u64>,
    /// One message per error kind.
    pub error_examples: BTreeMap<ErrorKind, String>,
    /// Failed requests.
    pub error_count: u64,
    /// Requests the server completed.
    pub completed: u64,
    /// One record per request.
    pub records: Vec<RequestRecord>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Summarises the samples of an attempt that started at `origin`, measured over `window`
/// (None when no window ran), with `requested` streams. Requests count towards TTFT and
/// latency only if their event happened before `cutoff` (the window end, or the attempt end).
pub fn summarize(
    samples: &[RequestSample],
    origin: Instant,
    window: Option<Window>,
    requested: u32,
    cutoff: Instant,
) -> ClientStats {
    let mut st = ClientStats::default();
    let (mut ttft, mut itl, mut tok_gaps, mut chunk_gaps, mut tpot, mut lat) =
        (Samples::new(), Samples::new(), Samples::new(), Samples::new(), Samples::new(), Samples::new());
    let mut window_share = Vec::with_capacity(samples.len());
    for s in samples {
        let sw = window.map(|w| stream_window(s, &w)).unwrap_or_default();
        window_share.push((s, sw.tokens));
        st.window_tokens += sw.tokens;
        if let Some(d) = sw.itl {
            itl.push(ms(d));
        }
        if let Some(w) = &window {
            push_gaps(s, w, &mut chunk_gaps, &mut tok_gaps);
        }
        if let (Some(t), Some(first)) = (s.ttft(), s.first_token_at())
            && first < cutoff
        {
            ttft.push(ms(t));
        }
        count_outcome(&mut st, s, cutoff, &mut lat, &mut tpot);
        st.records.push(record(s, origin, sw.tokens));
    }
    if let Some(w) = window.filter(|w| !w.is_empty()) {
        st.aggregate_tps = st.window_tokens as f64 / w.len().as_secs_f64();
        st.per_request_tps = st.aggregate_tps / f64::from(requested.max(1));
    }
    st.sources = sources_by_tokens(window_share.into_iter());
    st.itl_ms = itl.summary();
    st.user_tps = st.itl_ms.map(|s| s.p50).filter(|p| *p > 0.0).map(|p| 1e3 / p);
    (st.ttft_ms, st.itl_token_ms, st.itl_chunk_ms) = (ttft.summary(), tok_gaps.summary(), chunk_gaps.summary());
    (st.tpot_ms, st.latency_ms) = (tpot.summary(), lat.summary());
    st
}

fn count_outcome(st: &mut ClientStats, s: &RequestSample, cutoff: Instant, lat: &mut Samples, tpot: &mut Samples) {
    match &s.outcome {
        Outcome::Completed(_) if s.ended_at <= cutoff => {
            st.completed += 1;
            lat.push(ms(s.e2e()));
            if let (Some(t), n) = (s.ttft(), s.output_tokens)
                && n > 1
            {
                tpot.push(ms(s.e2e().saturating_sub(t)) / (n - 1) as f64);
            }
        }
        Outcome::Failed { kind, detail } => {
            st.error_count += 1;
            *st.errors.entry(*kind).or_default() += 1;
            st.error_examples.entry(*kind).or_insert_with(|| detail.clone());
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::sample::Mark;

    fn stream(origin: Instant, start_ms: u64, n: u64, every_ms: u64) -> RequestSample {
        let mut s = RequestSample::new(0, origin + Duration::from_millis(start_ms));
        s.marks = (1..=n).map(|i| Mark { at_us: (100 + i * every_ms) * 1000, tokens: i }).collect();
        s.output_tokens = n;
        s.token_source = TokenSource::OpenaiContinuousUsage;
        s.ended_at = s.sent_at + Duration::from_millis(100 + n * every_ms);
        s
    }

    #[test]
    fn aggregate_is_window_tokens_over_window_length() {
        let o = Instant::now();
        // Two streams: 1 token / 10 ms each, from t=110 ms to t=1100 ms.
        let samples = vec![stream(o, 0, 100, 10), stream(o, 0, 100, 10)];
        let w = Window { start: o + Duration::from_millis(200), end: o + Duration::from_millis(700) };
        let st = summarize(&samples, o, Some(w), 4, w.end);
        assert_eq!(st.window_tokens, 100, "50 tokens each in 500 ms");
        assert!((st.aggregate_tps - 200.0).abs() < 1e-9);
        assert!((st.per_request_tps - 50.0).abs() < 1e-9, "four requested, two ran");
        assert!((st.itl_ms.unwrap().p50 - 10.0).abs() < 1e-9);
        assert!((st.user_tps.unwrap() - 100.0).abs() < 1e-6);
        assert_eq!(st.sources, vec![TokenSource::OpenaiContinuousUsage]);
        assert_eq!(st.latency_ms, None, "nothing completed inside the window");
    }

    #[test]
    fn errors_are_counted_by_kind_with_an_example() {
        let o = Instant::now();
        let mut bad = RequestSample::new(1, o);
        bad.outcome = Outcome::Failed { kind: ErrorKind::ContextOverflow, detail: "too long".into() };
        let samples = vec![bad.clone(), bad];
        let st = summarize(&samples, o, None, 2, o + Duration::from_secs(1));
        assert_eq!(st.error_count, 2);
        assert_eq!(st.errors.get(&ErrorKind::ContextOverflow), Some(&2));
        assert_eq!(st.error_examples.get(&ErrorKind::ContextOverflow).map(String::as_str), Some("too long"));
        assert_eq!(st.aggregate_tps, 0.0);
        assert_eq!(st.records.len(), 2);
    }

    #[test]
    fn completed_requests_give_latency_and_tpot() {
        let o = Instant::now();
        let mut s = stream(o, 0, 11, 10);
        s.outcome = Outcome::Completed(None);
        let st = summarize(&[s], o, None, 1, o + Duration::from_secs(5));
        let lat = st.latency_ms.unwrap();
        assert!((lat.p50 - 210.0).abs() < 1e-6);
        assert!((st.tpot_ms.unwrap().p50 - 10.0).abs() < 1e-6, "(210-110)/10");
        assert!((st.ttft_ms.unwrap().p50 - 110.0).abs() < 1e-6);
    }
}
