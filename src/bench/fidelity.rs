//! Timing fidelity of the tool's per-token timestamps against the bench server's own send
//! times (paced rows, BENCHMARKS.md "Timing fidelity"). Through the stream reader's tap
//! (src/load/tap.rs) every token event comes with its request's send instant and the reader's
//! timestamp of its read, the same instants the request sample's marks hold. Per stream, each
//! token after the first gives a client ITL (between the reader's timestamps) and a server ITL
//! (between the two `bench_sent_unix_ns` stamps) over the same pair of tokens; each first token
//! gives the client's TTFT, matched afterwards by its stamp to the server's own time from the
//! request's arrival (the kernel's receive time of its bytes, src/bench/arrival.rs) to sending
//! that token (src/bench/marks.rs). The TTFT error is then the client's own: its send work, the
//! loopback trip and the first token's lag; the server's wake-up (arrival to handler) is
//! reported beside it.

use super::lag::{LagFigures, LagHist};
use super::marks::FirstToken;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex};
use tokio::time::Instant;

/// The previous token of a stream: the reader's timestamp and the server's stamp.
#[derive(Debug, Clone, Copy)]
struct Prev {
    at: Instant,
    sent_ns: u64,
}

/// Client and server ITLs over the same token pairs, and their per-pair difference; the raw
/// client (src/bench/raw.rs) keeps them too, as the reference of what the machine allows.
#[derive(Debug)]
pub(crate) struct ItlHists {
    client: LagHist,
    server: LagHist,
    abs_error: LagHist,
}

impl Default for ItlHists {
    fn default() -> Self {
        Self { client: fine(), server: fine(), abs_error: fine() }
    }
}

impl ItlHists {
    /// One pair of tokens: the client's interval and the server's, ns.
    pub(crate) fn record(&self, client_ns: u64, server_ns: u64) {
        self.client.record(client_ns, 0);
        self.server.record(server_ns, 0);
        self.abs_error.record(client_ns.abs_diff(server_ns), 0);
    }

    /// Empties them.
    pub(crate) fn reset(&self) {
        self.client.reset();
        self.server.reset();
        self.abs_error.reset();
    }

    /// The ITL figures (TTFT ones 0); None when no pair was counted.
    pub(crate) fn figures(&self, server_late: Option<LagFigures>) -> Option<FidelityFigures> {
        let (c, s, e) = (self.client.figures()?, self.server.figures()?, self.abs_error.figures()?);
        Some(FidelityFigures {
            intervals: c.count,
            client_itl_p99_ms: c.p99_ms,
            server_itl_p99_ms: s.p99_ms,
            itl_p99_error_ms: c.p99_ms - s.p99_ms,
            itl_abs_error_p99_ms: e.p99_ms,
            itl_abs_error_max_ms: e.max_ms,
            server_late,
            ..Default::default()
        })
    }
}

/// The fidelity probe's state.
struct Probe {
    /// Counting on (the window is open).
    on: AtomicBool,
    /// Per request (keyed by its send instant), its last token; in [`SHARDS`] maps, so that a
    /// worker preempted while holding one rarely stalls another worker's tokens.
    streams: Vec<Mutex<HashMap<Instant, Prev>>>,
    itl: ItlHists,
    /// Per first token in the window: its stamp and the client's TTFT, ns.
    firsts: Mutex<Vec<(u64, u64)>>,
    /// Per first token in the window: the reader's timestamp minus the server's send time.
    first_lag: LagHist,
}

/// Shards of the per-stream map.
const SHARDS: usize = 64;

/// The shard of a request's send instant.
fn shard(sent_at: Instant) -> usize {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(sent_at) as usize % SHARDS
}

/// 1 us buckets up to 200 ms: the targets are a tenth of a millisecond.
fn fine() -> LagHist {
    LagHist::new(1_000, 200_000)
}

static PROBE: LazyLock<Probe> = LazyLock::new(|| Probe {
    on: AtomicBool::new(false),
    streams: (0..SHARDS).map(|_| Mutex::default()).collect(),
    itl: ItlHists::default(),
    firsts: Mutex::default(),
    first_lag: fine(),
});

/// Whether an event's data is the final usage chunk (no token in it).
fn is_final_usage(data: &[u8]) -> bool {
    memchr::memmem::find(data, b"\"choices\":[]").is_some()
}

/// One token event: its stamp, the reader's timestamp as unix ns (`client_ns`), its request's
/// send instant, the reader's timestamp.
pub(crate) fn observe(data: &[u8], sent_ns: u64, client_ns: u64, sent_at: Instant, at: Instant) {
    if is_final_usage(data) {
        return;
    }
    let p = &*PROBE;
    let map = &p.streams[shard(sent_at)];
    let prev = map.lock().unwrap_or_else(|e| e.into_inner()).insert(sent_at, Prev { at, sent_ns });
    if !p.on.load(Ordering::Relaxed) {
        return;
    }
    match prev {
        None => {
            let ttft = at.saturating_duration_since(sent_at).as_nanos() as u64;
            p.firsts.lock().unwrap_or_else(|e| e.into_inner()).push((sent_ns, ttft));
            p.first_lag.record(client_ns, sent_ns);
        }
        Some(q) => {
            let client = at.saturating_duration_since(q.at).as_nanos() as u64;
            p.itl.record(client, sent_ns.saturating_sub(q.sent_ns));
        }
    }
}

/// Starts counting (the window opens): the figures so far are dropped, the streams' last
/// tokens kept (a stream already running is not new).
pub(crate) fn open() {
    let p = &*PROBE;
    p.itl.reset();
    p.first_lag.reset();
    p.firsts.lock().unwrap_or_else(|e| e.into_inner()).clear();
    p.on.store(true, Ordering::Relaxed);
}

/// Stops counting (the window closed).
pub(crate) fn close() {
    PROBE.on.store(false, Ordering::Relaxed);
}

/// Timing fidelity over a window, ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct FidelityFigures {
    /// Token pairs compared.
    pub intervals: u64,
    /// The client's ITL p99 (the reader's timestamps), ms.
    pub client_itl_p99_ms: f64,
    /// The server's ITL p99 over the same pairs (its send stamps), ms.
    pub server_itl_p99_ms: f64,
    /// Client ITL p99 minus server ITL p99, ms.
    pub itl_p99_error_ms: f64,
    /// p99 of the per-token |client ITL - server ITL|, ms.
    pub itl_abs_error_p99_ms: f64,
    /// Largest per-token |client ITL - server ITL|, ms.
    pub itl_abs_error_max_ms: f64,
    /// First tokens matched to the server's by their stamp.
    pub ttft_count: u64,
    /// Median of the client's TTFT minus the server's TTFT from the request's arrival, over the
    /// same requests, ms (from the handler's start for requests without an arrival stamp).
    pub ttft_error_p50_ms: f64,
    /// 99th percentile of it, ms.
    pub ttft_error_p99_ms: f64,
    /// Of the matched requests, those with the kernel's arrival stamp.
    #[serde(default)]
    pub arrival_stamped: u64,
    /// Median of the server's wake-up (request's arrival to its handler having it) over the
    /// stamped requests, ms: server time a user sees, not the client's error.
    #[serde(default)]
    pub server_wake_p50_ms: f64,
    /// 99th percentile of it, ms.
    #[serde(default)]
    pub server_wake_p99_ms: f64,
    /// Median of the TTFT error against the server's TTFT from its handler's start (the
    /// figure before arrival stamps: the error plus the wake-up), ms.
    #[serde(default)]
    pub ttft_error_from_handler_p50_ms: f64,
    /// 99th percentile of it, ms.
    #[serde(default)]
    pub ttft_error_from_handler_p99_ms: f64,
    /// 99th percentile of the first tokens' lag (the reader's timestamp minus the server's send
    /// time): the part of the TTFT error at its end, ms.
    #[serde(default)]
    pub first_token_lag_p99_ms: f64,
    /// The server's lateness against its schedule over the window (its own figure), ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_late: Option<LagFigures>,
}

/// One request both sides saw: the client's TTFT minus the server's, ns, and the server's
/// wake-up, ns (None: no arrival stamp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TtftMatch {
    /// Client TTFT minus server TTFT (from arrival when stamped), ns.
    pub error_ns: i64,
    /// The server's wake-up, ns.
    pub wake_ns: Option<u64>,
}

/// The requests whose first tokens both saw, matched by stamp (a stamp two requests share is
/// left out); `client`: per first token its stamp and the client's TTFT, ns.
pub(crate) fn ttft_matches(client: &[(u64, u64)], server: &[FirstToken]) -> Vec<TtftMatch> {
    let mut by_stamp: HashMap<u64, Option<&FirstToken>> = HashMap::with_capacity(server.len());
    for f in server {
        by_stamp.entry(f.sent_ns).and_modify(|v| *v = None).or_insert(Some(f));
    }
    let matched = |(stamp, ttft): &(u64, u64)| {
        let f = by_stamp.get(stamp).copied().flatten()?;
        Some(TtftMatch { error_ns: *ttft as i64 - f.server_ttft_ns as i64, wake_ns: f.wake_ns })
    };
    client.iter().filter_map(matched).collect()
}

/// The TTFT figures of matched requests (the ITL ones left at their default).
fn ttft_figures(m: &[TtftMatch]) -> FidelityFigures {
    let sorted = |mut v: Vec<i64>| {
        v.sort_unstable();
        v
    };
    let errors = sorted(m.iter().map(|x| x.error_ns).collect());
    let wakes = sorted(m.iter().filter_map(|x| x.wake_ns).map(|w| w as i64).collect());
    let from_handler = sorted(m.iter().map(|x| x.error_ns + x.wake_ns.unwrap_or(0) as i64).collect());
    FidelityFigures {
        ttft_count: m.len() as u64,
        ttft_error_p50_ms: quantile_ms(&errors, 0.5),
        ttft_error_p99_ms: quantile_ms(&errors, 0.99),
        arrival_stamped: wakes.len() as u64,
        server_wake_p50_ms: quantile_ms(&wakes, 0.5),
        server_wake_p99_ms: quantile_ms(&wakes, 0.99),
        ttft_error_from_handler_p50_ms: quantile_ms(&from_handler, 0.5),
        ttft_error_from_handler_p99_ms: quantile_ms(&from_handler, 0.99),
        ..Default::default()
    }
}

/// The value at quantile `q` of sorted `v`, ns to ms (0 when empty).
fn quantile_ms(v: &[i64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let rank = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len());
    v[rank - 1] as f64 / 1e6
}

/// The figures since [`open`], with the server's first tokens and lateness of its window.
pub(crate) fn figures(server_firsts: &[FirstToken], server_late: Option<LagFigures>) -> Option<FidelityFigures> {
    let p = &*PROBE;
    let itl = p.itl.figures(server_late)?;
    let firsts = p.firsts.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let t = ttft_figures(&ttft_matches(&firsts, server_firsts));
    Some(FidelityFigures {
        ttft_count: t.ttft_count,
        ttft_error_p50_ms: t.ttft_error_p50_ms,
        ttft_error_p99_ms: t.ttft_error_p99_ms,
        arrival_stamped: t.arrival_stamped,
        server_wake_p50_ms: t.server_wake_p50_ms,
        server_wake_p99_ms: t.server_wake_p99_ms,
        ttft_error_from_handler_p50_ms: t.ttft_error_from_handler_p50_ms,
        ttft_error_from_handler_p99_ms: t.ttft_error_from_handler_p99_ms,
        first_token_lag_p99_ms: p.first_lag.figures().map_or(0.0, |f| f.p99_ms),
        ..itl
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(sent_ns: u64, server_ttft_ns: u64, wake_ns: Option<u64>) -> FirstToken {
        FirstToken { sent_ns, server_ttft_ns, wake_ns }
    }

    #[test]
    fn ttft_matches_first_tokens_by_stamp_and_drop_shared_stamps() {
        let server = [first(10, 1_000, Some(300)), first(20, 2_000, None), first(30, 500, None), first(30, 700, None)];
        let client = [(20, 2_500), (10, 1_200), (30, 900), (40, 9_000)];
        let m = ttft_matches(&client, &server);
        let want = [TtftMatch { error_ns: 500, wake_ns: None }, TtftMatch { error_ns: 200, wake_ns: Some(300) }];
        assert_eq!(m, want, "40 unknown to the server, 30 shared");
        assert_eq!(quantile_ms(&[200, 500], 0.5), 0.0002);
        assert_eq!(quantile_ms(&[200, 500], 0.99), 0.0005);
        assert_eq!(quantile_ms(&[], 0.99), 0.0);
    }

    #[test]
    fn the_ttft_error_counts_from_the_arrival_and_the_wake_up_stands_apart() {
        // 100 requests: the client's TTFT is the server's from arrival plus i us (i = 1..=100);
        // the server woke 1 ms after the arrival, 5 ms for the last request; one has no stamp.
        let us = 1_000;
        let mut server = Vec::new();
        let mut client = Vec::new();
        for i in 1..=100u64 {
            let wake = if i == 100 { 5_000 * us } else { 1_000 * us };
            let stamped = if i == 50 { None } else { Some(wake) };
            server.push(first(i, 4_000 * us, stamped));
            client.push((i, 4_000 * us + i * us));
        }
        let f = ttft_figures(&ttft_matches(&client, &server));
        assert_eq!((f.ttft_count, f.arrival_stamped), (100, 99));
        assert!((f.ttft_error_p50_ms - 0.050).abs() < 1e-9 && (f.ttft_error_p99_ms - 0.099).abs() < 1e-9, "{f:?}");
        // 99 wake-ups: the 99th is the 5 ms one.
        assert!((f.server_wake_p50_ms - 1.0).abs() < 1e-9 && (f.server_wake_p99_ms - 5.0).abs() < 1e-9, "{f:?}");
        // From the handler: i us + 1 ms, but 0.050 ms for i = 50 (no stamp) and 5.1 ms for the last.
        assert!((f.ttft_error_from_handler_p50_ms - 1.049).abs() < 1e-9, "{f:?}");
        assert!((f.ttft_error_from_handler_p99_ms - 1.099).abs() < 1e-9, "{f:?}");
        let none = ttft_figures(&[]);
        assert_eq!((none.ttft_count, none.arrival_stamped, none.server_wake_p99_ms), (0, 0, 0.0));
    }

    #[test]
    fn intervals_pair_each_stream_s_tokens_and_firsts_count_only_new_streams() {
        let t0 = Instant::now();
        let ms = |n: u64| std::time::Duration::from_millis(n);
        let tok = br#"{"choices":[{"index":0}],"bench_sent_unix_ns":1}"#;
        // Stream a runs before the window opens; b starts inside it.
        let (a, b) = (t0, t0 + ms(1));
        observe(tok, 1_000_000_000, 1_000_500_000, a, t0 + ms(5));
        open();
        observe(tok, 1_010_000_000, 1_010_800_000, a, t0 + ms(15) + std::time::Duration::from_micros(300));
        observe(tok, 1_002_000_000, 1_002_400_000, b, t0 + ms(7));
        observe(tok, 1_012_000_000, 1_012_400_000, b, t0 + ms(17));
        observe(br#"{"choices":[],"bench_sent_unix_ns":1}"#, 1_012_000_000, 1_012_400_000, b, t0 + ms(17));
        close();
        observe(tok, 1_020_000_000, 1_020_000_000, a, t0 + ms(40));
        let server = [first(1_002_000_000, 4_000_000, Some(700_000))];
        let f = figures(&server, None).expect("figures");
        assert_eq!(f.intervals, 2, "a's second token and b's second; not the usage chunk, not after close");
        assert!((f.client_itl_p99_ms - 10.3).abs() < 0.0011, "{f:?}");
        assert!((f.server_itl_p99_ms - 10.0).abs() < 0.0011, "{f:?}");
        assert!((f.itl_abs_error_p99_ms - 0.3).abs() < 0.0011 && (f.itl_abs_error_max_ms - 0.3).abs() < 1e-9, "{f:?}");
        assert_eq!(f.ttft_count, 1, "b's first token only: a was running before the window");
        assert!((f.ttft_error_p50_ms - 2.0).abs() < 1e-9, "client 6 ms against the server's 4 ms: {f:?}");
        assert!((f.server_wake_p50_ms - 0.7).abs() < 1e-9 && f.arrival_stamped == 1, "{f:?}");
        assert!((f.ttft_error_from_handler_p99_ms - 2.7).abs() < 1e-9, "{f:?}");
        assert!((f.first_token_lag_p99_ms - 0.4).abs() < 1e-9, "b's first token read 0.4 ms after its send: {f:?}");
    }

    #[test]
    fn the_final_usage_chunk_is_no_token() {
        assert!(is_final_usage(br#"{"id":"x","choices":[],"usage":{}}"#));
        assert!(!is_final_usage(br#"{"id":"x","choices":[{"index":0}],"usage":{}}"#));
    }
}
