//! The serve figures on hand-made requests, against numbers worked out by hand.

use super::*;
use crate::load::sample::{ErrorKind, Mark, Outcome};
use tokio::time::Instant;

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

/// A completed request: first chunk at `ttft` ms, then chunks of `sizes` tokens every `gap` ms,
/// ending 10 ms after the last chunk.
fn request(ttft: u64, gap: u64, sizes: &[u64]) -> RequestSample {
    let mut s = RequestSample::new(0, Instant::now());
    let (mut at, mut tokens) = (ttft, 1);
    s.marks.push(Mark { at_us: at * 1000, tokens });
    for k in sizes {
        at += gap;
        tokens += k;
        s.marks.push(Mark { at_us: at * 1000, tokens });
    }
    s.output_tokens = tokens;
    s.ended_at = s.sent_at + Duration::from_millis(at + 10);
    s.outcome = Outcome::Completed(None);
    s
}

#[test]
fn describe_is_numpy_mean_median_population_std_and_linear_p99() {
    let [mean, median, std, p99] = describe([1.0, 2.0, 3.0, 4.0]);
    assert!(close(mean, 2.5) && close(median, 2.5));
    assert!(close(std, 1.25_f64.sqrt()), "population std (ddof 0), not the sample std 1.29: {std:?}");
    assert!(close(p99, 3.97), "numpy: 3 + 0.97 x (4 - 3): {p99:?}");
    assert_eq!(describe(std::iter::empty()), [None; 4]);
}

#[test]
fn one_request_gives_ttft_tpot_and_both_itls() {
    // Chunks at 100 ms (1 token), 130 ms (+2 tokens), 150 ms (+1 token); ends at 160 ms.
    let s = request(100, 30, &[2]);
    let mut s2 = s.clone();
    s2.marks.push(Mark { at_us: 150_000, tokens: 4 });
    s2.output_tokens = 4;
    s2.ended_at = s2.sent_at + Duration::from_millis(160);
    let f = RequestFigures::of(&s2, 7);
    assert!(close(f.ttft_ms, 100.0) && (f.e2el_ms - 160.0).abs() < 1e-9);
    let mut gaps = ServeGaps::default();
    gaps.add(&s2);
    assert_eq!(gaps.chunk_ms.count(), 2, "vLLM's ITL: one gap per chunk");
    assert!(close(gaps.chunk_ms.mean(), 25.0) && close(gaps.chunk_ms.percentile(0.0), 20.0));
    assert_eq!(gaps.token_ms.count(), 3, "ours: the gap spread over its tokens");
    assert!(close(gaps.token_ms.percentile(50.0), 15.0) && close(gaps.token_ms.percentile(100.0), 20.0));
    assert!(close(f.tpot_ms(), 20.0), "(160 - 100) / (4 - 1)");
    let one = request(50, 0, &[]);
    let mut none = ServeGaps::default();
    none.add(&one);
    assert_eq!((RequestFigures::of(&one, 7).tpot_ms(), none.chunk_ms.count()), (None, 0), "one token: no TPOT, no ITL");
}

#[test]
fn totals_rates_and_latencies_are_of_completed_requests_only() {
    let mut failed = request(10, 5, &[1, 1, 1]);
    failed.outcome = Outcome::Failed { kind: ErrorKind::StreamReset, detail: "reset".into() };
    let samples = [request(100, 10, &[1, 1]), request(200, 20, &[1, 1]), failed];
    let reqs: Vec<RequestFigures> = samples.iter().map(|s| RequestFigures::of(s, 50)).collect();
    let mut gaps = ServeGaps::default();
    samples.iter().for_each(|s| gaps.add(s));
    let m = serve_metrics(&reqs, &gaps, 2.0, None);
    assert_eq!((m.completed, m.failed), (2, 1));
    assert_eq!((m.total_input_tokens, m.total_output_tokens), (100, 6));
    assert!((m.request_throughput - 1.0).abs() < 1e-12);
    assert!((m.output_throughput - 3.0).abs() < 1e-12 && (m.total_token_throughput - 53.0).abs() < 1e-12);
    assert!(close(m.mean_ttft_ms, 150.0) && close(m.median_ttft_ms, 150.0) && close(m.std_ttft_ms, 50.0));
    // e2el: 100 + 20 + 10 = 130 and 200 + 40 + 10 = 250; TPOT (130 - 100) / 2 = 15 and 25.
    assert!(close(m.mean_e2el_ms, 190.0) && close(m.mean_tpot_ms, 20.0));
    assert!(close(m.p99_tpot_ms, 24.9), "15 + 0.99 x 10");
    // ITL: chunks 10, 10 and 20, 20.
    assert!(close(m.mean_itl_ms, 15.0) && close(m.median_itl_ms, 15.0) && close(m.std_itl_ms, 5.0));
    assert!(close(m.mean_itl_token_ms, 15.0));
    assert_eq!(m.request_goodput, None, "no --goodput, no goodput");
}

#[test]
fn goodput_counts_requests_meeting_every_bound_and_a_one_token_tpot_as_zero() {
    let reqs: Vec<RequestFigures> =
        [request(100, 2, &[1, 1, 1, 1]), request(300, 2, &[1, 1, 1, 1]), request(50, 0, &[])]
            .iter()
            .map(|s| RequestFigures::of(s, 1))
            .collect();
    let ms = Duration::from_millis;
    let slo = Slo { ttft: Some(ms(150)), tpot: Some(ms(10)), e2e: None };
    let m = serve_metrics(&reqs, &ServeGaps::default(), 4.0, Some(&slo));
    assert!(close(m.request_goodput, 0.5), "the 100 ms and the one-token request: 2 / 4 s, {:?}", m.request_goodput);
    // TPOT of the first: (118 - 100) / 4 = 4.5 ms.
    let tight = Slo { ttft: Some(ms(150)), tpot: Some(ms(4)), e2e: None };
    assert!(close(serve_metrics(&reqs, &ServeGaps::default(), 4.0, Some(&tight)).request_goodput, 0.25));
}

#[test]
fn nothing_completed_gives_no_latencies_and_zero_rates() {
    let m = serve_metrics(&[], &ServeGaps::default(), 0.0, None);
    assert_eq!((m.completed, m.request_throughput, m.mean_ttft_ms, m.p99_itl_ms), (0, 0.0, None, None));
}
