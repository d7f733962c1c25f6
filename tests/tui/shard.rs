//! A shard's monitor (`run --shard 1/4 --start-at ...`, issue 27) in `TestBackend` snapshots:
//! the header names the shard, its session, `--start-at` and its clock; the gauge compares the
//! server's running count with the cell's conc over every shard; before the start and between
//! slots the Live panel says what it waits for; a refused key is answered with the note.

use insta::assert_snapshot;
use llm_decode_bench::tui::{App, Mode, fixtures};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn screen(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test terminal");
    terminal.draw(|f| f.render_widget(app, f.area())).expect("draws");
    terminal.backend().to_string()
}

#[test]
fn the_header_names_the_shard_its_session_start_and_clock() {
    let s = screen(&fixtures::shard_measuring(), 160, 48);
    for want in ["shard 1/4 · session s-5f3ac1d2e4b6", "start 10:31:05 UTC", "⚠ clock off 1.5 ms", "4/4"] {
        assert!(s.contains(want), "no {want:?} in\n{s}");
    }
    assert!(!s.contains(" 4/1"), "the gauge compares with the cell's conc, not the slice:\n{s}");
    assert!(s.contains("p s r ±") && s.contains("off in a shard"), "the key bar says so:\n{s}");
    assert_snapshot!(s);
    let narrow = screen(&fixtures::shard_measuring(), 80, 24);
    assert!(narrow.contains("shard 1/4 · session s-5f3ac1d2e4b6 │ ⚠ clock off 1.5 ms"), "{narrow}");
    assert_snapshot!("the_header_names_the_shard_at_80x24", narrow);
}

#[test]
fn a_refused_key_is_answered_with_the_note() {
    let app = fixtures::shard_refused_key();
    let note = app.notice.clone().expect("a note");
    assert!(note.starts_with("sharded run: pause/skip/re-run/knob are not applied"), "{note}");
    assert!(app.logs.iter().any(|l| l.text == note && l.warn), "the log has it too");
    assert_snapshot!(screen(&app, 160, 48));
}

#[test]
fn between_slots_the_live_panel_says_what_it_waits_for() {
    let s = screen(&fixtures::shard_waiting_for_slot(), 100, 30);
    assert!(s.contains("ctx=16k conc=4:") && s.contains("its slot opens in 4.2 s (10:33:31)"), "{s}");
    let wide = screen(&fixtures::shard_waiting_for_slot(), 160, 48);
    assert!(wide.contains("ctx=16k conc=4: its slot opens in 4.2 s (10:33:31)"), "{wide}");
    assert_snapshot!(s);
}

#[test]
fn before_the_start_the_live_panel_says_when_it_starts() {
    let s = screen(&fixtures::shard_waiting_for_start(), 100, 30);
    assert!(s.contains("waiting for --start-at 10:31:05 (in 12 s)"), "{s}");
    assert_snapshot!(s);
    // The ETA counts to the end of the timeline's last slot, the wait for the start included.
    let wide = screen(&fixtures::shard_waiting_for_start(), 160, 48);
    assert!(wide.contains("cell 1/12, 1 skipped, ETA 6m12s"), "{wide}");
}

#[test]
fn the_help_says_the_keys_are_off_in_a_shard() {
    let mut app = fixtures::shard_measuring();
    app.mode = Mode::Help;
    let s = screen(&app, 160, 48);
    assert!(s.contains("not applied in a sharded run"), "{s}");
}
