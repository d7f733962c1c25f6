//! Issue 21 item 5 in the monitor: a model id, a replica name (a Prometheus `pod` label), a
//! gateway counter's label and a logged server text, each carrying terminal escapes, are drawn
//! escaped (`\x1b`, `\u{9b}`), and no cell of the frame holds a control character or a bidi
//! override; the log line the panel and `--log-file` get is escaped the same way.

use super::fixtures::routing_imbalance;
use crate::cell::control::RunnerEvent;
use crate::metrics::CounterDelta;
use crate::text_safe::is_unsafe;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::sync::Arc;

const EVIL: &str = "evil\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{202e}x";

/// The routing fixture with [`EVIL`] as the model, a replica, a gateway label and a log line.
fn hostile_app() -> super::App {
    let mut app = routing_imbalance();
    let mut s = (*app.session).clone();
    s.model = EVIL.into();
    app.set_session(Arc::new(s));
    let mut live = app.live.clone();
    live.replicas[0].name = format!("pod-{EVIL}");
    live.routing.push(CounterDelta {
        name: "aibrix_gateway_requests_total".into(),
        labels: [("pod".to_string(), EVIL.to_string())].into(),
        delta: 7.0,
        reset: false,
    });
    app.set_live(live);
    let _ = app.on_runner_event(&RunnerEvent::Log(format!("warning: the server said {EVIL}")));
    app
}

fn frame(app: &super::App, width: u16, height: u16) -> Vec<String> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("terminal");
    terminal.draw(|f| f.render_widget(app, f.area())).expect("draws");
    let buf = terminal.backend().buffer();
    let cells = buf.content().iter().map(|c| c.symbol());
    assert!(cells.clone().all(|s| !s.chars().any(is_unsafe)), "a raw control character in a cell");
    (0..height).map(|y| (0..width).map(|x| buf[(x, y)].symbol().to_string()).collect()).collect()
}

#[test]
fn server_text_is_drawn_escaped_and_no_cell_holds_a_control_character() {
    let app = hostile_app();
    for (w, h) in [(160, 48), (100, 30)] {
        let rows = frame(&app, w, h);
        let screen = rows.join("\n");
        assert!(rows[0].contains("model evil\\x1b]0;pwned\\x07"), "the header shows the escapes:\n{screen}");
        // The header, and the log line (wrapped at its words).
        assert!(screen.matches("evil\\x1b]0;pwned").count() >= 2, "the log shows the escapes:\n{screen}");
    }
    let wide = frame(&app, 200, 60).join("\n");
    assert!(wide.contains("requests evil\\x1b]0;pwned"), "the gateway label is escaped:\n{wide}");
    assert!(
        wide.contains("pod-evil\\x1…1m\\u{202e}x    3"),
        "the replica name is escaped (cut in the middle):\n{wide}"
    );
}

#[test]
fn the_log_line_for_the_panel_and_the_log_file_is_escaped() {
    let app = hostile_app();
    let line = super::logging::event_line(&RunnerEvent::Log(EVIL.into()), &app.session).expect("a line");
    assert_eq!(line, "evil\\x1b]0;pwned\\x07\\x1b[2J\\u{9b}31m\\u{202e}x");
}
