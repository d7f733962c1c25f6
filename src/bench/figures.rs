//! The bench's figures: one row per mode x streams x client, each also as a ratio to the raw
//! baseline client of the same mode and stream count; printed as a table and written as JSON.

use super::lag::LagFigures;
use super::server::Mode;
use serde::{Deserialize, Serialize};

/// Which client a row measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Client {
    /// The raw baseline (no SSE, no JSON).
    Raw,
    /// The tool's decode cell.
    Tool,
    /// The tool's decode cell with the monitor drawing.
    ToolMonitor,
    /// `llm-decode-bench run --headless` in a process of its own, CPU over the whole streaming
    /// window (src/bench/whole.rs).
    Run,
}

impl Client {
    /// Every client, in the table's order.
    pub const ALL: [Client; 4] = [Client::Raw, Client::Tool, Client::ToolMonitor, Client::Run];

    /// The table's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Raw => "raw",
            Self::Tool => "tool",
            Self::ToolMonitor => "tool+monitor",
            Self::Run => "run",
        }
    }
}

/// Key-to-screen latency of a monitor run, ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct KeyFigures {
    /// Keys timed.
    pub count: usize,
    /// Median, ms.
    pub p50_ms: f64,
    /// Largest, ms.
    pub max_ms: f64,
    /// Frames drawn during the run.
    pub frames: u64,
}

/// The tool's figures over the raw client's (tool / raw; lower is better except tokens/s).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Ratios {
    /// Tokens/s ingested, tool / raw.
    pub tokens_per_s: f64,
    /// CPU per token, tool / raw.
    pub cpu_us_per_token: f64,
    /// Lag p99, tool / raw (paced).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lag_p99: Option<f64>,
    /// RSS per active stream, tool / raw.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rss_kib_per_stream: Option<f64>,
}

/// One measured run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Row {
    /// Server mode.
    pub mode: Mode,
    /// Concurrent streams.
    pub streams: u32,
    /// Client.
    pub client: Client,
    /// Window length, s.
    pub window_s: f64,
    /// Tokens ingested in the window.
    pub tokens: u64,
    /// Tokens ingested per second.
    pub tokens_per_s: f64,
    /// Client CPU (user + system) per token, microseconds.
    pub cpu_us_per_token: f64,
    /// Client CPU over the window, cores (CPU seconds per second).
    pub cpu_cores: f64,
    /// Server CPU per token it sent over the run, microseconds (its own process).
    pub server_cpu_us_per_token: f64,
    /// Measurement lag (paced mode): the client's timestamp minus the server's send time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lag: Option<LagFigures>,
    /// VmRSS at the end of the window less the idle baseline, per stream, KiB (each row runs in
    /// its own process, src/bench/rowproc.rs).
    pub rss_kib_per_stream: f64,
    /// VmRSS at the end of the window, KiB.
    pub rss_kib: u64,
    /// VmHWM (peak RSS of the row's own process), KiB.
    pub hwm_kib: u64,
    /// VmRSS of the row's own process before it connected (the idle baseline), KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_rss_kib: Option<u64>,
    /// Client errors (failed requests).
    pub errors: u64,
    /// Key-to-screen latency (monitor runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_to_screen: Option<KeyFigures>,
    /// Against the raw client of the same mode and streams (tool rows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_raw: Option<Ratios>,
    /// Timing fidelity against the server's send times (paced tool rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fidelity: Option<super::fidelity::FidelityFigures>,
    /// The whole streaming window of a `run` process (`run` rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole: Option<super::whole::WholeWindow>,
    /// The chunk shape the server wrote.
    #[serde(default)]
    pub chunk_shape: super::shape::ChunkShape,
    /// Firehose: most events per HTTP frame the server wrote (None: about 64 KiB frames).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events_per_frame: Option<u32>,
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { f64::NAN }
}

impl Row {
    /// Fills [`Row::vs_raw`] from the raw row.
    pub(crate) fn compare(&mut self, raw: &Row) {
        let lag = match (self.lag, raw.lag) {
            (Some(t), Some(r)) => Some(ratio(t.p99_ms, r.p99_ms)),
            _ => None,
        };
        let rss = (raw.rss_kib_per_stream > 0.0).then(|| ratio(self.rss_kib_per_stream, raw.rss_kib_per_stream));
        self.vs_raw = Some(Ratios {
            tokens_per_s: ratio(self.tokens_per_s, raw.tokens_per_s),
            cpu_us_per_token: ratio(self.cpu_us_per_token, raw.cpu_us_per_token),
            lag_p99: lag,
            rss_kib_per_stream: rss,
        });
    }
}

/// The table header.
pub(crate) fn header() -> String {
    format!(
        "{:<8} {:>7} {:<12} {:>11} {:>8} {:>7} {:>8} {:>22} {:>9} {:>6} {:>14} {:>17}",
        "mode",
        "streams",
        "client",
        "tok/s",
        "us/tok",
        "x raw",
        "srv us",
        "lag p50/p99/max ms",
        "KiB/strm",
        "errors",
        "key p50/max ms",
        "tok/s x raw"
    )
}

/// One line of the table.
pub(crate) fn line(r: &Row) -> String {
    let lag = r.lag.map_or("-".to_string(), |l| format!("{:.2}/{:.2}/{:.2}", l.p50_ms, l.p99_ms, l.max_ms));
    let key = r.key_to_screen.map_or("-".to_string(), |k| format!("{:.1}/{:.1}", k.p50_ms, k.max_ms));
    let (x_cpu, x_tps) = r.vs_raw.map_or(("-".into(), "-".into()), |v| {
        (format!("{:.1}x", v.cpu_us_per_token), format!("{:.2}x", v.tokens_per_s))
    });
    format!(
        "{:<8} {:>7} {:<12} {:>11.0} {:>8.3} {:>7} {:>8.3} {:>22} {:>9.1} {:>6} {:>14} {:>17}",
        format!("{:?}", r.mode).to_lowercase(),
        r.streams,
        r.client.name(),
        r.tokens_per_s,
        r.cpu_us_per_token,
        x_cpu,
        r.server_cpu_us_per_token,
        lag,
        r.rss_kib_per_stream,
        r.errors,
        key,
        x_tps
    )
}

/// The timing-fidelity line under a paced tool row (None without figures).
pub(crate) fn fidelity_line(r: &Row) -> Option<String> {
    let f = r.fidelity?;
    let late = f.server_late.map_or("-".to_string(), |l| format!("{:.2}/{:.2}", l.p50_ms, l.p99_ms));
    let ttft = if f.ttft_count == 0 {
        String::new()
    } else {
        let (p50, p99, n, lag) = (f.ttft_error_p50_ms, f.ttft_error_p99_ms, f.ttft_count, f.first_token_lag_p99_ms);
        format!(
            "TTFT error p50/p99 {p50:.3}/{p99:.3} ms ({n} requests, first-token lag p99 {lag:.3} ms; {}); ",
            wake_text(&f)
        )
    };
    Some(format!(
        "  fidelity: ITL p99 {:.3} ms, server's {:.3} ms: error {:+.3} ms; |ITL error| p99 {:.3} max {:.3} ms \
         ({} intervals); {ttft}server late p50/p99 {late} ms",
        f.client_itl_p99_ms,
        f.server_itl_p99_ms,
        f.itl_p99_error_ms,
        f.itl_abs_error_p99_ms,
        f.itl_abs_error_max_ms,
        f.intervals,
    ))
}

/// The server's wake-up beside the TTFT error: p50/p99 over the requests with an arrival stamp.
pub(crate) fn wake_text(f: &super::fidelity::FidelityFigures) -> String {
    if f.arrival_stamped == 0 {
        return "no arrival stamps: server TTFT from its handler".into();
    }
    format!("server wake-up p50/p99 {:.3}/{:.3} ms", f.server_wake_p50_ms, f.server_wake_p99_ms)
}

/// Whether `bytes` are figures an earlier bench wrote (a JSON object with `version`,
/// `settings` and `rows`), which `bench --json` may replace.
pub(crate) fn is_bench_json(bytes: &[u8]) -> bool {
    let Ok(serde_json::Value::Object(o)) = serde_json::from_slice(bytes) else { return false };
    ["version", "settings", "rows"].iter().all(|k| o.contains_key(*k)) && o["rows"].is_array()
}

/// The JSON the bench writes.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BenchReport {
    /// The binary's version and commit.
    pub version: &'static str,
    /// The command line's settings.
    pub settings: serde_json::Value,
    /// Every run, in order.
    pub rows: Vec<Row>,
    /// The long-context row: 128k-token prompts, send time per MB (src/bench/long.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_context: Option<super::long::LongFigures>,
    /// Issue 26's targets, met or not (`bench --targets`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<super::targets::Target>>,
}
