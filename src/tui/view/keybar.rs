//! Key bar: the keys of the current mode, and feedback on the last key.

use super::super::app::{App, Mode, RunState};
use super::super::theme;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

/// The keys of a shard's monitor (`--shard i/N`): pause, skip, re-run and the knob are not
/// applied there (they would put the shard out of step with the others), and `q` stops it.
fn shard_keys(app: &App) -> Option<Vec<(&'static str, &'static str)>> {
    app.session.shard.as_ref()?;
    let running = !matches!(app.run_state(), RunState::Done | RunState::Stopping) && !app.holding();
    let quit = if running { "stop shard" } else { "quit" };
    let off = ("p s r ±", "off in a shard");
    Some(match app.mode {
        Mode::Detail => vec![off, ("Esc", "close"), ("←↓↑→", "select"), ("q", quit), ("?", "help")],
        _ => vec![off, ("←↓↑→", "move"), ("⏎", "detail"), ("w", "save"), ("q", quit), ("?", "help")],
    })
}

/// The keys shown in `mode`: (key, what it does).
pub(crate) fn keys(app: &App) -> Vec<(&'static str, &'static str)> {
    match app.mode {
        Mode::ConfirmQuit | Mode::Help => {}
        _ if app.run_state() == RunState::Stopping => {}
        _ => {
            if let Some(keys) = shard_keys(app) {
                return keys;
            }
        }
    }
    match app.mode {
        Mode::ConfirmQuit => vec![("y", "stop and quit"), ("n", "keep running")],
        Mode::Help => vec![("?", "close help"), ("Esc", "close")],
        _ if app.run_state() == RunState::Stopping => vec![("^C", "leave now")],
        // Every cell final, the runner still there: finished cells can be re-run.
        _ if app.holding() => {
            vec![("←↓↑→", "select"), ("⏎", "detail"), ("r", "re-run"), ("w", "save"), ("q", "quit"), ("?", "help")]
        }
        _ if app.run_state() == RunState::Done => {
            vec![("←↓↑→", "select"), ("⏎", "detail"), ("q", "quit"), ("?", "help")]
        }
        Mode::Detail => vec![("Esc", "close"), ("←↓↑→", "select"), ("r", "re-run"), ("q", "quit"), ("?", "help")],
        Mode::Normal => {
            let pause = if app.paused() { "resume" } else { "pause" };
            let set = app.set_line.as_ref().map(|_| ("x", "skip set"));
            // The set line says `x` too: on a narrow bar it is the key left out.
            [
                ("p", pause),
                ("s", "skip"),
                ("r", "re-run"),
                ("←↓↑→", "move"),
                ("⏎", "detail"),
                ("w", "save"),
                ("q", "quit"),
                ("?", "help"),
            ]
            .into_iter()
            .chain(set)
            .collect()
        }
    }
}

/// Draws the key bar.
pub(crate) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let mut spans = Vec::new();
    if let Some(n) = &app.notice {
        spans.push(Span::styled(format!("» {n}  "), theme::warn()));
    }
    for (k, what) in keys(app) {
        spans.push(Span::styled(format!(" {k} "), theme::key()));
        spans.push(Span::styled(format!(" {what} "), theme::label()));
    }
    buf.set_line(area.x, area.y, &Line::from(spans), area.width);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shards_bar_offers_no_pause_skip_rerun_or_knob_in_any_mode() {
        let mut app = crate::tui::fixtures::shard_measuring();
        for mode in [Mode::Normal, Mode::Detail] {
            app.mode = mode;
            let shown = keys(&app);
            assert_eq!(shown[0], ("p s r ±", "off in a shard"), "{mode:?}");
            assert!(!shown.iter().any(|(k, _)| ["p", "s", "r", "+", "-"].contains(k)), "{mode:?}: {shown:?}");
            assert!(shown.contains(&("q", "stop shard")), "{mode:?}");
        }
        let plain = crate::tui::fixtures::measuring();
        assert!(keys(&plain).contains(&("p", "pause")), "unsharded keeps its keys");
    }
}
