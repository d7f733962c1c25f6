//! Full-screen snapshots of the monitor at 80x24, 100x30 and 160x48, drawn from fixed states
//! (`llm_decode_bench::tui::fixtures`) into a `TestBackend`.

use insta::assert_snapshot;
use llm_decode_bench::tui::{App, Mode, fixtures};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn draw(app: &App, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test terminal");
    terminal.draw(|f| f.render_widget(app, f.area())).expect("draws");
    terminal
}

macro_rules! screens {
    ($($name:ident => $fixture:expr;)*) => {$(
        mod $name {
            use super::*;

            #[test]
            fn at_80x24() {
                assert_snapshot!(draw(&$fixture, 80, 24).backend());
            }

            #[test]
            fn at_100x30() {
                assert_snapshot!(draw(&$fixture, 100, 30).backend());
            }

            #[test]
            fn at_160x48() {
                assert_snapshot!(draw(&$fixture, 160, 48).backend());
            }
        }
    )*};
}

screens! {
    warming => fixtures::warming();
    measuring => fixtures::measuring();
    paused => fixtures::paused();
    done_with_skips => fixtures::done_with_skips();
    routing_imbalance => fixtures::routing_imbalance();
    replica_down => fixtures::replica_down();
    knee => fixtures::knee();
    limit_causes => fixtures::limit_causes();
    errored_detail => fixtures::errored_detail();
    finished_routing => fixtures::finished_routing();
    conversation_running => fixtures::conversation_running();
    slo_search_running => fixtures::slo_search_running();
}

#[test]
fn a_finished_slo_search_shows_its_closed_bracket() {
    assert_snapshot!(draw(&fixtures::slo_search_done(), 160, 48).backend());
}

#[test]
fn a_finished_conversation_keeps_its_final_turns() {
    assert_snapshot!(draw(&fixtures::conversation_done(), 160, 48).backend());
}

#[test]
fn a_repeated_cell_shows_which_run_is_running() {
    let app = fixtures::repeated_runs();
    let terminal = draw(&app, 160, 48);
    let screen = format!("{:?}", terminal.backend());
    assert!(screen.contains("Live: ctx=16k conc=4 · run 2/3"), "{screen}");
    assert_snapshot!(terminal.backend());
    assert_snapshot!("a_repeated_cell_shows_which_run_is_running_at_80x24", draw(&app, 80, 24).backend());
}

#[test]
fn knob_walk_curve_in_the_live_panel() {
    assert_snapshot!(draw(&fixtures::knob_walk(), 160, 48).backend());
}

#[test]
fn knob_walk_curve_in_the_compact_live_panel() {
    assert_snapshot!(draw(&fixtures::knob_walk(), 100, 30).backend());
}

#[test]
fn too_small_terminal_gets_a_message() {
    assert_snapshot!(draw(&fixtures::measuring(), 60, 20).backend());
}

#[test]
fn help_overlay() {
    let mut app = fixtures::measuring();
    app.mode = Mode::Help;
    assert_snapshot!(draw(&app, 160, 48).backend());
}

#[test]
fn help_scrolled_to_the_panel_legends_at_80x24() {
    use llm_decode_bench::tui::Action;
    let mut app = fixtures::measuring();
    app.mode = Mode::Help;
    draw(&app, 80, 24);
    for _ in 0..40 {
        app.update(Action::Move(llm_decode_bench::tui::Dir::Down));
    }
    let screen = draw(&app, 80, 24).backend().to_string();
    assert!(screen.contains("Replicas panel") || screen.contains("Routing panel"), "{screen}");
    assert_snapshot!(screen);
}

#[test]
fn detail_of_a_capacity_limited_cell() {
    let mut app = fixtures::done_with_skips();
    app.mode = Mode::Detail;
    assert_snapshot!(draw(&app, 160, 48).backend());
}

#[test]
fn detail_of_a_routing_phase() {
    let mut app = fixtures::routing_imbalance();
    app.selected = Some(11);
    app.mode = Mode::Detail;
    assert_snapshot!(draw(&app, 160, 48).backend());
}

#[test]
fn quit_asks_first() {
    let mut app = fixtures::measuring();
    app.mode = Mode::ConfirmQuit;
    assert_snapshot!(draw(&app, 80, 24).backend());
}

#[test]
fn busy_routing_phase_at_200x60() {
    assert_snapshot!(draw(&fixtures::routing_with(4, 500), 200, 60).backend());
}

#[test]
fn help_overlay_at_80x24() {
    let mut app = fixtures::paused();
    app.mode = Mode::Help;
    assert_snapshot!(draw(&app, 80, 24).backend());
}

#[test]
fn a_finished_routing_phase_shows_its_final_owners() {
    let mut app = fixtures::routing_imbalance();
    let mut session = (*app.session).clone();
    session.current = None;
    session.cells[21].status = llm_decode_bench::session::state::CellStatus::Pending;
    app.set_session(std::sync::Arc::new(session));
    app.set_live(Default::default());
    app.selected = Some(11);
    app.follow = false;
    assert_snapshot!(draw(&app, 160, 48).backend());
}

#[test]
fn the_live_log_widget_wraps_at_spaces() {
    let _logs = llm_decode_bench::tui::logging::install(None).expect("logger");
    let line =
        "r1-hot90-random: measured: 201.7 tok/s good 12/12  TTFT p50 5 ms  ITL p50 0.4 ms  TPOT p50 0.5 ms  errors 0";
    tracing::info!(target: "session", "{line}");
    tui_logger::move_events();
    let mut app = fixtures::measuring();
    app.log_widget = Some(tui_logger::TuiWidgetState::new());
    let terminal = draw(&app, 80, 24);
    let buf = terminal.backend().buffer();
    let rows: Vec<String> = (0..buf.area.height)
        .map(|y| (0..buf.area.width).map(|x| buf[(x, y)].symbol().to_string()).collect::<String>())
        .collect();
    let log: Vec<&str> =
        rows.iter().skip_while(|r| !r.contains("Log")).skip(1).map(|r| r.trim_matches('│').trim()).collect();
    let text = log.join(" ");
    for phrase in ["201.7 tok/s", "TTFT p50 5 ms", "ITL p50 0.4 ms", "TPOT p50 0.5 ms", "errors 0"] {
        assert!(text.contains(phrase), "{phrase:?} broken across lines: {log:#?}");
    }
}

#[test]
fn the_goodput_slo_and_good_counts_are_on_screen() {
    let app = fixtures::measuring_with_slo();
    let terminal = draw(&app, 160, 48);
    let screen: String = {
        let buf = terminal.backend().buffer();
        let w = buf.area.width as usize;
        let cells: Vec<&str> = buf.content.iter().map(|c| c.symbol()).collect();
        cells.chunks(w).map(|row| row.concat()).collect::<Vec<_>>().join("\n")
    };
    assert!(screen.contains("goodput SLO: TTFT ≤ 2000 ms, TPOT ≤ 50 ms"), "{screen}");
    assert!(screen.contains("good 3/4 (4 running)"), "{screen}");
    assert_snapshot!(terminal.backend());
}

/// A headline as long as `10595.0 (7/8)*seq` is whole on the matrix at 160 columns: its cause
/// is the part a user needs (the monitor kept only `10595.0`).
#[test]
fn a_long_headline_keeps_its_limit_cause() {
    let screen = draw(&fixtures::limit_causes(), 160, 48).backend().to_string();
    assert!(screen.contains("10595.0 (7/8)*seq"), "{screen}");
}

#[test]
fn live_goodput_of_running_streams_at_80x24() {
    let terminal = draw(&fixtures::measuring_with_slo(), 80, 24);
    let screen = terminal.backend().to_string();
    assert!(screen.contains("good 3/4"), "{screen}");
    assert_snapshot!(terminal.backend());
}

/// Where `text` starts on the screen, first match from the top.
fn find(buf: &ratatui::buffer::Buffer, text: &str) -> Option<(u16, u16)> {
    let width = buf.area.width;
    (0..buf.area.height).find_map(|y| {
        let row: String = (0..width).map(|x| buf[(x, y)].symbol().to_string()).collect();
        let at = row.find(text)?;
        Some((row[..at].chars().count() as u16, y))
    })
}

#[test]
fn a_baseline_overlaid() {
    use ratatui::style::Color;
    let app = fixtures::measuring_with_baseline();
    let t = draw(&app, 160, 48);
    assert_snapshot!(t.backend());
    let buf = t.backend().buffer();
    // 0 x 1 ran 3.2% faster than its baseline (green), 0 x 2 11% slower (red).
    let (x, y) = find(buf, "+3.2%").expect("a better cell");
    assert_eq!(buf[(x, y)].fg, Color::LightGreen);
    let (x, y) = find(buf, "-11%").expect("a worse cell");
    assert_eq!(buf[(x, y)].fg, Color::LightRed);
    assert!(find(buf, fixtures::BASELINE_PATH).is_some(), "the header names the baseline");
    // The running cell, measuring at 96.4 tok/s against 116.3: -17% in the matrix and live panel.
    let live = find(buf, "vs base tok/s -17% TTFT").expect("the live panel's deltas");
    assert_eq!(buf[(live.0 + 14, live.1)].fg, Color::LightRed);
}

#[test]
fn a_baseline_overlaid_at_80x24() {
    assert_snapshot!(draw(&fixtures::measuring_with_baseline(), 80, 24).backend());
}

#[test]
fn detail_against_a_baseline() {
    let mut app = fixtures::measuring_with_baseline();
    app.selected = Some(3);
    app.follow = false;
    app.mode = Mode::Detail;
    let t = draw(&app, 160, 48);
    assert_snapshot!(t.backend());
    assert!(find(t.backend().buffer(), "vs baseline sessions/20260830T090000Z.json: tok/s -11% TTFT").is_some());
}

/// Fleets: 16 and 64 replicas (sim-p owns the hot family), at 160x48 and 80x24.
mod fleet {
    use super::*;
    use llm_decode_bench::tui::app::Action;
    use llm_decode_bench::tui::fleet::FleetKey;

    #[test]
    fn of_16_at_160x48() {
        assert_snapshot!(draw(&fixtures::fleet(16), 160, 48).backend());
    }

    #[test]
    fn of_16_at_80x24() {
        assert_snapshot!(draw(&fixtures::fleet(16), 80, 24).backend());
    }

    #[test]
    fn of_64_at_160x48() {
        assert_snapshot!(draw(&fixtures::fleet(64), 160, 48).backend());
    }

    #[test]
    fn of_64_at_80x24() {
        assert_snapshot!(draw(&fixtures::fleet(64), 80, 24).backend());
    }

    #[test]
    fn of_64_by_load_on_the_second_page() {
        let mut app = fixtures::fleet(64);
        draw(&app, 160, 48);
        app.update(Action::Fleet(FleetKey::ToggleOrder));
        app.update(Action::Fleet(FleetKey::PageDown));
        assert_snapshot!(draw(&app, 160, 48).backend());
    }
}
