//! The client's own tok/s series over a measurement window: tokens binned by the time their
//! chunk arrived, for the saturation test when the engine's counters do not move live.

use super::sample_window::Window;
use crate::load::sample::RequestSample;
use std::time::Duration;

/// Width of one bin of the client's series.
pub(crate) const BIN: Duration = Duration::from_millis(500);

/// Tokens per [`BIN`] of a window, summed over the requests folded in.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct TpsBins {
    tokens: Vec<u64>,
}

impl TpsBins {
    /// Adds the tokens of `s` whose chunk arrived inside `w`, each to the bin of its arrival.
    /// The bins sum to the window's tokens as `stream_window` counts them.
    pub(crate) fn add(&mut self, s: &RequestSample, w: &Window) {
        let mut before = 0u64;
        for m in &s.marks {
            let t = s.mark_at(&m);
            if t >= w.end {
                break;
            }
            if t >= w.start {
                let i = (t.saturating_duration_since(w.start).as_micros() / BIN.as_micros()) as usize;
                if self.tokens.len() <= i {
                    self.tokens.resize(i + 1, 0);
                }
                self.tokens[i] += m.tokens.saturating_sub(before);
            }
            before = m.tokens;
        }
    }

    /// tok/s of every whole bin of `w` (a last, partial bin is left out), one point per bin:
    /// (seconds into the window at the bin's end, tok/s).
    pub(crate) fn series(&self, w: &Window) -> Vec<(f64, f64)> {
        let whole = (w.len().as_micros() / BIN.as_micros()) as usize;
        let width = BIN.as_secs_f64();
        (0..whole).map(|i| ((i + 1) as f64 * width, self.tokens.get(i).copied().unwrap_or(0) as f64 / width)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::sample::Mark;
    use tokio::time::Instant;

    #[test]
    fn tokens_land_in_the_bin_of_their_chunk_and_sum_to_the_window() {
        let t0 = Instant::now();
        let w = Window { start: t0 + Duration::from_millis(100), end: t0 + Duration::from_millis(1_350) };
        let mut s = RequestSample::new(0, t0);
        // One token every 50 ms from 50 ms on: 2 before the window, 25 inside, the rest after.
        for i in 1..=40u64 {
            s.marks.push(Mark { at_us: i * 50_000, tokens: i });
        }
        let mut b = TpsBins::default();
        b.add(&s, &w);
        let series = b.series(&w);
        assert_eq!(series.len(), 2, "1.25 s: two whole bins");
        assert_eq!(series[0], (0.5, 20.0), "10 tokens in the first 500 ms");
        assert_eq!(b.tokens.iter().sum::<u64>(), crate::cell::sample_window::stream_window(&s, &w).tokens);
    }
}
