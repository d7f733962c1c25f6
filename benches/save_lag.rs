//! Does saving the report during a cell add client lag? Decode sessions against the simulator
//! (in process, on a runtime of its own) whose reports grow to megabytes of request samples,
//! run three ways: no saves during the cells; `Command::Save` every 100 ms (the report writer
//! thread); and, for contrast, the old path emulated: the same report cloned, serialised and
//! written every 100 ms on a task of the session's runtime.
//!
//! `cargo bench --bench save_lag` prints, per session and as the median of [`ROUNDS`] rounds,
//! the client event-loop lag (a session-wide 10 ms probe, and the worst decode attempt's own
//! probe) and the save times. The emulated old path writes the previous session's final
//! report from the first tick, so its reports are at their largest throughout.
//!
//! The session runtime has as many workers as the binary's (one per core) unless
//! `SAVE_LAG_WORKERS` says otherwise; with 1, every stall of a worker shows in the probe.

use llm_decode_bench::cell::control::{Command, RunnerEvent};
use llm_decode_bench::cell::lag;
use llm_decode_bench::config::{MetricsEndpoint, RunConfig};
use llm_decode_bench::report::json::SessionReport;
use llm_decode_bench::report::writer::ReportWriter;
use llm_decode_bench::session::{SessionHandles, start};
use llm_decode_bench::sim::params::EngineParams;
use llm_decode_bench::sim::{Cluster, SimConfig};
use llm_decode_bench::stats::{Samples, Summary};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Interval of the saves of the saving modes.
const SAVE_EVERY: Duration = Duration::from_millis(100);

/// Sessions per mode; the modes alternate, and the summary is the median.
const ROUNDS: usize = 3;

/// Interval of the session-wide lag probe (the attempts' own probe uses the same).
const PROBE_EVERY: Duration = Duration::from_millis(10);

/// How the report is saved while the cells run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Only the saves the runner does itself (end of every cell, end of session).
    NoSaves,
    /// `Command::Save` every [`SAVE_EVERY`]: the report writer thread builds and writes.
    Sink,
    /// A big report cloned, serialised and written on a runtime task every [`SAVE_EVERY`].
    OnRuntime,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::NoSaves => "no saves during cells",
            Mode::Sink => "save every 100 ms (writer thread)",
            Mode::OnRuntime => "write every 100 ms on the runtime (old path, emulated)",
        }
    }
}

/// What one session showed.
struct Outcome {
    report: SessionReport,
    /// Session-wide probe lateness, ms.
    lag: Option<Summary>,
    /// Save times, ms: `Save` sent to `Saved` heard (writer thread) or the inline write.
    saves: Samples,
    /// Saves asked for.
    asked: usize,
    /// `Saved` events heard.
    saved: usize,
}

fn config(sim: &Cluster, out: &Path) -> RunConfig {
    let r = &sim.info().replicas[0];
    RunConfig {
        metrics: vec![MetricsEndpoint { name: r.name.clone(), url: r.metrics_url.clone() }],
        ctx: vec![0, 512],
        conc: vec![16, 32, 64],
        window: Duration::from_secs(3),
        idle_timeout: Duration::from_secs(30),
        poll_interval: Duration::from_millis(50),
        out: Some(out.to_path_buf()),
        routing: Default::default(),
        decode: llm_decode_bench::config::decode::DecodeConfig {
            warmup_timeout: Duration::from_secs(20),
            settle: Duration::from_millis(200),
            burst_tokens: 64,
            max_tokens: Some(128),
            min_stream_tokens: 128,
            ..RunConfig::defaults(&r.url).decode
        },
        ..RunConfig::defaults(&r.url)
    }
}

/// Drives one session to its end, saving as `mode` asks. Spawned on the session's runtime, so
/// that the emulated old path blocks one of its workers, as the runner task did.
async fn session(mode: Mode, cfg: RunConfig, big: Option<Arc<SessionReport>>, scratch: PathBuf) -> Outcome {
    let probe_stop = CancellationToken::new();
    let probe = lag::spawn(PROBE_EVERY, probe_stop.clone(), Arc::default());
    let SessionHandles { commands, mut events, mut join, .. } = start(cfg).await.expect("preflight");
    let inline = ReportWriter::new(Some(scratch.join("inline.json")));
    let mut tick = tokio::time::interval(SAVE_EVERY);
    let (mut saves, mut asked, mut saved, mut waiting) = (Samples::new(), 0, 0, None::<Instant>);
    let report = loop {
        tokio::select! {
            r = &mut join => break r.expect("runner"),
            Some(ev) = events.recv() => {
                if matches!(ev, RunnerEvent::Saved(_)) {
                    saved += 1;
                    if let Some(t0) = waiting.take() {
                        saves.push(t0.elapsed().as_secs_f64() * 1e3);
                    }
                }
            }
            _ = tick.tick(), if mode != Mode::NoSaves => {
                asked += 1;
                match (mode, &big) {
                    (Mode::OnRuntime, Some(big)) => {
                        let t0 = Instant::now();
                        inline.write(&SessionReport::clone(big)).expect("inline write");
                        saves.push(t0.elapsed().as_secs_f64() * 1e3);
                    }
                    _ => {
                        let _ = commands.send(Command::Save);
                        waiting.get_or_insert_with(Instant::now);
                    }
                }
            }
        }
    };
    probe_stop.cancel();
    Outcome { report, lag: probe.await.expect("probe").summary(), saves, asked, saved }
}

/// The figures of one session, ms unless named otherwise.
#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    lag_p50: f64,
    lag_p99: f64,
    lag_max: f64,
    /// Worst p99 and max over the decode attempts' own probes.
    attempt_p99: f64,
    attempt_max: f64,
    save_p50: f64,
    save_p99: f64,
    save_max: f64,
    asked: usize,
    saved: usize,
    report_mb: f64,
    requests: usize,
}

impl Figures {
    fn of(o: &mut Outcome, file: &Path) -> Figures {
        let attempts: Vec<_> = o.report.decode.iter().flat_map(|d| &d.cells).flat_map(|c| &c.attempts).collect();
        let worst = |f: fn(&llm_decode_bench::stats::Summary) -> f64| {
            attempts.iter().filter_map(|a| a.client_lag_ms.as_ref().map(f)).fold(0.0, f64::max)
        };
        Figures {
            lag_p50: o.lag.map_or(0.0, |l| l.p50),
            lag_p99: o.lag.map_or(0.0, |l| l.p99),
            lag_max: o.lag.map_or(0.0, |l| l.max),
            attempt_p99: worst(|s| s.p99),
            attempt_max: worst(|s| s.max),
            save_p50: o.saves.percentile(50.0).unwrap_or(0.0),
            save_p99: o.saves.percentile(99.0).unwrap_or(0.0),
            save_max: o.saves.max().unwrap_or(0.0),
            asked: o.asked,
            saved: o.saved,
            report_mb: std::fs::metadata(file).map_or(0.0, |m| m.len() as f64 / 1e6),
            requests: attempts.iter().map(|a| a.request_samples.len()).sum(),
        }
    }

    /// The per-field median of `runs`.
    fn median(runs: &[Figures]) -> Figures {
        let mid = |f: fn(&Figures) -> f64| {
            let mut v: Samples = runs.iter().map(f).collect();
            v.percentile(50.0).unwrap_or(0.0)
        };
        Figures {
            lag_p50: mid(|f| f.lag_p50),
            lag_p99: mid(|f| f.lag_p99),
            lag_max: mid(|f| f.lag_max),
            attempt_p99: mid(|f| f.attempt_p99),
            attempt_max: mid(|f| f.attempt_max),
            save_p50: mid(|f| f.save_p50),
            save_p99: mid(|f| f.save_p99),
            save_max: mid(|f| f.save_max),
            asked: mid(|f| f.asked as f64) as usize,
            saved: mid(|f| f.saved as f64) as usize,
            report_mb: mid(|f| f.report_mb),
            requests: mid(|f| f.requests as f64) as usize,
        }
    }

    fn print(&self, what: &str) {
        println!(
            "{what}: lag p50 {:.2} p99 {:.2} max {:.2} ms | attempts p99 {:.2} max {:.2} ms | \
             saves {} asked {} written, save p50 {:.1} p99 {:.1} max {:.1} ms | {:.1} MB, {} requests",
            self.lag_p50,
            self.lag_p99,
            self.lag_max,
            self.attempt_p99,
            self.attempt_max,
            self.asked,
            self.saved,
            self.save_p50,
            self.save_p99,
            self.save_max,
            self.report_mb,
            self.requests
        );
    }
}

fn main() {
    let sim_rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("sim rt");
    let engine = EngineParams { speed: 100.0, max_num_seqs: 64, ..EngineParams::default() };
    let sim = sim_rt.block_on(Cluster::start(SimConfig { replicas: 1, engine, ..SimConfig::default() })).expect("sim");
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    let workers = std::env::var("SAVE_LAG_WORKERS").ok().and_then(|v| v.parse::<usize>().ok());
    if let Some(n) = workers {
        builder.worker_threads(n);
    }
    let rt = builder.enable_all().build().expect("session rt");
    let shown = workers.map_or_else(|| "as many as cores, like the binary".to_string(), |n| n.to_string());
    println!("session runtime workers: {shown}");
    let dir = tempfile::tempdir().expect("tempdir");
    let modes = [Mode::NoSaves, Mode::Sink, Mode::OnRuntime];
    let mut runs: Vec<Vec<Figures>> = vec![Vec::new(); modes.len()];
    let mut big = None;
    for round in 1..=ROUNDS {
        for (i, mode) in modes.into_iter().enumerate() {
            let file = dir.path().join(format!("{mode:?}-{round}.json"));
            let driver = rt.spawn(session(mode, config(&sim, &file), big.clone(), dir.path().to_path_buf()));
            let mut o = rt.block_on(driver).expect("driver");
            let f = Figures::of(&mut o, &file);
            f.print(&format!("round {round}, {}", mode.name()));
            runs[i].push(f);
            big = Some(Arc::new(o.report));
        }
    }
    println!("median of {ROUNDS} rounds:");
    for (mode, figures) in modes.into_iter().zip(&runs) {
        Figures::median(figures).print(mode.name());
    }
    sim.shutdown();
}
