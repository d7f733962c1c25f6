//! Open-loop decode cells and the live load knob against the simulator: arrivals reach their
//! rate and never exceed the in-flight cap; `+` / `-` in the monitor (scripted keys on a
//! test backend) walk a closed-loop cell through load levels that the report keeps, each with
//! its action and its own figures; a knob step sent as a command moves an open-loop rate.

use crate::common;

use common::{config, inproc_cluster, validate};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use llm_decode_bench::cell::control::{Command, Knob, LiveAttempt, Phase};
use llm_decode_bench::config::Rate;
use llm_decode_bench::load::sample::RecordedOutcome;
use llm_decode_bench::report::json::{DecodeAttempt, SessionReport};
use llm_decode_bench::report::tables::render_text;
use llm_decode_bench::session::start_with;
use llm_decode_bench::tui::{ChannelInput, LoopOptions, run_loop};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// Waits until `pred` holds for the channel's value (or fails the test after 20 s).
async fn until<T>(rx: &mut watch::Receiver<T>, what: &str, pred: impl Fn(&T) -> bool) {
    let wait = async {
        while !pred(&rx.borrow_and_update()) {
            rx.changed().await.expect("the session is still running");
        }
    };
    tokio::time::timeout(Duration::from_secs(20), wait).await.unwrap_or_else(|_| panic!("timed out waiting: {what}"));
}

/// Most requests of `a` in flight at once, from their records (an end frees its slot before
/// a start at the same instant).
fn peak_in_flight(a: &DecodeAttempt) -> usize {
    let mut edges: Vec<(f64, i32)> = Vec::new();
    for r in &a.request_samples {
        edges.push((r.sent_ms, 1));
        edges.push((r.sent_ms + r.e2e_ms - 1e-6, -1));
    }
    edges.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
    let (mut now, mut peak) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        peak = peak.max(now);
    }
    peak as usize
}

fn attempt_at(report: &SessionReport, rate: Rate) -> &DecodeAttempt {
    let cells = &report.decode.as_ref().expect("a decode section").cells;
    let at = |c: &&llm_decode_bench::report::json::DecodeCell| c.rate == Some(rate) && c.ctx == 0;
    let cell = cells.iter().find(at).unwrap_or_else(|| panic!("a cell at {rate}"));
    cell.attempts.last().expect("an attempt")
}

#[tokio::test(start_paused = true)]
async fn open_loop_cells_reach_their_rate_under_the_cap_and_the_knob_moves_the_rate() {
    let c = inproc_cluster(1, 25.0, |cfg| {
        cfg.engine.max_num_seqs = 16;
        cfg.engine.max_model_len = 8192;
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("open.json");
    let r = &c.info().replicas[0];
    // The 8k row cannot fit the context with its output: skipped before any request.
    let mut cfg = config(&r.url, &r.metrics_url, &out, vec![0, 8192], vec![3]);
    cfg.rates = vec![Rate::PerSecond(20.0), Rate::Inf, Rate::PerSecond(8.0)];
    cfg.decode.max_tokens = Some(32);
    cfg.window = Duration::from_secs(2);
    let mut h = start_with(cfg, c.backend()).await.expect("preflight passes");
    until(&mut h.live, "the third cell measuring", |l| l.cell == Some(2) && l.phase == Phase::Measuring).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    h.commands.send(Command::Knob(Knob::Up)).unwrap();
    let report = tokio::time::timeout(Duration::from_secs(60), h.join).await.expect("finishes").unwrap();
    assert_eq!(validate(&out), report, "the file holds the final report and passes the schema");
    assert!(report.complete);

    let poisson = attempt_at(&report, Rate::PerSecond(20.0));
    assert_eq!(poisson.rate, Some(Rate::PerSecond(20.0)));
    let achieved = poisson.achieved_rate.expect("achieved rate");
    eprintln!("20/s offered: {achieved:.2}/s sent; inf: {:?}", attempt_at(&report, Rate::Inf).achieved_rate);
    assert!((15.0..=25.0).contains(&achieved), "20/s offered, {achieved}/s sent");
    assert!(poisson.levels.is_empty(), "no knob, no levels");
    let inf = attempt_at(&report, Rate::Inf);
    assert!(inf.achieved_rate.unwrap() > 40.0, "inf sends as fast as the cap frees: {:?}", inf.achieved_rate);
    for a in [poisson, inf] {
        let peak = peak_in_flight(a);
        assert!((1..=3).contains(&peak), "in flight peaked at {peak}, cap 3");
        assert!(a.window_tokens > 0 && a.request_outcomes.get(&RecordedOutcome::Completed).copied().unwrap_or(0) > 10);
    }
    assert_eq!(peak_in_flight(inf), 3, "inf keeps the cap full");

    let turned = attempt_at(&report, Rate::PerSecond(8.0));
    let loads: Vec<_> = turned.levels.iter().map(|l| (l.load.rate, l.action.as_str())).collect();
    assert_eq!(loads, [(Some(Rate::PerSecond(8.0)), "planned"), (Some(Rate::PerSecond(10.0)), "operator +")]);
    assert!(turned.levels[1].ended_s - turned.levels[1].started_s >= 1.9, "a full window after the step");
    assert!(report.actions.iter().any(|a| a.action == "knob +" && a.cell.as_deref() == Some("ctx=0 conc=3 rate=8/s")));

    for cell in report.decode.as_ref().unwrap().cells.iter().filter(|c| c.ctx == 8192) {
        assert_eq!(cell.status.as_str(), "skipped", "{:?}", cell.rate);
        let why = cell.timeout_reason.as_deref().unwrap_or_default();
        assert!(why.contains("plus 32 output tokens") && why.contains("deficit 96 tokens"), "{why}");
        assert!(cell.attempts.is_empty(), "nothing sent");
    }
    let text = render_text(&report, true, false);
    for col in ["20/s", "inf", "8/s"] {
        assert!(text.contains(col), "{col} column in\n{text}");
    }
}

/// Behind sglang-router, whose `/v1/models` names no context length (docs/protocol.md §8.4), the
/// client cannot fit an 8k prompt to the 8k model: the server refuses it, and the open-loop
/// arrivals stop at the first refusals instead of sending every request into a 400.
#[tokio::test(start_paused = true)]
async fn open_loop_arrivals_stop_at_a_refusal_the_client_could_not_foresee() {
    use llm_decode_bench::sim::gateway::{GatewayMode, RouterPolicy};
    let c = inproc_cluster(1, 25.0, |cfg| {
        cfg.engine.max_model_len = 8192;
        cfg.gateway_mode = GatewayMode::SglangRouter;
        cfg.router_policy = RouterPolicy::RoundRobin;
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("refused.json");
    let r = &c.info().replicas[0];
    let mut cfg = config(&c.info().gateway.url, &r.metrics_url, &out, vec![8192], vec![3]);
    cfg.model = Some(c.info().model.clone());
    cfg.rates = vec![Rate::PerSecond(20.0), Rate::Inf];
    cfg.decode.max_tokens = Some(32);
    cfg.window = Duration::from_secs(2);
    let report = tokio::time::timeout(
        Duration::from_secs(60),
        start_with(cfg, c.backend()).await.expect("preflight passes").join,
    )
    .await
    .expect("finishes")
    .unwrap();
    assert_eq!(report.target.max_model_len, None, "sglang-router names no context length");
    for cell in &report.decode.as_ref().unwrap().cells {
        let a = cell.attempts.last().expect("sent");
        let sent: u64 = a.request_outcomes.values().sum();
        assert_eq!(cell.status.as_str(), "errored", "{:?}", cell.rate);
        assert!((1..=6).contains(&sent), "{:?}: the refusals stop the arrivals, {sent} sent", cell.rate);
    }
}

fn press(keys: &mpsc::UnboundedSender<Event>, c: char) {
    keys.send(Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))).expect("the loop reads keys");
}

async fn levels(live: &mut watch::Receiver<LiveAttempt>, n: usize) {
    until(live, &format!("{n} levels"), |l| l.levels.len() == n).await;
    // Let the level run long enough for its figures.
    tokio::time::sleep(Duration::from_millis(700)).await;
}

// On tokio's paused clock with the in-process simulator, so the figures of each level are the
// engine's own and no load on the machine can cap a level.
#[tokio::test(start_paused = true)]
async fn scripted_plus_plus_minus_walks_the_load_and_the_report_keeps_each_level() {
    let c = inproc_cluster(1, 1.0, |cfg| cfg.engine.max_num_seqs = 16);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("knob.json");
    let r = &c.info().replicas[0];
    let mut cfg = config(&r.url, &r.metrics_url, &out, vec![0], vec![2]);
    cfg.window = Duration::from_millis(1200);
    let h = start_with(cfg, c.backend()).await.expect("preflight passes");
    let (mut snap, mut live) = (h.snapshot.clone(), h.live.clone());
    let (keys, rx) = mpsc::unbounded_channel();
    let ui = tokio::spawn(async move {
        let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
        let result = run_loop(&mut terminal, h, ChannelInput(rx), LoopOptions { fps: 30, log_widget: false }).await;
        (result, terminal)
    });
    until(&mut live, "measuring", |l| l.cell == Some(0) && l.phase == Phase::Measuring).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    press(&keys, '+');
    levels(&mut live, 2).await;
    press(&keys, '+');
    levels(&mut live, 3).await;
    let screen = {
        // The panel's curve while the third level runs (the loop draws at 30 fps).
        tokio::time::sleep(Duration::from_millis(100)).await;
        live.borrow().levels.iter().map(|p| p.load.clone()).collect::<Vec<_>>()
    };
    assert_eq!(screen, ["2", "3", "4"]);
    press(&keys, '-');
    until(&mut snap, "the cell measured", |s| s.current.is_none() && s.cells[0].attempts == 1).await;
    press(&keys, 'q');
    press(&keys, 'y');
    let (result, terminal) = tokio::time::timeout(Duration::from_secs(20), ui).await.expect("quits").unwrap();
    let (report, _) = result.expect("the loop returns the report");
    assert_eq!(validate(&out), report);

    let a = &report.decode.as_ref().unwrap().cells[0].attempts[0];
    assert_eq!(a.status.as_str(), "measured");
    let walk: Vec<_> = a.levels.iter().map(|l| (l.load.conc, l.action.as_str())).collect();
    assert_eq!(walk, [(Some(2), "planned"), (Some(3), "operator +"), (Some(4), "operator +"), (Some(3), "operator -")]);
    let tps: Vec<f64> = a.levels.iter().map(|l| l.tok_s).collect();
    eprintln!("levels 2, 3, 4, 3 streams: {tps:.0?} tok/s");
    assert!(tps[0] < tps[1] && tps[1] < tps[2], "tok/s rises with load below capacity: {tps:?}");
    assert!(tps[3] < tps[2], "and falls back: {tps:?}");
    for l in &a.levels {
        assert!(l.ended_s > l.started_s && l.requests > 0 && l.ttft_ms.is_some(), "{l:?}");
    }
    assert!(a.levels.windows(2).all(|w| (w[0].ended_s - w[1].started_s).abs() < 1e-9), "levels abut");
    assert_eq!(a.aggregate_tps, a.levels[0].tok_s, "the headline is the planned level");
    assert!((a.window_s - (a.levels[0].ended_s - a.levels[0].started_s)).abs() < 0.01);
    let knobs: Vec<&str> = report.actions.iter().map(|x| x.action.as_str()).filter(|x| x.starts_with("knob")).collect();
    assert_eq!(knobs, ["knob +", "knob +", "knob -"]);
    let screen = terminal.backend().to_string();
    assert!(screen.contains("operator: load knob + on ctx=0 conc=2"), "the log names the step:\n{screen}");
}
