//! Flags of `bench-server` (hidden: the bench instrument's server, BENCHMARKS.md) and `bench`.

use crate::bench::server::Mode;
use crate::bench::shape::ChunkShape;
use clap::Args;
use std::net::IpAddr;

/// The most tokens of a bench stream or long-context prompt.
const MAX_TOKENS: u64 = 1 << 24;

/// A bench window: a duration of at least a second (shorter ones measure start-up, not the client).
fn window(s: &str) -> Result<std::time::Duration, String> {
    let d = crate::units::parse_duration(s)?;
    match d >= std::time::Duration::from_secs(1) {
        true => Ok(d),
        false => Err(format!("`{s}`: a bench window must be at least 1s")),
    }
}

/// A long-context prompt length, tokens, at most [`MAX_TOKENS`].
fn long_tokens(s: &str) -> Result<usize, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n <= MAX_TOKENS => Ok(n as usize),
        _ => Err(format!("`{s}` is not a token count from 0 to {MAX_TOKENS}")),
    }
}

/// `bench-server`: the firehose / paced streaming server of the bench instrument.
#[derive(Debug, Clone, Args)]
pub struct BenchServerArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Port to listen on (0: a free port; the first line on stdout names it).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// `firehose`: events as fast as the client reads; `paced`: one event every --interval-us per stream.
    #[arg(long, value_enum, default_value_t = Mode::Firehose)]
    pub mode: Mode,
    /// Paced mode: time between two events of one stream, microseconds, at most a minute (tokio's timer has 1 ms granularity).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=60_000_000))]
    pub interval_us: u64,
    /// Tokens of an answer when the request names no `max_tokens`, tokens (at most 16777216).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=MAX_TOKENS))]
    pub tokens: u64,
    /// Model id listed by `/v1/models`.
    #[arg(long, default_value = "bench")]
    pub model: String,
    /// `max_model_len` listed by `/v1/models`, tokens.
    #[arg(long, default_value_t = 131_072)]
    pub max_model_len: u64,
    /// Firehose mode: bytes per HTTP frame (whole events, at least one; a frame also ends at
    /// --events-per-frame), bytes (at most 64 MiB).
    #[arg(long, default_value_t = 65_536, value_parser = clap::value_parser!(u64).range(1..=64 << 20))]
    pub batch_bytes: u64,
    /// Chunk shape of chat answers: `bench` (the bench's own, every event stamped with its send
    /// time) or `vllm` (vLLM's exact chunks: role chunk, uuid ids, no send time).
    #[arg(long, value_enum, default_value_t = ChunkShape::Bench)]
    pub chunk_shape: ChunkShape,
    /// Firehose mode: most SSE events per HTTP frame, events (1: as uvicorn writes; at most
    /// 1000000); a frame also ends at --batch-bytes. Unset: --batch-bytes alone sizes frames.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub events_per_frame: Option<u32>,
    /// Exit when stdin reaches its end (a parent that spawned the server with a pipe and died).
    #[arg(long)]
    pub until_stdin_closes: bool,
}

/// Which clients `bench` runs with the monitor drawing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MonitorRuns {
    /// The tool without the monitor only.
    Off,
    /// The tool with the monitor drawing only.
    On,
    /// Both.
    Both,
}

/// `bench`: the firehose bench (BENCHMARKS.md): per mode and stream count, the raw baseline
/// client and the tool's real client path against the bench server in its own process.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Stream counts to run, in order, streams (at most what the open-file limit allows).
    #[arg(long, value_delimiter = ',', default_value = "1,64,1024,10000", value_parser = clap::value_parser!(u32).range(1..))]
    pub streams: Vec<u32>,
    /// Server modes to run: firehose (throughput and CPU), paced (measurement lag).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "firehose,paced")]
    pub modes: Vec<Mode>,
    /// Measurement window of each run, at least 1s.
    #[arg(long, value_parser = window, default_value = "5s")]
    pub window: std::time::Duration,
    /// Tokens per stream (one per event), tokens (at most 16777216).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=MAX_TOKENS))]
    pub tokens: u64,
    /// Paced mode: time between two events of one stream, microseconds (1 ms to a minute).
    #[arg(long, default_value_t = 50_000, value_parser = clap::value_parser!(u64).range(1000..=60_000_000))]
    pub interval_us: u64,
    /// Run the tool with the monitor drawing into a 200x60 TestBackend at 20 frames/s (`on`), without (`off`), or both.
    #[arg(long, value_enum, default_value_t = MonitorRuns::Both)]
    pub monitor: MonitorRuns,
    /// Chunk shape the bench server writes: `bench` (its own, stamped with send times) or `vllm`
    /// (vLLM's exact chunks; paced rows then measure no lag).
    #[arg(long, value_enum, default_value_t = ChunkShape::Bench)]
    pub chunk_shape: ChunkShape,
    /// Firehose rows: most SSE events per HTTP frame the bench server writes, events (1: as
    /// uvicorn writes; at most 1000000). Unset: frames of about 64 KiB.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub events_per_frame: Option<u32>,
    /// Also run `llm-decode-bench run --headless` as users run it, in a process of its own, per
    /// mode and stream count, and report its CPU over the whole streaming window (first to last
    /// token the server wrote, warmup included) as the `run` row.
    #[arg(long)]
    pub whole_window: bool,
    /// Run exactly what issue 26's targets table needs (firehose with vLLM's chunks at 16 and 1
    /// events per frame, 64 and 1,024 streams, raw, tool and `run` rows; paced 10 ms streams at
    /// 256 and 1,024 with the monitor drawing), then print the table; takes --window and --json.
    #[arg(long, conflicts_with_all = ["streams", "modes", "tokens", "interval_us", "monitor", "chunk_shape",
        "events_per_frame", "whole_window", "long_tokens", "long_streams", "long_rounds"])]
    pub targets: bool,
    /// Where to write the JSON figures (checked before the bench starts); an existing file is
    /// replaced only when it holds earlier figures of the bench, or with --overwrite.
    #[arg(long, default_value = "bench.json")]
    pub json: std::path::PathBuf,
    /// Let --json replace any existing file.
    #[arg(long)]
    pub overwrite: bool,
    /// Long-context row: prompt tokens per request (about 4 bytes each; 0 skips the row), tokens (at most 16777216).
    #[arg(long, default_value_t = 131_072, value_parser = long_tokens)]
    pub long_tokens: usize,
    /// Long-context row: concurrent streams, streams.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..100_000))]
    pub long_streams: u64,
    /// Long-context row: counted rounds of one request per stream (one more opens the connections).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..10_000))]
    pub long_rounds: u64,
    /// Internal: measure this one client row (MODE:STREAMS:CLIENT) in this process against
    /// --server and print it as JSON (the bench runs each row so, src/bench/rowproc.rs).
    #[arg(long, hide = true, value_parser = crate::bench::rowproc::parse_row, requires = "server")]
    pub row: Option<crate::bench::rowproc::RowSpec>,
    /// Internal: measure the long-context row (STREAMS:TOKENS:ROUNDS) in this process against
    /// --server and print it as JSON.
    #[arg(long, hide = true, value_parser = crate::bench::rowproc::parse_long, requires = "server", conflicts_with = "row")]
    pub long_row: Option<crate::bench::long::LongShape>,
    /// Internal: base URL of the running bench server a --row or --long-row child measures against.
    #[arg(long, hide = true)]
    pub server: Option<String>,
}
