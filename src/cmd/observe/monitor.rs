//! The observer on a terminal: the screen of `src/tui/observer.rs`, redrawn after every poll
//! and key. `q` (or Ctrl-C, or a signal) ends it; the keys that act on a session in its own
//! monitor (pause, skip, knob) are answered with a note, since nothing is sent to the shards.

use super::{GIVE_UP_S, Observing, QUERY_TIMEOUT, Sources, now_unix};
use crate::metrics::observe::View;
use crate::signal::Signals;
use crate::tui::observer::{ObserverScreen, draw, key_action, not_sent_note};
use crate::tui::{CrosstermTerminal, TerminalGuard};
use crossterm::event::{Event, EventStream, KeyCode, KeyEvent, KeyModifiers};
use futures_util::StreamExt;
use std::time::Duration;

/// Polls every `bounds.0` until every shard is done, the `bounds.1` timeout, `q` or a signal,
/// showing the screen; returns why it ended.
pub(crate) async fn watch(
    obs: &mut Observing,
    sources: &Sources<'_>,
    bounds: (Duration, Option<Duration>),
    title: String,
    first: &View,
) -> anyhow::Result<String> {
    let mut screen = ObserverScreen { title, ..ObserverScreen::default() };
    let mut signals = Signals::new()?;
    let guard = TerminalGuard::enter(CrosstermTerminal)?;
    let mut terminal = ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(std::io::stdout()))?;
    take(obs, &mut screen, first);
    let mut keys = EventStream::new();
    let mut tick = tokio::time::interval(bounds.0);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    let until = async move {
        match bounds.1 {
            Some(t) => tokio::time::sleep(t).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(until);
    let ended = loop {
        if obs.health.all_done(now_unix(), GIVE_UP_S) {
            break "all_shards_done".to_string();
        }
        terminal.draw(|f| draw(f, &screen))?;
        tokio::select! {
            _ = tick.tick() => {
                match sources.client.poll(sources.backend, QUERY_TIMEOUT).await {
                    Ok(view) => take(obs, &mut screen, &view),
                    Err(e) => screen.note(obs.failed(e)),
                }
                screen.replicas = sources.replica_line().unwrap_or_default();
            },
            key = keys.next() => match key {
                Some(Ok(Event::Key(k))) => if let Some(why) = on_key(k, &mut screen) { break why },
                Some(_) => {}
                None => break "input closed".to_string(),
            },
            _ = &mut until => break "timeout".to_string(),
            s = signals.recv() => break s.name().to_string(),
        }
    };
    drop(guard);
    Ok(ended)
}

/// One poll onto the screen: health changes logged, figures shown.
fn take(obs: &mut Observing, screen: &mut ObserverScreen, view: &View) {
    let (changes, _cells) = obs.step(view, now_unix());
    changes.into_iter().for_each(|l| screen.note(l));
    screen.take(view, &obs.health.shards);
}

/// What a key does: `Some(reason)` ends the observer.
fn on_key(k: KeyEvent, screen: &mut ObserverScreen) -> Option<String> {
    match k.code {
        KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => Some("SIGINT".into()),
        KeyCode::Char(c) => match key_action(c) {
            Some(true) => Some("quit".into()),
            Some(false) => {
                screen.note(not_sent_note(c));
                None
            }
            None => None,
        },
        _ => None,
    }
}
