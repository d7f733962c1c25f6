//! Keys to actions. The map is the same in every mode; [`App::update`](super::app::App::update)
//! decides what an action means in the current mode.

use super::app::Action;
use super::fleet::FleetKey;
use super::grid::Dir;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// The action of a key press; `None` for releases, repeats and unmapped keys.
pub(crate) fn action(key: &KeyEvent) -> Option<Action> {
    if key.kind != KeyEventKind::Press {
        return None;
    }
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        return matches!(key.code, KeyCode::Char('c' | 'C')).then_some(Action::Interrupt);
    }
    let a = match key.code {
        KeyCode::Char('p' | 'P') => Action::TogglePause,
        KeyCode::Char('s' | 'S') => Action::Skip,
        KeyCode::Char('r' | 'R') => Action::Rerun,
        KeyCode::Char('w' | 'W') => Action::Save,
        KeyCode::Char('q' | 'Q') => Action::Quit,
        KeyCode::Char('y' | 'Y') => Action::Yes,
        KeyCode::Char('n' | 'N') => Action::No,
        KeyCode::Char('f' | 'F') => Action::Follow,
        KeyCode::Char('?') | KeyCode::F(1) => Action::ToggleHelp,
        KeyCode::Char('+' | '=') => Action::KnobUp,
        KeyCode::Char('-' | '_') => Action::KnobDown,
        KeyCode::PageDown => Action::Fleet(FleetKey::PageDown),
        KeyCode::PageUp => Action::Fleet(FleetKey::PageUp),
        KeyCode::Char('o' | 'O') => Action::Fleet(FleetKey::ToggleOrder),
        KeyCode::Char('x' | 'X') => Action::SkipSet,
        KeyCode::Enter => Action::Enter,
        KeyCode::Esc => Action::Back,
        KeyCode::Up | KeyCode::Char('k') => Action::Move(Dir::Up),
        KeyCode::Down | KeyCode::Char('j') => Action::Move(Dir::Down),
        KeyCode::Left | KeyCode::Char('h') => Action::Move(Dir::Left),
        KeyCode::Right | KeyCode::Char('l') => Action::Move(Dir::Right),
        _ => return None,
    };
    Some(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyEventState;

    fn press(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn keys_map_to_actions() {
        assert_eq!(action(&press(KeyCode::Char('p'))), Some(Action::TogglePause));
        assert_eq!(action(&press(KeyCode::Char('j'))), Some(Action::Move(Dir::Down)));
        assert_eq!(action(&press(KeyCode::Left)), Some(Action::Move(Dir::Left)));
        assert_eq!(action(&press(KeyCode::Char('?'))), Some(Action::ToggleHelp));
        assert_eq!(action(&press(KeyCode::Char('x'))), Some(Action::SkipSet));
        assert_eq!(action(&press(KeyCode::Char('z'))), None);
        assert_eq!(action(&press(KeyCode::PageDown)), Some(Action::Fleet(FleetKey::PageDown)));
        assert_eq!(action(&press(KeyCode::PageUp)), Some(Action::Fleet(FleetKey::PageUp)));
        assert_eq!(action(&press(KeyCode::Char('o'))), Some(Action::Fleet(FleetKey::ToggleOrder)));
        assert_eq!(action(&press(KeyCode::Char('+'))), Some(Action::KnobUp));
        assert_eq!(action(&press(KeyCode::Char('='))), Some(Action::KnobUp), "+ without shift");
        assert_eq!(action(&press(KeyCode::Char('-'))), Some(Action::KnobDown));
        let shifted = KeyEvent::new(KeyCode::Char('+'), KeyModifiers::SHIFT);
        assert_eq!(action(&shifted), Some(Action::KnobUp), "terminals report + with shift");
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(action(&ctrl_c), Some(Action::Interrupt));
        let ctrl_p = KeyEvent::new(KeyCode::Char('p'), KeyModifiers::CONTROL);
        assert_eq!(action(&ctrl_p), None);
    }

    #[test]
    fn only_presses_count() {
        let release = KeyEvent::new_with_kind_and_state(
            KeyCode::Char('p'),
            KeyModifiers::NONE,
            KeyEventKind::Release,
            KeyEventState::NONE,
        );
        assert_eq!(action(&release), None);
        let repeat = KeyEvent { kind: KeyEventKind::Repeat, ..press(KeyCode::Char('p')) };
        assert_eq!(action(&repeat), None);
    }
}
