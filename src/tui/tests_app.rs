//! `App::update` for every key in every mode and session state.

use super::*;
use crate::tui::fixtures;
use crate::tui::keymap;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn key(app: &mut App, code: KeyCode) -> Option<Command> {
    let action = keymap::action(&KeyEvent::new(code, KeyModifiers::NONE))?;
    app.update(action)
}

fn ch(app: &mut App, c: char) -> Option<Command> {
    key(app, KeyCode::Char(c))
}

fn ctrl_c(app: &mut App) -> Option<Command> {
    app.update(keymap::action(&KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)).unwrap())
}

/// measuring(): decode 3 x 4, cells 0..6 measured, 6 running, 7..11 pending, 11 KV-skipped.
fn running() -> App {
    fixtures::measuring()
}

#[test]
fn pause_when_running_resume_when_paused() {
    let mut app = running();
    assert_eq!(ch(&mut app, 'p'), Some(Command::Pause));
    assert_eq!(app.run_state(), RunState::Paused, "shown paused before the runner confirms");
    assert_eq!(ch(&mut app, 'p'), Some(Command::Resume), "a second p resumes even before the snapshot");
    let mut app = fixtures::paused();
    assert_eq!(app.run_state(), RunState::Paused);
    assert_eq!(ch(&mut app, 'P'), Some(Command::Resume));
}

#[test]
fn the_snapshot_settles_the_pause_intent() {
    let mut app = running();
    ch(&mut app, 'p');
    let mut s = (*app.session).clone();
    s.paused = true;
    app.set_session(Arc::new(s.clone()));
    s.paused = false;
    app.set_session(Arc::new(s));
    assert_eq!(app.run_state(), RunState::Running, "a resume from elsewhere shows");
}

#[test]
fn skip_the_running_cell_or_the_selected_pending_one() {
    let mut app = running();
    assert_eq!(app.selected, Some(6), "the selection follows the running cell");
    assert_eq!(ch(&mut app, 's'), Some(Command::Skip(None)));
    key(&mut app, KeyCode::Right);
    assert_eq!(app.selected, Some(7));
    assert_eq!(ch(&mut app, 's'), Some(Command::Skip(Some(7))));
    ch(&mut app, 'k');
    assert_eq!(app.selected, Some(3));
    assert_eq!(ch(&mut app, 's'), None, "a finished cell cannot be skipped");
    assert!(app.notice.is_some());
}

#[test]
fn skip_while_paused_targets_the_selected_pending_cell() {
    let mut app = fixtures::paused();
    assert_eq!(ch(&mut app, 's'), Some(Command::Skip(Some(6))));
}

#[test]
fn rerun_only_finished_cells() {
    let mut app = running();
    ch(&mut app, 'h');
    assert_eq!(app.selected, Some(5));
    assert_eq!(ch(&mut app, 'r'), Some(Command::Rerun(5)));
    app.selected = Some(7);
    assert_eq!(ch(&mut app, 'r'), None, "pending");
    app.selected = Some(6);
    assert_eq!(ch(&mut app, 'r'), None, "running");
    app.selected = Some(11);
    assert_eq!(ch(&mut app, 'r'), None, "does not fit in KV");
    let mut done = fixtures::done_with_skips();
    for id in [8, 10] {
        done.selected = Some(id);
        assert_eq!(ch(&mut done, 'r'), None, "the session is over");
    }
}

#[test]
fn errored_and_operator_skipped_cells_can_be_rerun_while_running() {
    let done = fixtures::done_with_skips();
    let mut app = running();
    app.set_session(done.session.clone());
    for id in [8, 10] {
        app.selected = Some(id);
        assert_eq!(ch(&mut app, 'r'), Some(Command::Rerun(id)));
    }
}

#[test]
fn save_writes_the_report_until_the_session_is_over() {
    let mut app = running();
    assert_eq!(ch(&mut app, 'w'), Some(Command::Save));
    let mut done = fixtures::done_with_skips();
    assert_eq!(ch(&mut done, 'w'), None);
    assert!(done.notice.as_deref().unwrap().contains("sessions/"));
}

#[test]
fn quit_asks_then_stops() {
    let mut app = running();
    assert_eq!(ch(&mut app, 'q'), None);
    assert_eq!(app.mode, Mode::ConfirmQuit);
    assert_eq!(ch(&mut app, 'n'), None);
    assert_eq!(app.mode, Mode::Normal);
    ch(&mut app, 'q');
    assert_eq!(key(&mut app, KeyCode::Esc), None);
    assert_eq!(app.mode, Mode::Normal);
    ch(&mut app, 'q');
    assert_eq!(ch(&mut app, 'q'), None, "q again declines");
    assert_eq!(app.mode, Mode::Normal);
    ch(&mut app, 'q');
    assert_eq!(ch(&mut app, 'p'), None, "other keys wait for an answer");
    assert_eq!(ch(&mut app, 'y'), Some(Command::Stop));
    assert_eq!(app.run_state(), RunState::Stopping);
    assert!(!app.should_exit(), "waits for the runner's report");
    assert_eq!(ch(&mut app, 'p'), None, "keys do nothing while stopping");
    app.runner_finished();
    assert!(app.should_exit());
    assert!(!app.interrupted());
}

#[test]
fn enter_confirms_quit() {
    let mut app = running();
    ch(&mut app, 'q');
    assert_eq!(key(&mut app, KeyCode::Enter), Some(Command::Stop));
}

#[test]
fn ctrl_c_stops_without_asking_and_twice_leaves() {
    let mut app = running();
    assert_eq!(ctrl_c(&mut app), Some(Command::Stop));
    assert!(app.interrupted());
    assert!(!app.should_exit());
    assert_eq!(ctrl_c(&mut app), None);
    assert!(app.abandoned() && app.should_exit());
    let mut app = running();
    ch(&mut app, 'q');
    assert_eq!(ctrl_c(&mut app), Some(Command::Stop), "also from the question");
    let mut app = running();
    ch(&mut app, '?');
    assert_eq!(ctrl_c(&mut app), Some(Command::Stop), "also from the help");
}

#[test]
fn quit_when_done_needs_no_question() {
    let mut app = fixtures::done_with_skips();
    assert_eq!(app.run_state(), RunState::Done);
    assert_eq!(ch(&mut app, 'q'), None);
    assert!(app.should_exit());
    let mut app = fixtures::done_with_skips();
    assert_eq!(ctrl_c(&mut app), None);
    assert!(app.should_exit());
    let mut app = fixtures::done_with_skips();
    assert_eq!(ch(&mut app, 'p'), None, "nothing to pause");
    assert_eq!(ch(&mut app, 's'), None, "nothing to skip");
}

#[test]
fn a_pending_question_closes_when_the_runner_ends() {
    let mut app = running();
    ch(&mut app, 'q');
    app.runner_finished();
    assert_eq!(app.mode, Mode::Normal);
    assert!(!app.should_exit());
}

#[test]
fn help_toggles_and_swallows_other_keys() {
    let mut app = running();
    ch(&mut app, '?');
    assert_eq!(app.mode, Mode::Help);
    for c in ['p', 's', 'r', 'w', 'y', 'n', 'j', 'f'] {
        assert_eq!(ch(&mut app, c), None, "{c} in help");
        assert_eq!(app.mode, Mode::Help);
    }
    assert_eq!(app.selected, Some(6));
    ch(&mut app, '?');
    assert_eq!(app.mode, Mode::Normal);
    for close in [KeyCode::Esc, KeyCode::Enter, KeyCode::Char('q')] {
        key(&mut app, KeyCode::F(1));
        assert_eq!(app.mode, Mode::Help);
        key(&mut app, close);
        assert_eq!(app.mode, Mode::Normal, "{close:?} closes help");
    }
}

#[test]
fn enter_opens_detail_and_keys_still_work_there() {
    let mut app = running();
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.mode, Mode::Detail);
    key(&mut app, KeyCode::Left);
    assert_eq!((app.mode, app.selected), (Mode::Detail, Some(5)), "the detail follows the selection");
    assert_eq!(ch(&mut app, 'r'), Some(Command::Rerun(5)));
    assert_eq!(ch(&mut app, 'p'), Some(Command::Pause));
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.mode, Mode::Normal);
    key(&mut app, KeyCode::Enter);
    key(&mut app, KeyCode::Esc);
    assert_eq!(app.mode, Mode::Normal);
    key(&mut app, KeyCode::Enter);
    ch(&mut app, '?');
    assert_eq!(app.mode, Mode::Help);
    key(&mut app, KeyCode::Enter);
    ch(&mut app, 'q');
    assert_eq!(app.mode, Mode::ConfirmQuit);
}

#[test]
fn yes_and_no_mean_nothing_outside_the_question() {
    let mut app = running();
    assert_eq!(ch(&mut app, 'y'), None);
    assert_eq!(ch(&mut app, 'n'), None);
    assert_eq!(key(&mut app, KeyCode::Esc), None);
    assert_eq!(app.mode, Mode::Normal);
}

#[test]
fn arrows_and_hjkl_move_within_bounds() {
    let mut app = running();
    for _ in 0..5 {
        key(&mut app, KeyCode::Up);
        ch(&mut app, 'h');
    }
    assert_eq!(app.selected, Some(0));
    for _ in 0..5 {
        ch(&mut app, 'j');
        key(&mut app, KeyCode::Right);
    }
    assert_eq!(app.selected, Some(11));
    ch(&mut app, 'k');
    key(&mut app, KeyCode::Left);
    assert_eq!(app.selected, Some(6));
    assert!(!app.follow);
}

#[test]
fn the_selection_follows_the_running_cell_until_moved_and_f_restores_it() {
    let mut app = running();
    let mut s = (*app.session).clone();
    s.current = Some(7);
    app.set_session(Arc::new(s.clone()));
    assert_eq!(app.selected, Some(7));
    key(&mut app, KeyCode::Up);
    s.current = Some(8);
    app.set_session(Arc::new(s));
    assert_eq!(app.selected, Some(3), "moved by hand: stays");
    ch(&mut app, 'f');
    assert_eq!(app.selected, Some(8));
}

#[test]
fn runner_events_become_log_lines() {
    let mut app = running();
    let n = app.logs.len();
    let line = app.on_runner_event(&RunnerEvent::CellStarted { cell: 6, attempt: 2, run: None });
    assert_eq!(line.as_deref(), Some("ctx=16k conc=4: start (attempt 2)"));
    let run = Some(crate::report::runs::round::RunProgress { done: 1, planned: 3 });
    let line = app.on_runner_event(&RunnerEvent::CellStarted { cell: 6, attempt: 2, run });
    assert_eq!(line.as_deref(), Some("ctx=16k conc=4: start (run 2/3)"));
    app.on_runner_event(&RunnerEvent::Log("metrics of sim-a unavailable at start".into()));
    assert_eq!(app.logs.len(), n + 3);
    assert!(app.logs.back().unwrap().warn);
    for i in 0..LOG_LINES {
        app.log(format!("{i}"), false);
    }
    assert_eq!(app.logs.len(), LOG_LINES, "bounded");
}

#[test]
fn operator_commands_log_what_a_person_reads() {
    use crate::tui::logging::operator_line;
    let app = running();
    let s = &app.session;
    assert_eq!(operator_line(&Command::Skip(Some(3)), s), "operator: skip ctx=0 conc=8");
    assert_eq!(operator_line(&Command::Skip(None), s), "operator: skip ctx=16k conc=4");
    assert_eq!(operator_line(&Command::Rerun(1), s), "operator: re-run ctx=0 conc=2");
    assert_eq!(operator_line(&Command::Pause, s), "operator: pause the load");
    let routing = crate::tui::fixtures::routing_imbalance();
    assert_eq!(operator_line(&Command::Rerun(11), &routing.session), "operator: re-run r1-hot90-prefix-cache");
    for cmd in [Command::Resume, Command::Save, Command::Stop, Command::Skip(Some(99))] {
        let line = operator_line(&cmd, s);
        assert!(!line.contains('(') && !line.contains("Some"), "{line}");
    }
}

#[test]
fn plus_and_minus_turn_the_running_cell_only() {
    let mut app = running();
    assert_eq!(ch(&mut app, '+'), Some(Command::Knob(Knob::Up)));
    assert_eq!(ch(&mut app, '-'), Some(Command::Knob(Knob::Down)));
    let mut app = fixtures::paused();
    assert_eq!(ch(&mut app, '+'), None, "paused: no load to turn");
    assert_eq!(app.notice.as_deref(), Some("+: no cell is running"));
    let mut app = fixtures::done_with_skips();
    app.runner_finished();
    assert_eq!(ch(&mut app, '-'), None);
    assert_eq!(app.notice.as_deref(), Some("the session is over"));
}

/// In a shard's monitor pause, skip, re-run and the knob send nothing and say why; quit and
/// save still work.
#[test]
fn a_shard_refuses_pause_skip_rerun_and_the_knob() {
    let mut app = fixtures::shard_measuring();
    for c in ['p', 's', '+', '-'] {
        assert_eq!(ch(&mut app, c), None, "{c}");
        assert!(app.notice.as_deref().is_some_and(|n| n.contains("shard 1/4 out of step")), "{c}: {:?}", app.notice);
    }
    app.selected = Some(0);
    assert_eq!(ch(&mut app, 'r'), None, "a finished cell is not re-run");
    assert_eq!(app.logs.iter().filter(|l| l.text.starts_with("sharded run:")).count(), 5);
    assert_eq!(ch(&mut app, 'w'), Some(Command::Save));
    ch(&mut app, 'q');
    assert_eq!(ch(&mut app, 'y'), Some(Command::Stop));
}
