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
