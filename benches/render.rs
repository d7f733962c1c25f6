//! Render cost of a full frame of a busy monitor: a routing phase with 8 prompt families,
//! 2-4 replicas (and a 64-replica fleet with 96 families) and a 500-line log, drawn into a `TestBackend` (200x60, and 80x24 for scale).
//!
//! `cargo bench --bench render` prints min / median / p95 / p99 per frame in ms (target: < 4 ms).

use llm_decode_bench::tui::{App, fixtures, logging};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::time::{Duration, Instant};

const FRAMES: usize = 2000;
const WARMUP: usize = 50;

fn measure(mut app: App, width: u16, height: u16) -> Vec<Duration> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test terminal");
    let base = app.now;
    let mut times = Vec::with_capacity(FRAMES);
    for i in 0..FRAMES + WARMUP {
        // Move the clock so the session clock and progress bars change every frame.
        app.now = base + Duration::from_millis(50 * i as u64);
        let t = Instant::now();
        terminal.draw(|f| f.render_widget(&app, f.area())).expect("draws");
        if i >= WARMUP {
            times.push(t.elapsed());
        }
    }
    times.sort();
    times
}

fn report(what: &str, t: &[Duration]) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let pick = |q: f64| ms(t[((t.len() - 1) as f64 * q).round() as usize]);
    println!(
        "{what}: min {:.3} ms  median {:.3} ms  p95 {:.3} ms  p99 {:.3} ms  ({} frames)",
        ms(t[0]),
        pick(0.5),
        pick(0.95),
        pick(0.99),
        t.len()
    );
}

fn main() {
    for (replicas, w, h) in [(2, 200, 60), (4, 200, 60), (2, 80, 24)] {
        let t = measure(fixtures::routing_with(replicas, 500), w, h);
        report(&format!("{w}x{h} routing phase, 8 families, {replicas} replicas, 500 log lines (app log)"), &t);
    }
    // A fleet: 64 replicas, 96 families, 65 router counters (condensed rows, the others column).
    for (w, h) in [(160, 48), (80, 24)] {
        let mut app = fixtures::fleet(64);
        for i in 0..496 {
            app.log(format!("r1-phase-{i}: measured: 184.6 tok/s good 94/96  TTFT p50 310 ms"), false);
        }
        let t = measure(app, w, h);
        report(&format!("{w}x{h} routing phase, 96 families, 64 replicas, 500 log lines (app log)"), &t);
    }
    // The live session's log panel: the tui-logger widget over 500 tracing events.
    let _logs = logging::install(None).expect("logging");
    for i in 0..500 {
        tracing::info!(target: logging::TARGET, "r1-phase-{i}: measured: 184.6 tok/s good 94/96  TTFT p50 310 ms");
    }
    tui_logger::move_events();
    let mut app = fixtures::routing_with(4, 4);
    app.log_widget = Some(tui_logger::TuiWidgetState::new());
    let t = measure(app, 200, 60);
    report("200x60 routing phase, 8 families, 4 replicas, 500 log lines (tui-logger widget)", &t);
}
