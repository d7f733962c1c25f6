//! The client's view of one attempt, computed from its samples after the fact (pure).

use super::goodput::{GoodputTally, judge};
use super::sample_window::{Window, push_gaps, record, stream_window};
use super::tps_bins::TpsBins;
use crate::load::sample::{ErrorKind, Outcome, RequestSample, TokenSource};
use crate::report::json::RequestRecord;
use crate::stats::{GapDist, Reservoir, SampleOf, Slo, Summary};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::Instant;

/// Client-side statistics of one attempt.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ClientStats {
    /// Output tokens inside the window, all streams.
    pub window_tokens: u64,
    /// Window tokens / window length, tok/s (0 without a window).
    pub aggregate_tps: f64,
    /// Token sources of the window, most tokens first.
    pub sources: Vec<TokenSource>,
    /// Aggregate / average streams decoding in the window (requested streams when none
    /// decoded), tok/s.
    pub per_request_tps: f64,
    /// Streams decoding (between their first and last token), averaged over the window.
    pub decoding_avg: Option<f64>,
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
    /// Re-sends on a fresh connection of requests whose send provably never reached the
    /// server (`load::resend`), all requests.
    pub reconnects: u64,
    /// Requests the server completed.
    pub completed: u64,
    /// One record per request, or a uniform sample of [`REQUEST_SAMPLE_CAP`] of them.
    pub records: Vec<RequestRecord>,
    /// Every request by its record's `outcome` (`completed`, `cut`, the error kind): exact.
    pub outcomes: BTreeMap<crate::load::sample::RecordedOutcome, u64>,
    /// Verdicts against the SLO given with [`Summarizer::with_slo`] (exact, every request).
    pub goodput: Option<GoodputTally>,
    /// The client's own tok/s per [`super::tps_bins::BIN`] of the window: (seconds into the
    /// window, tok/s); empty without a window.
    pub window_series: Vec<(f64, f64)>,
}

/// Most request records an attempt keeps for the report (about 6 MB of JSON), and most values
/// its per-request distributions (TTFT, per-stream ITL, TPOT, latency) hold; beyond it both are
/// uniform samples, while `outcomes` and each summary's count, mean and extremes stay exact.
/// Per-token and per-chunk distributions are [`GapDist`]s: exact up to
/// [`crate::stats::gap_dist::EXACT_CAP`] values, then a histogram of 0.1% precision.
pub(crate) const REQUEST_SAMPLE_CAP: usize = 16_384;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Summarises the samples of an attempt that started at `origin`, measured over `window`
/// (None when no window ran), with `requested` streams. Requests count towards TTFT and
/// latency only if their event happened before `cutoff` (the window end, or the attempt end).
#[cfg(test)]
pub(crate) fn summarize(
    samples: &[RequestSample],
    origin: Instant,
    window: Option<Window>,
    requested: u32,
    cutoff: Instant,
) -> ClientStats {
    let mut sum = Summarizer::new(origin);
    for s in samples {
        sum.add(s, window.as_ref(), cutoff);
    }
    sum.finish(window, requested)
}

/// [`summarize`] one sample at a time, so a long window can fold each finished request in as
/// it arrives and drop its token timeline: memory then grows by one [`RequestRecord`] per
/// request up to [`REQUEST_SAMPLE_CAP`], and the distributions are bounded ([`Reservoir`]s
/// per request, [`GapDist`] histograms per token and chunk), whatever the number of tokens.
#[derive(Debug, Clone)]
pub(crate) struct Summarizer {
    origin: Instant,
    st: ClientStats,
    ttft: Reservoir,
    itl: Reservoir,
    /// Per-token and per-chunk gaps: bounded histograms past their exact cap (stats::gap_dist).
    tok_gaps: GapDist,
    chunk_gaps: GapDist,
    tpot: Reservoir,
    lat: Reservoir,
    sources: BTreeMap<TokenSource, u64>,
    records: SampleOf<RequestRecord>,
    slo: Option<Slo>,
    bins: TpsBins,
    /// Stream-time decoding inside the window, summed over streams.
    decoding: Duration,
}

impl Summarizer {
    /// An empty summary of an attempt that started at `origin`.
    pub(crate) fn new(origin: Instant) -> Self {
        Self {
            origin,
            st: ClientStats::default(),
            ttft: Reservoir::new(REQUEST_SAMPLE_CAP),
            itl: Reservoir::new(REQUEST_SAMPLE_CAP),
            tok_gaps: GapDist::new(),
            chunk_gaps: GapDist::new(),
            decoding: Duration::ZERO,
            tpot: Reservoir::new(REQUEST_SAMPLE_CAP),
            lat: Reservoir::new(REQUEST_SAMPLE_CAP),
            sources: BTreeMap::new(),
            records: SampleOf::new(REQUEST_SAMPLE_CAP),
            slo: None,
            bins: TpsBins::default(),
        }
    }

    /// Also judges every request against `slo` (`cell::goodput::judge`): the statistics then
    /// carry the tally and each record its verdict.
    pub(crate) fn with_slo(mut self, slo: Slo) -> Self {
        self.slo = Some(slo);
        self.st.goodput = Some(GoodputTally::default());
        self
    }

    /// Adds one sample, judged against `window` and `cutoff` as [`summarize`] does. A sample
    /// folded in before the window closed must have ended before its real end (and cutoff).
    pub(crate) fn add(&mut self, s: &RequestSample, window: Option<&Window>, cutoff: Instant) {
        let sw = window.map(|w| stream_window(s, w)).unwrap_or_default();
        self.st.window_tokens += sw.tokens;
        self.decoding += sw.decoding;
        if sw.tokens > 0 {
            *self.sources.entry(s.token_source).or_default() += sw.tokens;
        }
        if let Some(d) = sw.itl {
            self.itl.push(ms(d));
        }
        if let Some(w) = window {
            push_gaps(s, w, |g| self.chunk_gaps.push(g), |g, k| self.tok_gaps.push_n(g, k));
            self.bins.add(s, w);
        }
        if let (Some(t), Some(first)) = (s.ttft(), s.first_token_at())
            && first < cutoff
        {
            self.ttft.push(ms(t));
        }
        count_outcome(&mut self.st, s, cutoff, &mut self.lat, &mut self.tpot);
        self.st.reconnects += u64::from(s.reconnects);
        let mut rec = record(s, self.origin, sw.tokens);
        if let (Some(slo), Some(tally)) = (&self.slo, self.st.goodput.as_mut()) {
            rec.good = judge(s, slo, window, cutoff);
            tally.add(rec.good);
        }
        *self.st.outcomes.entry(rec.outcome).or_default() += 1;
        self.records.push(rec);
    }

    /// The distributions behind the summaries so far, for a shard's report
    /// (`report::shard_dists`): `report merge` recomputes the percentiles from them.
    pub(crate) fn dists(&self) -> crate::report::shard_dists::ShardDists {
        use crate::report::shard_dists::{HeldValues, ShardDists};
        use crate::stats::SavedGapDist;
        ShardDists {
            ttft_ms: HeldValues::of(&self.ttft),
            itl_ms: HeldValues::of(&self.itl),
            tpot_ms: HeldValues::of(&self.tpot),
            latency_ms: HeldValues::of(&self.lat),
            itl_token_ms: SavedGapDist::of(&self.tok_gaps),
            itl_chunk_ms: SavedGapDist::of(&self.chunk_gaps),
        }
    }

    /// Verdicts so far, when judging against an SLO.
    pub(crate) fn goodput(&self) -> Option<GoodputTally> {
        self.st.goodput
    }

    /// The statistics, with rates over `window` (the window that really ran).
    pub(crate) fn finish(mut self, window: Option<Window>, requested: u32) -> ClientStats {
        let mut st = std::mem::take(&mut self.st);
        st.records = std::mem::replace(&mut self.records, SampleOf::new(1)).into_vec();
        if let Some(w) = window.filter(|w| !w.is_empty()) {
            st.aggregate_tps = st.window_tokens as f64 / w.len().as_secs_f64();
            st.decoding_avg = Some(self.decoding.as_secs_f64() / w.len().as_secs_f64());
            let streams = st.decoding_avg.filter(|d| *d > 0.0).unwrap_or(f64::from(requested.max(1)));
            st.per_request_tps = st.aggregate_tps / streams;
            st.window_series = self.bins.series(&w);
        }
        let mut by: Vec<_> = self.sources.into_iter().collect();
        by.sort_by_key(|(_, tokens)| std::cmp::Reverse(*tokens));
        st.sources = by.into_iter().map(|(s, _)| s).collect();
        st.itl_ms = self.itl.summary();
        st.user_tps = st.itl_ms.map(|s| s.p50).filter(|p| *p > 0.0).map(|p| 1e3 / p);
        (st.ttft_ms, st.itl_token_ms, st.itl_chunk_ms) =
            (self.ttft.summary(), self.tok_gaps.summary(), self.chunk_gaps.summary());
        (st.tpot_ms, st.latency_ms) = (self.tpot.summary(), self.lat.summary());
        st
    }
}

fn count_outcome(st: &mut ClientStats, s: &RequestSample, cutoff: Instant, lat: &mut Reservoir, tpot: &mut Reservoir) {
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
        assert_eq!(st.decoding_avg, Some(2.0), "both streams decode across the whole window");
        assert!((st.per_request_tps - 100.0).abs() < 1e-9, "four requested, two ran: each got 100");
        assert!((st.itl_ms.unwrap().p50 - 10.0).abs() < 1e-9);
        assert!((st.user_tps.unwrap() - 100.0).abs() < 1e-6);
        assert_eq!(st.sources, vec![TokenSource::OpenaiContinuousUsage]);
        assert_eq!(st.latency_ms, None, "nothing completed inside the window");
    }

    #[test]
    fn per_request_divides_by_the_streams_decoding_not_the_requested() {
        let o = Instant::now();
        // One stream across the window, one that decodes only its first half (t=110..600 ms).
        let samples = vec![stream(o, 0, 100, 10), stream(o, 0, 49, 10)];
        let w = Window { start: o + Duration::from_millis(100), end: o + Duration::from_millis(1100) };
        let st = summarize(&samples, o, Some(w), 8, w.end);
        let avg = st.decoding_avg.expect("a window ran");
        assert!((avg - (0.99 + 0.48)).abs() < 1e-9, "{avg}");
        assert!((st.per_request_tps - st.aggregate_tps / avg).abs() < 1e-9);
        let none = summarize(&[], o, Some(w), 8, w.end);
        assert_eq!((none.decoding_avg, none.per_request_tps), (Some(0.0), 0.0));
    }

    #[test]
    fn records_are_a_bounded_sample_and_outcomes_count_every_request() {
        let o = Instant::now();
        let w = Window { start: o, end: o + Duration::from_secs(3600) };
        let mut sum = Summarizer::new(o);
        let n = REQUEST_SAMPLE_CAP + 3000;
        for i in 0..n {
            let mut s = stream(o, i as u64, 2, 1);
            s.outcome = Outcome::Completed(None);
            sum.add(&s, Some(&w), w.end);
        }
        let st = sum.finish(Some(w), 1);
        assert_eq!(st.records.len(), REQUEST_SAMPLE_CAP, "the records are bounded");
        assert_eq!(st.outcomes.values().sum::<u64>(), n as u64);
        assert_eq!(st.completed, n as u64);
        assert_eq!(st.latency_ms.map(|l| l.count), Some(n as u64), "figures are of every request");
    }

    #[test]
    fn a_shards_distributions_give_back_its_summaries() {
        use crate::report::shard_dists::summary_of;
        let o = Instant::now();
        let w = Window { start: o + Duration::from_millis(150), end: o + Duration::from_millis(900) };
        let mut sum = Summarizer::new(o);
        for i in 0..30u64 {
            let mut s = stream(o, i * 11, 20 + i % 7, 2 + i % 5);
            s.outcome = Outcome::Completed(None);
            sum.add(&s, Some(&w), w.end);
        }
        let d = sum.dists();
        let st = sum.finish(Some(w), 30);
        let mine = |h| summary_of(h).map(|s: Summary| (s.count, s.p50, s.p99));
        let theirs = |s: Option<Summary>| s.map(|s| (s.count, s.p50, s.p99));
        assert_eq!(mine(&d.ttft_ms), theirs(st.ttft_ms));
        assert_eq!(mine(&d.itl_ms), theirs(st.itl_ms));
        assert_eq!(mine(&d.tpot_ms), theirs(st.tpot_ms));
        assert_eq!(mine(&d.latency_ms), theirs(st.latency_ms));
        assert!(st.itl_token_ms.is_some() && st.latency_ms.is_some());
        assert_eq!(d.itl_token_ms.restore().unwrap().summary(), st.itl_token_ms);
        assert_eq!(d.itl_chunk_ms.restore().unwrap().summary(), st.itl_chunk_ms);
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

    #[test]
    fn folding_as_requests_end_gives_the_same_figures_as_summarizing_at_the_end() {
        let o = Instant::now();
        let mut samples: Vec<RequestSample> = (0..40).map(|i| stream(o, i * 37, 5 + i % 9, 3 + i % 4)).collect();
        for (i, s) in samples.iter_mut().enumerate() {
            s.outcome = if i % 7 == 3 {
                Outcome::Failed { kind: ErrorKind::StreamReset, detail: "reset".into() }
            } else {
                Outcome::Completed(None)
            };
        }
        let planned = Window { start: o + Duration::from_millis(300), end: o + Duration::from_secs(10) };
        // The window really closed at 1.2 s; requests that ended before 0.9 s were folded in
        // against the planned window while it ran, the rest summarised at the end.
        let real = Window { end: o + Duration::from_millis(1200), ..planned };
        let fold_at = o + Duration::from_millis(900);
        let mut sum = Summarizer::new(o);
        let (early, late): (Vec<_>, Vec<_>) = samples.iter().partition(|s| s.ended_at < fold_at);
        assert!(!early.is_empty() && !late.is_empty());
        early.iter().for_each(|s| sum.add(s, Some(&planned), planned.end));
        late.iter().for_each(|s| sum.add(s, Some(&real), real.end));
        let folded = sum.finish(Some(real), 8);
        let mut ordered = early.into_iter().cloned().collect::<Vec<_>>();
        ordered.extend(late.into_iter().cloned());
        assert_eq!(folded, summarize(&ordered, o, Some(real), 8, real.end));
        assert!(folded.window_tokens > 0 && folded.error_count > 0);
    }
}

#[cfg(test)]
#[path = "summarize_ends_tests.rs"]
mod ends_tests;
