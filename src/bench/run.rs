//! The bench command's driver: per server mode one bench server child, per stream count the raw
//! client then the tool (without and with the monitor), each row measured in a child process
//! of its own (src/bench/rowproc.rs) and printed as it is measured; then the long-context row.

use super::child::{ServerProcess, ServerStats};
use super::figures::{BenchReport, Client, KeyFigures, Row, header, line};
use super::raw::{self, RawCounts, RawTarget};
use super::server::Mode;
use super::sysinfo::{process_cpu, rss_kib};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::time::Instant;

/// What to run.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Stream counts, in order.
    pub streams: Vec<u32>,
    /// Server modes, in order.
    pub modes: Vec<Mode>,
    /// Measurement window of each run.
    pub window: Duration,
    /// Tokens per stream.
    pub tokens: u64,
    /// Paced mode: time between events of a stream.
    pub interval: Duration,
    /// The tool's runs per mode and streams: [`Client::Tool`] and/or [`Client::ToolMonitor`].
    pub tool_runs: Vec<Client>,
    /// The long-context row's shape; None skips it.
    pub long: Option<super::long::LongShape>,
    /// The chunk shape the mode rows' bench servers write.
    pub shape: super::shape::ChunkShape,
    /// Firehose rows: most events per HTTP frame (None: frames of about 64 KiB).
    pub events_per_frame: Option<u32>,
}

/// The `bench-server` arguments of one mode's server under `plan`.
pub(crate) fn server_args(plan: &Plan, mode: Mode) -> Vec<String> {
    let mut args = vec![
        "--mode".to_string(),
        format!("{mode:?}").to_lowercase(),
        "--interval-us".to_string(),
        plan.interval.as_micros().to_string(),
        "--tokens".to_string(),
        plan.tokens.to_string(),
        "--chunk-shape".to_string(),
        plan.shape.name().to_string(),
    ];
    if let Some(n) = plan.events_per_frame {
        args.extend(["--events-per-frame".to_string(), n.to_string()]);
    }
    args
}

/// Time the raw client runs before its window opens (connections set up, streams flowing).
fn raw_warmup(streams: u32) -> Duration {
    Duration::from_millis(500 + u64::from(streams) / 10)
}

async fn server_stats(url: &str, http: &reqwest::Client) -> anyhow::Result<ServerStats> {
    super::child::stats_at(http, url).await
}

pub(crate) fn server_us_per_token(a: &ServerStats, b: &ServerStats) -> f64 {
    let tokens = b.tokens.saturating_sub(a.tokens);
    if tokens == 0 { 0.0 } else { b.cpu_ns.saturating_sub(a.cpu_ns) as f64 / 1e3 / tokens as f64 }
}

/// A row's shared fields from a window's two readings.
pub(crate) struct Window {
    /// Window length, s.
    pub secs: f64,
    /// Tokens in it.
    pub tokens: u64,
    /// Client CPU in it.
    pub cpu: Duration,
    /// VmRSS and VmHWM at its end, KiB.
    pub rss: (u64, u64),
}

/// A row of `client` from its window `w`; `base_rss`: the idle baseline, KiB.
pub(crate) fn row(mode: Mode, streams: u32, client: Client, w: &Window, base_rss: u64) -> Row {
    let per_token = if w.tokens == 0 { 0.0 } else { w.cpu.as_secs_f64() * 1e6 / w.tokens as f64 };
    Row {
        mode,
        streams,
        client,
        window_s: w.secs,
        tokens: w.tokens,
        tokens_per_s: if w.secs > 0.0 { w.tokens as f64 / w.secs } else { 0.0 },
        cpu_us_per_token: per_token,
        cpu_cores: if w.secs > 0.0 { w.cpu.as_secs_f64() / w.secs } else { 0.0 },
        server_cpu_us_per_token: 0.0,
        lag: None,
        rss_kib_per_stream: w.rss.0.saturating_sub(base_rss) as f64 / f64::from(streams),
        rss_kib: w.rss.0,
        hwm_kib: w.rss.1,
        idle_rss_kib: Some(base_rss),
        errors: 0,
        key_to_screen: None,
        vs_raw: None,
        fidelity: None,
        whole: None,
        chunk_shape: Default::default(),
        events_per_frame: None,
    }
}

/// The raw client's row against the bench server at `url`, measured in this process.
pub(crate) async fn raw_row(
    url: &str,
    http: &reqwest::Client,
    mode: Mode,
    streams: u32,
    plan: &Plan,
) -> anyhow::Result<Row> {
    let addr: SocketAddr = url.trim_start_matches("http://").parse()?;
    let counts = Arc::new(RawCounts::default());
    let base_rss = rss_kib().unwrap_or_default().0;
    let s0 = server_stats(url, http).await?;
    let start = Instant::now() + raw_warmup(streams);
    let end = start + plan.window;
    let target = RawTarget::chat(addr, "bench", plan.tokens, mode == Mode::Paced);
    let task = tokio::spawn(raw::run(target, streams as usize, end + Duration::from_millis(100), counts.clone()));
    tokio::time::sleep_until(start).await;
    counts.lag.reset();
    counts.itl.reset();
    http.post(format!("{url}/bench/mark")).send().await?.error_for_status()?;
    let (t0, c0, k0, e0) =
        (Instant::now(), process_cpu(), counts.tokens.load(Ordering::Relaxed), counts.errors.load(Ordering::Relaxed));
    tokio::time::sleep_until(end).await;
    let (t1, c1, k1) = (Instant::now(), process_cpu(), counts.tokens.load(Ordering::Relaxed));
    let w = Window {
        secs: (t1 - t0).as_secs_f64(),
        tokens: k1.saturating_sub(k0),
        cpu: c1.saturating_sub(c0),
        rss: rss_kib().unwrap_or_default(),
    };
    let (lag, itl) = (counts.lag.figures(), counts.itl.figures(None));
    task.await?;
    let s1 = server_stats(url, http).await?;
    let mut r = row(mode, streams, Client::Raw, &w, base_rss);
    r.errors = counts.errors.load(Ordering::Relaxed).saturating_sub(e0);
    r.lag = lag.filter(|_| mode == Mode::Paced);
    r.server_cpu_us_per_token = server_us_per_token(&s0, &s1);
    if mode == Mode::Paced {
        let late = super::child::window_at(http, url).await?.late;
        r.fidelity = itl.map(|f| super::fidelity::FidelityFigures { server_late: late, ..f });
    }
    Ok(r)
}

/// The tool's row (`client`: with or without the monitor) against the bench server at `url`,
/// measured in this process.
pub(crate) async fn tool_row(
    url: &str,
    http: &reqwest::Client,
    mode: Mode,
    streams: u32,
    client: Client,
    plan: &Plan,
) -> anyhow::Result<Row> {
    let out = std::env::temp_dir().join(format!("llm-decode-bench-bench-{}-{streams}.json", std::process::id()));
    let cfg = super::tool::config(url, streams, plan.tokens, plan.window, &out);
    let base_rss = rss_kib().unwrap_or_default().0;
    let s0 = server_stats(url, http).await?;
    super::probe::enable(mode == Mode::Paced);
    let run = super::tool::run(cfg, client == Client::ToolMonitor, url).await;
    super::probe::enable(false);
    let _ = std::fs::remove_file(&out);
    let run = run?;
    let s1 = server_stats(url, http).await?;
    let (a, b) = run.window.ok_or_else(|| anyhow::anyhow!("the decode cell at {streams} streams never measured"))?;
    let (secs, tokens, tps) = run.report_window;
    // CPU as a rate over the readings, applied to the report's window (src/bench/tool.rs).
    let rate = b.cpu.saturating_sub(a.cpu).as_secs_f64() / (b.at - a.at).as_secs_f64().max(1e-3);
    let w = Window { secs, tokens, cpu: Duration::from_secs_f64(rate * secs), rss: b.rss_kib };
    let mut r = row(mode, streams, client, &w, base_rss);
    r.tokens_per_s = tps;
    r.errors = run.errors.max(b.failed);
    r.lag = super::probe::TOOL_LAG.figures().filter(|_| mode == Mode::Paced);
    r.server_cpu_us_per_token = server_us_per_token(&s0, &s1);
    if mode == Mode::Paced {
        let w = super::child::window_at(http, url).await?;
        r.fidelity = super::fidelity::figures(&w.firsts, w.late);
    }
    if client == Client::ToolMonitor {
        let mut k = run.key_ms.clone();
        k.sort_by(f64::total_cmp);
        let p50 = k.get(k.len() / 2).copied().unwrap_or(0.0);
        r.key_to_screen = Some(KeyFigures {
            count: k.len(),
            p50_ms: p50,
            max_ms: k.last().copied().unwrap_or(0.0),
            frames: run.frames,
        });
    }
    Ok(r)
}

/// How the server frames `mode`'s events under `plan`, as the table's heading says it.
fn framing(plan: &Plan, mode: Mode) -> String {
    match (mode, plan.events_per_frame) {
        (Mode::Paced, _) => format!("paced: 1 event per frame, a token every {:?} per stream", plan.interval),
        (Mode::Firehose, None) => "firehose about 64 KiB per frame".into(),
        (Mode::Firehose, Some(1)) => "firehose 1 event per frame".into(),
        (Mode::Firehose, Some(n)) => format!("firehose {n} events per frame"),
    }
}

/// Runs the plan with bench servers started from `exe`; prints each row as it is measured.
pub(crate) async fn run(plan: &Plan, exe: &Path) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    let label = |mut r: Row| {
        (r.chunk_shape, r.events_per_frame) = (plan.shape, plan.events_per_frame);
        r
    };
    for &mode in &plan.modes {
        crate::out_line!("server: {} chunks, {}", plan.shape.name(), framing(plan, mode))?;
        crate::out_line!("{}", header())?;
        let srv = ServerProcess::spawn(exe, &server_args(plan, mode))?;
        for &n in &plan.streams {
            let raw = label(super::rowproc::measure(exe, &srv.url, mode, n, Client::Raw, plan).await?);
            crate::out_line!("{}", line(&raw))?;
            if let Some(f) = super::figures::fidelity_line(&raw) {
                crate::out_line!("{f}")?;
            }
            for &client in &plan.tool_runs {
                let mut r = label(super::rowproc::measure(exe, &srv.url, mode, n, client, plan).await?);
                r.compare(&raw);
                crate::out_line!("{}", line(&r))?;
                if let Some(f) = super::figures::fidelity_line(&r) {
                    crate::out_line!("{f}")?;
                }
                rows.push(r);
            }
            rows.push(raw);
        }
    }
    Ok(rows)
}

/// The long-context row of `plan` (None when `plan.long` is None): its own firehose bench
/// server and its own client process; printed as a small section after the table.
pub(crate) async fn long_row(plan: &Plan, exe: &Path) -> anyhow::Result<Option<super::long::LongFigures>> {
    let Some(shape) = plan.long else { return Ok(None) };
    let srv = ServerProcess::spawn(exe, &["--mode".to_string(), "firehose".to_string()])?;
    let f = super::rowproc::measure_long(exe, &srv.url, shape).await?;
    crate::out_line!("{}", super::long::section(&f))?;
    Ok(Some(f))
}

/// The JSON report of `rows`.
pub(crate) fn report(plan: &Plan, rows: Vec<Row>, long_context: Option<super::long::LongFigures>) -> BenchReport {
    let settings = settings(plan);
    BenchReport { version: crate::version::VERSION, settings, rows, long_context, targets: None }
}

/// The JSON `settings` of `plan`.
pub(crate) fn settings(plan: &Plan) -> serde_json::Value {
    serde_json::json!({
        "streams": plan.streams, "modes": plan.modes, "window_s": plan.window.as_secs_f64(),
        "tokens": plan.tokens, "interval_us": plan.interval.as_micros() as u64,
        "tool_runs": plan.tool_runs, "open_file_limit": super::sysinfo::raise_nofile(),
        "cores": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "row_process": "each client row in a child process of its own",
        "long": plan.long, "chunk_shape": plan.shape, "events_per_frame": plan.events_per_frame,
    })
}
