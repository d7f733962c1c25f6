//! The tool's real client path in process: a `run` session of one closed-loop decode cell
//! (ctx 0, `streams` streams) against the bench server, through the library as the binary runs
//! it, optionally with the monitor's event loop drawing into a `TestBackend` (src/bench/screen.rs).
//! Figures are taken over the cell's measurement window: the first and the last live update
//! inside it (CPU time, tokens and RSS read at each).

use super::screen::{KeyProbe, TimedBackend};
use super::sysinfo::{process_cpu, rss_kib};
use crate::cell::control::{LiveAttempt, Phase};
use crate::config::{MetricsEndpoint, PlanKind, RunConfig};
use crossterm::event::{Event, KeyCode, KeyEvent};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// One reading inside the window.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reading {
    /// When.
    pub at: Instant,
    /// Process CPU time then.
    pub cpu: Duration,
    /// Failed requests of the attempt.
    pub failed: u64,
    /// VmRSS, VmHWM, KiB.
    pub rss_kib: (u64, u64),
}

impl Reading {
    fn now(live: &LiveAttempt) -> Self {
        Self {
            at: Instant::now(),
            cpu: process_cpu(),
            failed: live.totals.failed,
            rss_kib: rss_kib().unwrap_or_default(),
        }
    }
}

/// What a tool run measured: the window's first and last readings, key latencies, frames.
#[derive(Debug, Clone)]
pub(crate) struct ToolRun {
    /// First and last reading inside the window.
    pub window: Option<(Reading, Reading)>,
    /// Failed requests and error kinds over the whole cell.
    pub errors: u64,
    /// The report's window: length (s), tokens in it, tok/s.
    pub report_window: (f64, u64, f64),
    /// Key-to-screen latencies, ms (monitor runs).
    pub key_ms: Vec<f64>,
    /// Frames drawn (monitor runs).
    pub frames: u64,
}

/// The session: one decode cell of `streams` streams of `tokens` tokens for `window`.
pub(crate) fn config(url: &str, streams: u32, tokens: u64, window: Duration, out: &std::path::Path) -> RunConfig {
    RunConfig {
        plans: vec![PlanKind::Decode],
        metrics: vec![MetricsEndpoint { name: "bench".into(), url: format!("{url}/metrics") }],
        ctx: vec![0],
        conc: vec![streams],
        window,
        idle_timeout: Duration::from_secs(30),
        // The window opens after a fresh metrics round: a short poll keeps that wait short.
        poll_interval: Duration::from_millis(250),
        out: Some(out.to_path_buf()),
        decode: crate::config::decode::DecodeConfig {
            // Firehose streams end and restart all the time, so "every stream has its first token"
            // rarely holds at one instant: the window opens at this timeout instead.
            warmup_timeout: Duration::from_secs(2) + Duration::from_millis(u64::from(streams)),
            settle: Duration::from_millis(300),
            max_tokens: Some(tokens),
            min_stream_tokens: tokens,
            ..RunConfig::defaults(url).decode
        },
        ..RunConfig::defaults(url)
    }
}

/// Follows the live view: the first reading inside the window and the first after it. The
/// window opens before its first update (after a metrics round), so CPU is read as a rate over
/// these two readings and divided by the report's tok/s of the whole window.
/// At the window's open the bench server at `server` is marked (`POST /bench/mark`), so its
/// lateness and first tokens are of the window too.
async fn follow(mut live: watch::Receiver<LiveAttempt>, server: String) -> Option<(Reading, Reading)> {
    let mut first: Option<Reading> = None;
    while live.changed().await.is_ok() {
        let l = live.borrow_and_update().clone();
        match (l.phase, first) {
            (Phase::Measuring, None) => {
                first = Some(Reading::now(&l));
                super::probe::TOOL_LAG.reset();
                super::fidelity::open();
                let mark = format!("{server}/bench/mark");
                tokio::spawn(async move {
                    let http = crate::net::client_builder().no_proxy().build().ok()?;
                    http.post(mark).send().await.ok()
                });
            }
            (Phase::Measuring, Some(_)) => {}
            (_, Some(a)) => {
                super::probe::enable(false);
                super::fidelity::close();
                return Some((a, Reading::now(&l)));
            }
            _ => {}
        }
    }
    None
}

/// Sends `?` every 500 ms while the window runs, each once the previous one was drawn; drops
/// the loop's input (so the loop ends with the runner) when the window is over.
async fn press_keys(
    keys: mpsc::UnboundedSender<Event>,
    probe: Arc<Mutex<KeyProbe>>,
    mut live: watch::Receiver<LiveAttempt>,
) {
    let (mut open, mut seen) = (false, false);
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        tick.tick().await;
        if live.has_changed().is_err() {
            break;
        }
        let phase = live.borrow_and_update().phase;
        seen |= phase == Phase::Measuring;
        if seen && phase != Phase::Measuring {
            break;
        }
        let mut p = probe.lock().unwrap_or_else(|e| e.into_inner());
        if phase != Phase::Measuring || p.waiting() {
            continue;
        }
        open = !open;
        p.sent(open);
        drop(p);
        if keys.send(Event::Key(KeyEvent::from(KeyCode::Char('?')))).is_err() {
            break;
        }
    }
}

/// Runs the session; with `monitor`, the monitor's loop draws it at 20 frames per second.
/// `server`: the bench server's base URL.
pub(crate) async fn run(cfg: RunConfig, monitor: bool, server: &str) -> anyhow::Result<ToolRun> {
    let handles = crate::session::start(cfg).await?;
    let mut follower = tokio::spawn(follow(handles.live.clone(), server.to_string()));
    let probe = Arc::new(Mutex::new(KeyProbe::default()));
    let report = if monitor {
        let (tx, rx) = mpsc::unbounded_channel();
        let keys = tokio::spawn(press_keys(tx, probe.clone(), handles.live.clone()));
        // The window's end (or the live view's) closes the loop's input, even if the key task
        // missed the window between its ticks.
        let window = follower;
        follower = tokio::spawn(async move {
            let w = window.await.ok().flatten();
            keys.abort();
            w
        });
        let mut terminal = ratatui::Terminal::new(TimedBackend::new(200, 60, probe.clone()))?;
        let opts = crate::tui::LoopOptions { fps: 20, log_widget: false };
        let input = crate::tui::ChannelInput(rx);
        // The loop returns once the runner is done and the input is closed.
        let (report, _) = crate::tui::run_loop(&mut terminal, handles, input, opts).await?;
        report
    } else {
        let mut events = handles.events;
        let drain = tokio::spawn(async move { while events.recv().await.is_some() {} });
        let report = handles.join.await?;
        drain.abort();
        report
    };
    let window = follower.await?;
    let attempts: Vec<_> = report.decode.iter().flat_map(|d| &d.cells).flat_map(|c| &c.attempts).collect();
    let errors = attempts.iter().map(|a| a.error_count).sum();
    let report_window = attempts.last().map_or((0.0, 0, 0.0), |a| (a.window_s, a.window_tokens, a.aggregate_tps));
    let p = probe.lock().unwrap_or_else(|e| e.into_inner());
    Ok(ToolRun { window, errors, report_window, key_ms: p.latencies_ms.clone(), frames: p.frames })
}
