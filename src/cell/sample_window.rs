//! Pure window arithmetic on request samples: tokens inside a measurement window, per-stream
//! ITL over the window, per-token and per-chunk gaps, and the report records.

use crate::load::sample::RequestSample;
use crate::report::json::RequestRecord;
use crate::stats::GapDist;
use std::time::Duration;
use tokio::time::Instant;

/// A measurement window `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Window {
    /// First instant inside.
    pub start: Instant,
    /// First instant after.
    pub end: Instant,
}

impl Window {
    /// Length of the window.
    pub(crate) fn len(&self) -> Duration {
        self.end.saturating_duration_since(self.start)
    }

    /// True for a zero-length window.
    pub(crate) fn is_empty(&self) -> bool {
        self.len().is_zero()
    }

    fn contains(&self, t: Instant) -> bool {
        t >= self.start && t < self.end
    }
}

/// One stream's share of a window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct StreamWindow {
    /// Output tokens whose chunk arrived inside the window.
    pub tokens: u64,
    /// Per-stream ITL over the window: (last - first) / (tokens after the first chunk).
    pub itl: Option<Duration>,
    /// Time inside the window between the stream's first and last token (decoding).
    pub decoding: Duration,
}

/// Tokens and ITL of one sample inside `w`.
pub(crate) fn stream_window(s: &RequestSample, w: &Window) -> StreamWindow {
    let mut before = 0u64;
    let mut first: Option<(Instant, u64)> = None;
    let mut last: Option<(Instant, u64)> = None;
    for m in &s.marks {
        let t = s.mark_at(&m);
        if t < w.start {
            before = m.tokens;
        } else if t < w.end {
            first.get_or_insert((t, m.tokens));
            last = Some((t, m.tokens));
        } else {
            break;
        }
    }
    let Some((t_last, c_last)) = last else { return StreamWindow::default() };
    let (t_first, c_first) = first.unwrap_or((t_last, c_last));
    let gaps = c_last - c_first;
    let itl = (gaps > 0).then(|| t_last.saturating_duration_since(t_first) / gaps as u32);
    StreamWindow { tokens: c_last - before, itl, decoding: decoding_in(s, w) }
}

/// The part of `w` between the stream's first and last token; a stream with a token after
/// the window decodes until the window's end.
fn decoding_in(s: &RequestSample, w: &Window) -> Duration {
    let (Some(first), Some(last)) = (s.first_token_at(), s.last_token_at()) else { return Duration::ZERO };
    let (from, to) = (first.max(w.start), last.min(w.end));
    to.saturating_duration_since(from)
}

/// Gaps between consecutive chunks whose later chunk falls in `w`, ms: given once per chunk
/// to `per_chunk`, and as (`gap/k`, `k`) to `per_token` for a chunk of `k` tokens (`k` equal
/// per-token gaps).
pub(crate) fn push_gaps(
    s: &RequestSample,
    w: &Window,
    mut per_chunk: impl FnMut(f64),
    mut per_token: impl FnMut(f64, u64),
) {
    for (a, b) in s.marks.pairs() {
        if !w.contains(s.mark_at(&b)) {
            continue;
        }
        let gap_ms = (b.at_us - a.at_us) as f64 / 1e3;
        let k = b.tokens.saturating_sub(a.tokens).max(1);
        per_chunk(gap_ms);
        per_token(gap_ms / k as f64, k);
    }
}

/// Per-token gaps of whole streams (every chunk after a stream's first), ms: [`push_gaps`]
/// over each sample's own span. Bursts and routing phases summarise these as their ITL.
pub(crate) fn per_token_gaps<'a>(samples: impl IntoIterator<Item = &'a RequestSample>) -> GapDist {
    let mut per_token = GapDist::new();
    for s in samples {
        let Some(last) = s.marks.last() else { continue };
        let all = Window { start: s.sent_at, end: s.mark_at(&last) + Duration::from_micros(1) };
        push_gaps(s, &all, |_| {}, |g, k| per_token.push_n(g, k));
    }
    per_token
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The report record of one sample; times relative to `origin`.
pub(crate) fn record(s: &RequestSample, origin: Instant, window_tokens: u64) -> RequestRecord {
    RequestRecord {
        worker: s.worker,
        sent_ms: ms(s.sent_at.saturating_duration_since(origin)),
        ttft_ms: s.ttft().map(ms),
        e2e_ms: ms(s.e2e()),
        output_tokens: s.output_tokens,
        input_tokens: s.prompt_tokens,
        window_tokens,
        itl_ms: s.itl().map(ms),
        outcome: s.outcome.recorded(),
        status: s.status,
        served_by: s.served_by.clone(),
        good: None,
        schedule_lag_ms: s.schedule_lag().map(ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::sample::{Mark, TokenSource};

    fn sample(origin: Instant, marks: &[(u64, u64)]) -> RequestSample {
        let mut s = RequestSample::new(0, origin);
        s.marks = marks.iter().map(|&(ms, tokens)| Mark { at_us: ms * 1000, tokens }).collect();
        s.output_tokens = marks.last().map_or(0, |m| m.1);
        s.token_source = TokenSource::OpenaiContinuousUsage;
        s
    }

    #[test]
    fn tokens_inside_the_window_only() {
        let o = Instant::now();
        // One token every 10 ms from t=10 to t=100 (10 tokens).
        let s = sample(o, &(1..=10).map(|i| (i * 10, i)).collect::<Vec<_>>());
        let w = Window { start: o + Duration::from_millis(35), end: o + Duration::from_millis(75) };
        let sw = stream_window(&s, &w);
        assert_eq!(sw.tokens, 4, "marks at 40, 50, 60, 70");
        assert_eq!(sw.itl, Some(Duration::from_millis(10)));
    }

    #[test]
    fn multi_token_chunks_count_all_their_tokens() {
        let o = Instant::now();
        let s = sample(o, &[(10, 1), (50, 5), (90, 9)]);
        let w = Window { start: o + Duration::from_millis(20), end: o + Duration::from_millis(100) };
        let sw = stream_window(&s, &w);
        assert_eq!(sw.tokens, 8);
        assert_eq!(sw.itl, Some(Duration::from_millis(10)), "(90-50)/(9-5)");
        let (mut chunk, mut token) = (GapDist::new(), GapDist::new());
        push_gaps(&s, &w, |g| chunk.push(g), |g, k| token.push_n(g, k));
        assert_eq!(chunk.count(), 2);
        assert_eq!(token.count(), 8);
        assert_eq!(token.percentile(50.0), Some(10.0));
        assert_eq!(chunk.percentile(50.0), Some(40.0));
    }

    #[test]
    fn per_token_gaps_cover_whole_streams_one_gap_per_token() {
        let o = Instant::now();
        let a = sample(o, &[(10, 1), (50, 5), (90, 9)]);
        let b = sample(o + Duration::from_secs(1), &[(20, 1), (40, 2)]);
        let g = per_token_gaps([&a, &b, &sample(o, &[])]);
        assert_eq!(g.count(), 9, "8 tokens after a's first chunk, 1 after b's");
        let sum = g.summary().unwrap();
        assert_eq!((sum.min, sum.max), (10.0, 20.0));
        assert_eq!(g.percentile(50.0), Some(10.0));
    }

    #[test]
    fn a_queued_stream_has_nothing_in_the_window() {
        let o = Instant::now();
        let s = sample(o, &[]);
        let w = Window { start: o, end: o + Duration::from_secs(1) };
        assert_eq!(stream_window(&s, &w), StreamWindow::default());
    }

    #[test]
    fn a_single_chunk_has_tokens_but_no_itl() {
        let o = Instant::now();
        let s = sample(o, &[(10, 3)]);
        let w = Window { start: o, end: o + Duration::from_secs(1) };
        assert_eq!(stream_window(&s, &w), StreamWindow { tokens: 3, itl: None, decoding: Duration::ZERO });
    }

    #[test]
    fn decoding_time_is_the_first_to_last_token_span_inside_the_window() {
        let o = Instant::now();
        let s = sample(o, &[(10, 1), (400, 40), (900, 90)]);
        let w = Window { start: o + Duration::from_millis(100), end: o + Duration::from_millis(600) };
        assert_eq!(stream_window(&s, &w).decoding, Duration::from_millis(500), "decodes past the window's end");
        let late = Window { start: o + Duration::from_millis(950), end: o + Duration::from_secs(2) };
        assert_eq!(stream_window(&s, &late).decoding, Duration::ZERO, "done before the window");
    }
}
