//! An experiment defined only here, outside the built-in registry: `oneshot` sends each cell's
//! `conc` requests at once and reports their mean end-to-end latency as its own figure. It
//! registers through the interface (`Setup` + `Experiment`, `session::start_with_setups`) and
//! runs end to end: the session and its saved report (schema-valid), the live monitor, every
//! report format, `compare` and `--baseline`. Nothing outside this file knows it.

use crate::common;

use common::{config, inproc_cluster, validate};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use llm_decode_bench::cell::attempt_loop::{AttemptLoop, PlainTally};
use llm_decode_bench::cell::context::CellEnv;
use llm_decode_bench::cell::control::Phase;
use llm_decode_bench::cell::publisher::LivePublisher;
use llm_decode_bench::cell::spec::CellSpec;
use llm_decode_bench::config::{PlanKind, RunConfig};
use llm_decode_bench::experiment::extension::{recover, section, summarize};
use llm_decode_bench::experiment::{Attempt, CellEntry, CellRun, Experiment, PlannedCell, PrepareEnv, Prepared, Setup};
use llm_decode_bench::load::live::LiveCounters;
use llm_decode_bench::load::request::{BodyOptions, BodyTemplate};
use llm_decode_bench::load::worker::{Planned, run_open_loop};
use llm_decode_bench::report::compare::{self, Better, Options, Verdict};
use llm_decode_bench::report::extension::ExtensionFigure;
use llm_decode_bench::report::formats::{RenderSettings, ReportFormat};
use llm_decode_bench::report::json::SessionReport;
use llm_decode_bench::report::kind::ExperimentKind;
use llm_decode_bench::tui::{ChannelInput, LoopOptions, run_loop};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Output tokens each request asks for.
const TOKENS: u64 = 16;

fn kind() -> ExperimentKind {
    ExperimentKind::named("oneshot").unwrap()
}

/// Its registration: nothing to prepare beyond the cells.
struct OneShotSetup;

impl Setup for OneShotSetup {
    fn plan(&self) -> Option<PlanKind> {
        None
    }

    fn prepare<'a>(&'a self, env: PrepareEnv<'a>) -> BoxFuture<'a, anyhow::Result<Prepared>> {
        let conc = env.cfg.conc.clone();
        async move { Ok(Prepared::of(Arc::new(OneShot { conc }))) }.boxed()
    }
}

/// One cell per concurrency, at ctx 0.
struct OneShot {
    conc: Vec<u32>,
}

impl Experiment for OneShot {
    fn kind(&self) -> ExperimentKind {
        kind()
    }

    fn cells(&self) -> Vec<PlannedCell> {
        let cell = |conc| PlannedCell {
            spec: CellSpec::grid(kind(), 0, conc),
            label: format!("oneshot conc={conc}"),
            skip: None,
        };
        self.conc.iter().copied().map(cell).collect()
    }

    fn planned(&self, _cfg: &RunConfig, _spec: &CellSpec) -> Option<Duration> {
        Some(Duration::from_secs(1))
    }

    fn recover(&self, report: &SessionReport, spec: &CellSpec, _label: &str) -> Vec<Attempt> {
        recover(report, spec)
    }

    fn run<'a>(&'a self, env: &'a CellEnv, cell: CellRun<'a>, cancel: &'a CancellationToken) -> BoxFuture<'a, Attempt> {
        async move { Attempt::Extension(Box::new(shoot(env, cell, cancel).await)) }.boxed()
    }

    fn report(&self, _env: &CellEnv, cells: &[&CellEntry], report: &mut SessionReport) {
        report.extensions.push(section(kind(), "One shot: every request at once", cells));
    }
}

/// `conc` requests at once; its own figure, their mean end-to-end latency.
async fn shoot(
    env: &CellEnv,
    cell: CellRun<'_>,
    cancel: &CancellationToken,
) -> llm_decode_bench::report::extension::ExtensionAttempt {
    let conc = match cell.spec.key {
        llm_decode_bench::cell::spec::CellKey::Grid { conc, .. } => conc,
        _ => 1,
    };
    let started = Instant::now();
    let opts = BodyOptions {
        endpoint: env.cfg.endpoint,
        model: env.facts.model.clone(),
        max_tokens: TOKENS,
        ignore_eos: true,
    };
    let body = BodyTemplate::new(&opts, "Say something.");
    let live = Arc::new(LiveCounters::default());
    let ctx = Arc::new(env.worker_ctx(live.clone(), TOKENS, None, Some(Duration::from_secs(30)), 0));
    let plan =
        (0..conc).map(|i| Planned { offset: Duration::ZERO, body: body.render(&format!("[{i}] ")), tag: i }).collect();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let publisher = LivePublisher::new(cell.id, cell.label.to_string(), conc);
    let mut lp = AttemptLoop::new(env, rx, live, publisher, PlainTally);
    lp.phase(Phase::Measuring, None);
    lp.run_until(run_open_loop(ctx, started, plan, tx, cancel.clone())).await;
    let (samples, _) = lp.finish();
    let e2e: Vec<f64> = samples.iter().map(|s| (s.ended_at - s.sent_at).as_secs_f64() * 1e3).collect();
    let mean = (!e2e.is_empty()).then(|| e2e.iter().sum::<f64>() / e2e.len() as f64);
    let own =
        vec![ExtensionFigure { name: "mean_e2e_ms".into(), unit: "ms".into(), better: Better::Lower, value: mean }];
    summarize(cell.attempt, started, env.since_start(started), &samples, own)
}

#[tokio::test(start_paused = true)]
async fn an_experiment_defined_in_a_test_runs_end_to_end() {
    let c = inproc_cluster(1, 2.0, |_| {});
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("oneshot.json");
    let r = &c.info().replicas[0];
    let mut cfg = config(&r.url, &r.metrics_url, &out, vec![0], vec![1, 4]);
    cfg.plans = Vec::new();
    let setups: Vec<Arc<dyn Setup>> = vec![Arc::new(OneShotSetup)];
    let h = llm_decode_bench::session::start_with_setups(cfg, c.backend(), &setups).await.expect("preflight passes");
    let (keys, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut snap = h.snapshot.clone();
    let ui = tokio::spawn(async move {
        let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
        let result = run_loop(&mut terminal, h, ChannelInput(rx), LoopOptions { fps: 30, log_widget: false }).await;
        (result, terminal)
    });
    let finished = async {
        while !snap.borrow_and_update().cells.iter().all(|c| c.attempts == 1) {
            snap.changed().await.expect("the session runs");
        }
    };
    tokio::time::timeout(Duration::from_secs(30), finished).await.expect("both cells ran");
    tokio::time::sleep(Duration::from_millis(200)).await;
    for k in ['q', 'y'] {
        let key =
            crossterm::event::KeyEvent::new(crossterm::event::KeyCode::Char(k), crossterm::event::KeyModifiers::NONE);
        keys.send(crossterm::event::Event::Key(key)).unwrap();
    }
    let (result, terminal) = tokio::time::timeout(Duration::from_secs(20), ui).await.expect("quits").unwrap();
    let (report, _) = result.expect("the loop returns the report");

    // The session and its file: one extension section, both cells measured, schema-valid.
    assert_eq!(validate(&out), report);
    let section = &report.extensions[..];
    assert_eq!(section.len(), 1, "{section:?}");
    assert_eq!(section[0].kind, "oneshot");
    let concs: Vec<u32> = section[0].cells.iter().map(|c| c.conc).collect();
    assert_eq!(concs, [1, 4]);
    for cell in &section[0].cells {
        let a = cell.attempts.last().expect("an attempt");
        assert_eq!((cell.status.as_str(), a.requests, a.error_count()), ("measured", cell.conc as u64, 0), "{a:?}");
        assert_eq!(a.output_tokens, TOKENS * cell.conc as u64, "tokens from usage");
        assert!(a.output_tps > 0.0 && a.ttft_p50_ms.is_some(), "{a:?}");
        let mean = a.figures[0].value.expect("its own figure");
        assert!(mean > a.ttft_p50_ms.unwrap(), "a request ends after its first token: {a:?}");
    }

    // The monitor drew its grid, named by the kind, and logged each attempt.
    let screen = terminal.backend().to_string();
    assert!(screen.contains("oneshot: output tok/s (ctx x load)"), "{screen}");
    assert!(screen.contains("oneshot conc=4"), "the log names the cell:\n{screen}");

    // Every report format shows it.
    for format in <ReportFormat as clap::ValueEnum>::value_variants() {
        let text = format.render(&report, RenderSettings::default());
        let shown = match format {
            ReportFormat::Text | ReportFormat::Markdown | ReportFormat::Html => {
                text.contains("One shot: every request at once")
            }
            ReportFormat::Csv => {
                text.lines().filter(|l| l.starts_with("oneshot,")).count() == 2 && text.contains("mean_e2e_ms=")
            }
            // vLLM's result fields have no place for another experiment's figures.
            ReportFormat::Vllm => serde_json::from_str::<serde_json::Value>(&text).is_ok(),
        };
        assert!(shown, "{} does not show the section:\n{text}", format.as_str());
        if matches!(format, ReportFormat::Text | ReportFormat::Html) {
            assert!(text.contains("mean_e2e_ms"), "{} names the own figure:\n{text}", format.as_str());
        }
    }

    // compare matches its cells on the whole key, its own figure included, and a slower run
    // regresses its headline.
    let opts = Options { threshold_pct: 5.0, percentiles: llm_decode_bench::stats::percentile_list("50,99").unwrap() };
    let same = compare::compare(("a", &report), ("b", &report), &opts);
    assert_eq!(same.cells.len(), 2, "{same:?}");
    assert!(same.cells.iter().all(|c| c.figures.iter().any(|f| f.name == "mean_e2e_ms")), "{same:?}");
    assert_eq!(same.verdict, Verdict::NoChange);
    let mut slower = report.clone();
    slower.extensions[0].cells[1].attempts[0].output_tps /= 2.0;
    let worse = compare::compare(("a", &report), ("b", &slower), &opts);
    assert_eq!((worse.verdict, worse.regressions), (Verdict::Regression, 1), "{worse:?}");
    let cell = worse.cells.iter().find(|c| c.key.conc == Some(4)).unwrap();
    assert_eq!(cell.key.kind, kind());

    // --baseline lays its deltas on the matching cell only.
    let mut annotated = slower.clone();
    let b = llm_decode_bench::report::baseline::Baseline::of("base.json", report.clone());
    llm_decode_bench::report::baseline::annotate::annotate(&mut annotated, &b);
    let deltas: Vec<usize> = annotated.extensions[0].cells.iter().map(|c| c.baseline.len()).collect();
    assert!(deltas.iter().all(|n| *n > 0), "{deltas:?}");
    let tps = |c: usize| {
        annotated.extensions[0].cells[c].baseline.iter().find(|f| f.name == "output_tok_s").unwrap().delta_pct
    };
    assert_eq!(tps(0), Some(0.0));
    assert!((tps(1).unwrap() + 50.0).abs() < 1e-6, "{:?}", tps(1));
}
