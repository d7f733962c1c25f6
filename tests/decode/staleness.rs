//! A replica killed mid-window and restarted (the simulator's `set_replica_down`), on tokio's
//! paused clock: the report records its stale interval, flags the attempt that lost it and says
//! so in its warnings, the Prometheus deltas stay non-negative across the restart, and the
//! monitor's replicas panel shows the replica stale with its age while it is down.

use crate::common;

use common::{config, inproc_cluster, validate};
use llm_decode_bench::cell::control::{Phase, RunnerEvent};
use llm_decode_bench::config::MetricsEndpoint;
use llm_decode_bench::session::start_with;
use llm_decode_bench::tui::App;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::time::Duration;

/// Longest the test may run, in virtual time.
const LIMIT: Duration = Duration::from_secs(600);

fn screen_text(app: &App) -> String {
    let mut terminal = Terminal::new(TestBackend::new(160, 48)).expect("test terminal");
    terminal.draw(|f| f.render_widget(app, f.area())).expect("draws");
    let buf = terminal.backend().buffer().clone();
    let rows = (0..buf.area.height).map(|y| (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect::<String>());
    rows.collect::<Vec<_>>().join("\n")
}

#[tokio::test(start_paused = true)]
async fn a_replica_down_mid_window_is_stale_flagged_and_shown() {
    let cluster = inproc_cluster(2, 1.0, |_| {});
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.json");
    let (gw, r) = (&cluster.info().gateway, cluster.replicas());
    let mut cfg = config(&gw.url, &r[0].metrics_url, &out, vec![256], vec![4]);
    cfg.metrics = r.iter().map(|r| MetricsEndpoint { name: r.name.clone(), url: r.metrics_url.clone() }).collect();
    cfg.window = Duration::from_secs(10);
    cfg.decode.settle = Duration::from_millis(100);
    let mut h = start_with(cfg, cluster.backend()).await.expect("preflight passes");
    let measuring = async {
        while let Some(ev) = h.events.recv().await {
            if ev == (RunnerEvent::Phase { cell: 0, phase: Phase::Measuring }) {
                return;
            }
        }
        panic!("the session ended before measuring");
    };
    tokio::time::timeout(LIMIT, measuring).await.expect("the cell measures");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(cluster.set_replica_down(1, true));
    tokio::time::sleep(Duration::from_secs(5)).await;

    let metrics = h.metrics.as_ref().expect("polling").borrow().clone();
    let down = metrics.replica("sim-b").expect("sim-b polled");
    assert!(down.stale && down.last_error.is_some(), "{down:?}");
    let mut app = App::new(h.snapshot.borrow().clone(), tokio::time::Instant::now());
    app.set_live(h.live.borrow().clone());
    app.set_metrics(metrics);
    let text = screen_text(&app);
    let row = text.lines().find(|l| l.contains("sim-b~")).unwrap_or_else(|| panic!("no stale row:\n{text}"));
    assert!(row.contains("stale 5s") || row.contains("stale 4s"), "{row}");

    assert!(cluster.set_replica_down(1, false));
    let report = tokio::time::timeout(LIMIT, h.join).await.expect("the session ends").expect("runner");
    let file = validate(&out);
    assert_eq!(file.replica_stale, report.replica_stale);
    let stale = &report.replica_stale["sim-b"];
    assert_eq!(stale.len(), 1, "{stale:?}");
    let lost_s = stale[0].to_s.expect("sim-b came back") - stale[0].from_s;
    assert!((4.0..6.5).contains(&lost_s), "{stale:?}");
    assert!(!report.replica_stale.contains_key("sim-a"), "sim-a always answered");
    let attempt = report.decode.as_ref().unwrap().cells[0].attempts.last().unwrap();
    let loss = attempt.target_lost.iter().find(|l| l.replica == "sim-b").expect("the attempt is flagged");
    assert!((4.0..6.5).contains(&loss.lost_s), "{loss:?}");
    assert!(report.warnings.iter().any(|w| w.contains("target lost") && w.contains("sim-b")), "{:?}", report.warnings);
    assert!(report.warnings.iter().any(|w| w.contains("replica sim-b: metrics polls failed")), "{:?}", report.warnings);
    if let Some(p) = &attempt.prometheus {
        assert!(p.generation_tokens_delta.is_none_or(|d| d >= 0.0), "{p:?}");
    }
}
