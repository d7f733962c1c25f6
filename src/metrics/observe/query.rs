//! The PromQL an observer (`run --observe`) sends: per-cell figures summed over shards and
//! per-shard health, all over the client series of docs/metrics.md, picked by
//! `--client-selector`.

/// Prefix of every client series (docs/metrics.md, "Series").
pub const PREFIX: &str = "llm_decode_bench_";

/// Quantiles shown for TTFT, ITL and TPOT.
pub const QUANTILES: [f64; 2] = [0.5, 0.99];

/// The TTFT quantile the monitor's live panel shows beside the median.
pub const TTFT_P90: f64 = 0.9;

/// The three histograms of docs/metrics.md, by their name after [`PREFIX`] and before `_seconds`.
pub const HISTOGRAMS: [Latency; 3] = [Latency::Ttft, Latency::Itl, Latency::Tpot];

/// One of the client's latency histograms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Latency {
    /// `llm_decode_bench_ttft_seconds`: time to first token.
    Ttft,
    /// `llm_decode_bench_itl_seconds`: time between tokens.
    Itl,
    /// `llm_decode_bench_tpot_seconds`: time per output token of a request.
    Tpot,
}

impl Latency {
    /// The short name used in series names and labels (`ttft`, `itl`, `tpot`).
    pub fn name(self) -> &'static str {
        match self {
            Latency::Ttft => "ttft",
            Latency::Itl => "itl",
            Latency::Tpot => "tpot",
        }
    }
}

/// What one query asks; the answer of each is an instant vector.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ask {
    /// Output tokens per second over the rate window, summed over shards, by cell.
    TokensPerSecond,
    /// Output tokens received so far, summed over shards, by cell.
    Tokens,
    /// Requests sent so far, summed over shards, by cell.
    Started,
    /// Requests the server finished so far, summed over shards, by cell.
    Completed,
    /// Failed requests so far, summed over shards, by cell and kind.
    Errors,
    /// Streams past their first token now, summed over shards, by cell.
    Running,
    /// Requests sent and not ended now, summed over shards, by cell.
    InFlight,
    /// Shards running an attempt of the cell now, by cell.
    ActiveShards,
    /// A latency quantile over the rate window from the buckets summed over shards, by cell.
    Quantile(Latency, f64),
    /// Each shard's heartbeat (seconds since the epoch), by shard and session.
    Heartbeat,
    /// Each shard's `session_finished`, by shard.
    Finished,
    /// Whether any cell runs on each shard (`max` of `cell_active`), by shard.
    ShardActive,
}

/// The queries of one poll, built once from the selector and the rate window.
#[derive(Debug, Clone, PartialEq)]
pub struct Queries {
    /// Label matchers without braces, e.g. `job="shards",session="s-1"`.
    pub selector: String,
    /// Range of `rate(...)`, whole seconds (at least 1).
    pub window_s: u64,
}

impl Queries {
    /// Queries over `selector` (matchers without braces) with a rate window of `window_s` seconds.
    pub fn new(selector: &str, window_s: u64) -> Queries {
        Queries { selector: selector.to_string(), window_s: window_s.max(1) }
    }

    /// `llm_decode_bench_<name>{<selector>}`.
    pub fn series(&self, name: &str) -> String {
        format!("{PREFIX}{name}{{{}}}", self.selector)
    }

    /// The PromQL of `ask`.
    pub fn promql(&self, ask: Ask) -> String {
        let w = self.window_s;
        match ask {
            Ask::TokensPerSecond => format!("sum by (cell) (rate({}[{w}s]))", self.series("output_tokens_total")),
            Ask::Tokens => format!("sum by (cell) ({})", self.series("output_tokens_total")),
            Ask::Started => format!("sum by (cell) ({})", self.series("requests_started_total")),
            Ask::Completed => format!("sum by (cell) ({})", self.series("requests_completed_total")),
            Ask::Errors => format!("sum by (cell, kind) ({})", self.series("request_errors_total")),
            Ask::Running => format!("sum by (cell) ({})", self.series("streams_running")),
            Ask::InFlight => format!("sum by (cell) ({})", self.series("requests_in_flight")),
            Ask::ActiveShards => format!("sum by (cell) ({})", self.series("cell_active")),
            Ask::Quantile(l, q) => format!(
                "histogram_quantile({q}, sum by (le, cell) (rate({}[{w}s])))",
                self.series(&format!("{}_seconds_bucket", l.name()))
            ),
            Ask::Heartbeat => format!("max by (shard, session) ({})", self.series("heartbeat_timestamp_seconds")),
            Ask::Finished => format!("max by (shard) ({})", self.series("session_finished")),
            Ask::ShardActive => format!("max by (shard) ({})", self.series("cell_active")),
        }
    }

    /// Every query of one poll, in a fixed order.
    pub fn all() -> Vec<Ask> {
        let mut asks = vec![
            Ask::TokensPerSecond,
            Ask::Tokens,
            Ask::Started,
            Ask::Completed,
            Ask::Errors,
            Ask::Running,
            Ask::InFlight,
            Ask::ActiveShards,
            Ask::Heartbeat,
            Ask::Finished,
            Ask::ShardActive,
        ];
        asks.extend(HISTOGRAMS.iter().flat_map(|&l| QUANTILES.iter().map(move |&q| Ask::Quantile(l, q))));
        // The monitor's live panel shows TTFT p50/p90, as a session's own does.
        asks.push(Ask::Quantile(Latency::Ttft, TTFT_P90));
        asks
    }
}

/// The rate window for a scrape interval: four scrapes (so `rate` always has two samples or
/// more), at least 2 s, whole seconds.
pub fn rate_window_s(scrape_interval_s: f64) -> u64 {
    (4.0 * scrape_interval_s).ceil().max(2.0) as u64
}
