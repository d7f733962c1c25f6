//! The within-cell saturation test (`stats::saturation`) of a merged decode attempt, from
//! merged figures. The server's queue trend, and its tok/s trend and noise when they were the
//! engine's, are the base shard's: the server saw every shard's load, so each shard read the
//! same series. TTFT's trend is fitted again over every shard's requests (send times count
//! from each shard's own attempt start, one instant on the session's timeline). A tok/s series
//! that was a shard's own client's (`client_per_second`) is not in the reports: the merged
//! noise is then the spread of all shards' streams and the tok/s trend is left out, with a note.

use crate::experiment::decode::knee::stream_rates;
use crate::report::json::{DecodeAttempt, RequestRecord};
use crate::stats::saturation::{Saturation, judge, stream_spread_noise};
use crate::stats::slope::trend;

/// The noise source of a series taken from the engine's generation counter.
const ENGINE_SERIES: &str = "per_second";
/// The noise source of a series that was the shard's own client's.
const CLIENT_SERIES: &str = "client_per_second";

/// The saturation test of the attempt `parts` make together (`records`: their merged request
/// records; `window_s`: the merged window); None when no shard ran the test.
pub(super) fn merge(
    parts: &[(u32, &DecodeAttempt)],
    records: &[RequestRecord],
    window_s: f64,
    name: &str,
    notes: &mut Vec<String>,
) -> Option<Saturation> {
    let base = parts.iter().find_map(|(_, a)| a.saturation.as_ref())?;
    let source = base.tps_noise.as_ref().map(|n| n.source.as_str());
    let client_series = source == Some(CLIENT_SERIES);
    if client_series && base.tps.is_some() {
        notes
            .push(format!("{name}: the saturation test's tok/s trend is left out (each shard's was its own client's)"));
    }
    let tps = if client_series { None } else { base.tps };
    let noise = match source == Some(ENGINE_SERIES) {
        true => base.tps_noise.clone(),
        false if window_s > 0.0 => stream_spread_noise(&stream_rates(records, window_s)),
        false => None,
    };
    let ttft: Vec<(f64, f64)> = records.iter().filter_map(|r| Some((r.sent_ms / 1e3, r.ttft_ms?))).collect();
    Some(judge(base.waiting, trend(&ttft), tps, noise))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::status::AttemptStatus;
    use crate::stats::saturation::{SaturationVerdict, TpsNoise, WindowSeries, saturation};

    fn record(worker: u32, sent_ms: f64, ttft_ms: f64) -> RequestRecord {
        let mut r = crate::report::tests_schema::full_attempt(1, AttemptStatus::Measured).request_samples[0].clone();
        (r.worker, r.sent_ms, r.ttft_ms, r.window_tokens) = (worker, sent_ms, Some(ttft_ms), 100);
        r
    }

    /// An attempt whose test saw `waiting` (the server's queue) and tok/s series from `source`.
    fn attempt(waiting: &[(f64, f64)], source: &str, records: Vec<RequestRecord>) -> DecodeAttempt {
        let mut a = crate::report::tests_schema::full_attempt(1, AttemptStatus::Measured);
        let tps: Vec<(f64, f64)> = (1..=8).map(|i| (f64::from(i), 500.0 + f64::from(i % 2))).collect();
        let s = WindowSeries { waiting: waiting.to_vec(), ttft: Vec::new(), tps };
        let noise = TpsNoise { source: source.into(), n: 8, mean_tps: 500.5, se_tps: 0.2 };
        a.saturation = Some(saturation(&s, Some(noise)));
        a.request_samples = records;
        a
    }

    #[test]
    fn the_servers_queue_and_every_shards_ttft_decide() {
        let queue: Vec<(f64, f64)> = (0..8).map(|i| (f64::from(i), 2.0 * f64::from(i))).collect();
        // Each shard's TTFT grows over its own requests; together they grow too.
        let rec = |w, k: u32| record(w, f64::from(k) * 1000.0, 50.0 + 40.0 * f64::from(k));
        let a = attempt(&queue, ENGINE_SERIES, (0..6).map(|k| rec(0, k)).collect());
        let b = attempt(&queue, ENGINE_SERIES, (0..6).map(|k| rec(1, k)).collect());
        let records: Vec<RequestRecord> = a.request_samples.iter().chain(&b.request_samples).cloned().collect();
        let mut notes = Vec::new();
        let s = merge(&[(0, &a), (1, &b)], &records, 8.0, "c", &mut notes).expect("a test");
        assert_eq!(s.verdict, SaturationVerdict::OverSaturated);
        assert_eq!(s.waiting, a.saturation.as_ref().unwrap().waiting, "the server's queue, read once");
        assert_eq!(s.ttft.as_ref().map(|t| t.n), Some(12), "every shard's requests");
        assert_eq!(s.tps_noise.as_ref().map(|n| n.source.as_str()), Some(ENGINE_SERIES));
        assert!(notes.is_empty());
    }

    #[test]
    fn a_clients_own_series_is_left_out_with_a_note() {
        let flat: Vec<(f64, f64)> = (0..8).map(|i| (f64::from(i), 1.0)).collect();
        let rec = |w, k: u32| record(w, f64::from(k) * 1000.0, 50.0 + f64::from(k % 2));
        let a = attempt(&flat, CLIENT_SERIES, (0..4).map(|k| rec(0, k)).collect());
        let b = attempt(&flat, CLIENT_SERIES, (0..4).map(|k| rec(1, k)).collect());
        let records: Vec<RequestRecord> = a.request_samples.iter().chain(&b.request_samples).cloned().collect();
        let mut notes = Vec::new();
        let s = merge(&[(0, &a), (1, &b)], &records, 4.0, "c", &mut notes).unwrap();
        assert_eq!((s.verdict, s.tps.is_none()), (SaturationVerdict::Steady, true));
        let noise = s.tps_noise.expect("the streams' spread");
        assert_eq!((noise.source.as_str(), noise.n), ("stream_spread", 2));
        assert_eq!(notes.len(), 1, "{notes:?}");
        let mut none = a.clone();
        none.saturation = None;
        assert!(merge(&[(0, &none)], &[], 4.0, "c", &mut notes).is_none(), "no shard ran the test");
    }
}
