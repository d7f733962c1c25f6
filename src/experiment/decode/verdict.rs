//! The verdicts of a decode attempt (pure): was it held below its concurrency by a limit of
//! the engine, and by which one, or did its requests just turn over (docs/protocol.md §8.6);
//! do the client's and the server's token counts agree.
//!
//! A running average below the requested concurrency is not a limit by itself: short requests
//! finishing and restarting leave slots empty between them with nothing waiting. A limit needs
//! evidence in the window: KV usage near full or preemptions (`kv`), or requests waiting
//! throughout while the running count stays flat (`max_num_seqs`, inferred: vLLM's metrics do
//! not expose the cap). Anything else that held streams back is `unknown`.
//!
//! A shard (`run --shard i/N`) compares like with like: the server's running count holds every
//! shard's streams, so it is compared with the cell's planned concurrency over all shards; the
//! shard's own streaming and completed counts with its own slice.

use crate::report::status::CapacityLimit;

/// KV usage at or above this fraction counts as full.
pub(crate) const KV_NEAR_FULL: f64 = 0.95;
/// Mean waiting requests over the window at or above this count as a sustained queue.
pub(crate) const WAITING_SUSTAINED: f64 = 0.5;
/// A running count whose peak stays within this of its mean counts as flat, requests.
pub(crate) const RUNNING_FLAT: f64 = 1.0;
/// Client and server token counts further apart than this fraction disagree.
pub(crate) const COUNTS_TOLERANCE: f64 = 0.05;

/// What the window showed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Evidence {
    /// Requested streams: this shard's own (its slice of the cell; the whole cell unsharded).
    pub requested: u32,
    /// The cell's planned streams over every shard, when sharded (None: `requested` is the
    /// whole cell): what the server-wide running count is compared with.
    pub planned: Option<u32>,
    /// Streams that had their first token when the window opened.
    pub streaming_at_start: u32,
    /// The warmup hit its timeout.
    pub warmup_timed_out: bool,
    /// Mean running requests over the window (Prometheus, all replicas).
    pub running_avg: Option<f64>,
    /// Sum over the replicas of their highest running count in the window.
    pub running_peak: Option<f64>,
    /// Mean waiting requests over the window.
    pub waiting_avg: Option<f64>,
    /// Highest KV usage of any replica in the window, fraction 0..1.
    pub kv_usage_peak: Option<f64>,
    /// Preemptions in the window.
    pub preemptions: Option<f64>,
    /// Requests the server completed during the attempt.
    pub completed: u64,
}

/// The capacity verdict of an attempt.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CapacityVerdict {
    /// Held below requested by a limit, or warmup timed out (the `*` of the tables).
    pub capacity_limited: bool,
    /// Which limit, when limited.
    pub limit: Option<CapacityLimit>,
    /// Below requested without a limit, with requests completing: turnover.
    pub turnover: bool,
}

/// The limit the window's metrics show, if any.
fn limit_shown(e: &Evidence) -> Option<CapacityLimit> {
    let kv_full = e.kv_usage_peak.is_some_and(|k| k >= KV_NEAR_FULL);
    if kv_full || e.preemptions.is_some_and(|p| p > 0.0) {
        return Some(CapacityLimit::Kv);
    }
    if e.waiting_avg.is_some_and(|w| w >= WAITING_SUSTAINED) {
        let flat = matches!((e.running_avg, e.running_peak), (Some(a), Some(p)) if p - a < RUNNING_FLAT);
        return Some(if flat { CapacityLimit::MaxNumSeqs } else { CapacityLimit::Unknown });
    }
    None
}

/// Judges an attempt that ran a window.
pub(crate) fn capacity(e: &Evidence) -> CapacityVerdict {
    let below = |x: f64, conc: u32| {
        let conc = f64::from(conc);
        x < conc - 0.5 && x < 0.95 * conc
    };
    // The server's running count is server-wide; the client's streaming count is this shard's.
    let server_wide = e.planned.unwrap_or(e.requested);
    let is_below = match e.running_avg {
        Some(running) => below(running, server_wide),
        None => below(f64::from(e.streaming_at_start), e.requested),
    };
    // Without Prometheus the admission rule already needed streams held back for longer than
    // a prefill takes: that is evidence, of an unknown limit, unless the requests turned over
    // (as many finished as were requested), when streams between requests explain the gap.
    let turned_over = e.completed >= u64::from(e.requested);
    let shown = match e.running_avg {
        Some(_) => limit_shown(e),
        None => (is_below && !turned_over).then_some(CapacityLimit::Unknown),
    };
    let capacity_limited = e.warmup_timed_out || (is_below && shown.is_some());
    CapacityVerdict {
        capacity_limited,
        limit: capacity_limited.then(|| shown.unwrap_or(CapacityLimit::Unknown)),
        turnover: is_below && !capacity_limited && e.completed > 0,
    }
}

/// True when the client's and the server's token counts of the window disagree by more than
/// [`COUNTS_TOLERANCE`], or only one of them counted any. Unknown server counts never disagree.
pub(crate) fn counts_disagree(client_tokens: u64, server_tokens: Option<f64>) -> bool {
    let Some(server) = server_tokens.filter(|s| s.is_finite()) else { return false };
    let client = client_tokens as f64;
    match (client > 0.0, server > 0.0) {
        (false, false) => false,
        (true, true) => (client / server - 1.0).abs() > COUNTS_TOLERANCE,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(running: f64, peak: f64, waiting: f64) -> Evidence {
        Evidence {
            requested: 8,
            streaming_at_start: 8,
            running_avg: Some(running),
            running_peak: Some(peak),
            waiting_avg: Some(waiting),
            kv_usage_peak: Some(0.04),
            preemptions: Some(0.0),
            completed: 40,
            ..Evidence::default()
        }
    }

    #[test]
    fn turnover_without_a_queue_is_not_a_limit() {
        // docs/protocol.md §8.6: 256-token prompts, 128 output tokens, conc 8: running 5/8, waiting 0.
        let v = capacity(&ev(5.0, 8.0, 0.0));
        assert_eq!(v, CapacityVerdict { capacity_limited: false, limit: None, turnover: true });
    }

    #[test]
    fn a_sustained_queue_behind_a_flat_running_count_is_the_sequence_cap() {
        let v = capacity(&Evidence { requested: 12, ..ev(4.0, 4.0, 8.0) });
        assert_eq!(
            v,
            CapacityVerdict { capacity_limited: true, limit: Some(CapacityLimit::MaxNumSeqs), turnover: false }
        );
        let moving = capacity(&Evidence { requested: 12, ..ev(4.0, 7.0, 2.0) });
        assert_eq!(moving.limit, Some(CapacityLimit::Unknown));
    }

    #[test]
    fn kv_near_full_or_preemptions_is_kv() {
        let full = Evidence { kv_usage_peak: Some(0.97), ..ev(5.0, 6.0, 3.0) };
        assert_eq!(capacity(&full).limit, Some(CapacityLimit::Kv));
        let preempted = Evidence { preemptions: Some(2.0), ..ev(5.0, 6.0, 0.0) };
        assert_eq!(capacity(&preempted).limit, Some(CapacityLimit::Kv));
        let not_below = Evidence { kv_usage_peak: Some(0.97), ..ev(8.0, 8.0, 0.0) };
        assert!(!capacity(&not_below).capacity_limited, "nothing was held back");
    }

    #[test]
    fn a_timed_out_warmup_is_limited_even_without_evidence() {
        let v = capacity(&Evidence { warmup_timed_out: true, ..ev(8.0, 8.0, 0.0) });
        assert_eq!(v, CapacityVerdict { capacity_limited: true, limit: Some(CapacityLimit::Unknown), turnover: false });
    }

    #[test]
    fn without_prometheus_streams_held_back_are_an_unknown_limit() {
        let e = Evidence { requested: 8, streaming_at_start: 4, ..Evidence::default() };
        assert_eq!(capacity(&e).limit, Some(CapacityLimit::Unknown));
        assert!(!capacity(&Evidence { streaming_at_start: 8, ..e }).capacity_limited);
    }

    /// `--max-tokens 16` at 1k context, no Prometheus: most streams are in prefill at any
    /// instant, but as many requests finished as were asked for, so no limit is claimed
    /// (issue 23: such cells read `*?` though nothing held them back).
    #[test]
    fn without_prometheus_turned_over_requests_are_not_a_limit() {
        let e = Evidence { requested: 4, streaming_at_start: 1, completed: 4, ..Evidence::default() };
        assert_eq!(capacity(&e), CapacityVerdict { capacity_limited: false, limit: None, turnover: true });
        let e = Evidence { completed: 3, ..e };
        assert_eq!(capacity(&e).limit, Some(CapacityLimit::Unknown), "fewer finished than asked");
    }

    /// A shard of 4 at conc 8 sends 2 streams; the server runs every shard's. Running 8 of the
    /// cell's 8 is no cap (it used to read `(8/2)`), running 5 with a queue is one (it used to
    /// read 5 >= 2, not below).
    #[test]
    fn a_shard_compares_the_servers_running_count_with_the_cells_conc() {
        let shard = |running: f64, waiting: f64| Evidence {
            requested: 2,
            planned: Some(8),
            streaming_at_start: 2,
            completed: 0,
            ..ev(running, running, waiting)
        };
        assert_eq!(capacity(&shard(8.0, 0.0)), CapacityVerdict::default(), "all 8 ran");
        let capped = capacity(&shard(5.0, 3.0));
        assert_eq!(
            capped,
            CapacityVerdict { capacity_limited: true, limit: Some(CapacityLimit::MaxNumSeqs), turnover: false }
        );
        // Without Prometheus the shard's own streams are compared with its own slice.
        let own = Evidence { running_avg: None, running_peak: None, waiting_avg: None, ..shard(0.0, 0.0) };
        assert!(!capacity(&own).capacity_limited, "both of its 2 streamed");
        let held = Evidence { streaming_at_start: 1, ..own };
        assert_eq!(capacity(&held).limit, Some(CapacityLimit::Unknown), "1 of its 2 streamed");
    }

    #[test]
    fn counts_disagree_beyond_five_percent() {
        assert!(!counts_disagree(1000, Some(1030.0)));
        assert!(counts_disagree(1000, Some(1100.0)));
        assert!(counts_disagree(1000, Some(0.0)), "the server counted nothing");
        assert!(counts_disagree(0, Some(500.0)));
        assert!(!counts_disagree(0, Some(0.0)));
        assert!(!counts_disagree(1000, None), "unknown is not a disagreement");
    }
}
