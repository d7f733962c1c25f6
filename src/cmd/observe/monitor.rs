//! The observer on a terminal: the session monitor's panels (src/tui/observer.rs) fed from
//! the observer's polls. A data task polls the server every interval and hands each view over
//! a channel; this loop only takes views, keys and a one-second tick (the give-up countdown)
//! and draws, so a slow query never holds a key or a frame. `q` (or Ctrl-C, or a signal)
//! ends it; pause, skip and knob are answered with a note, since nothing is sent to the shards.

use super::{Observing, QUERY_TIMEOUT, Sources};
use crate::load::backend::HttpBackend;
use crate::metrics::observe::{ClientSource, View};
use crate::signal::Signals;
use crate::tui::observer::{ObserverScreen, draw};
use crate::tui::observer_app::ObservedSession;
use crate::tui::{CrosstermTerminal, TerminalGuard};
use crossterm::event::{Event, EventStream};
use futures_util::StreamExt;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// What the screen names besides the figures.
pub(crate) struct Shown {
    /// The observer's first line (server, selector, intervals): logged once.
    pub title: String,
    /// Where the JSON file goes.
    pub report_path: String,
}

/// Polls `client` every `every` and sends each outcome until the receiver is gone.
fn spawn_polls(client: ClientSource, backend: HttpBackend, every: Duration) -> mpsc::Receiver<Result<View, String>> {
    let (tx, rx) = mpsc::channel(2);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            let polled = client.poll(&backend, QUERY_TIMEOUT).await;
            if tx.send(polled).await.is_err() {
                return;
            }
        }
    });
    rx
}

/// Shows the screen until every shard is done, the `bounds.1` timeout, `q` or a signal, with
/// polls every `bounds.0`; returns why it ended.
pub(crate) async fn watch(
    obs: &mut Observing,
    sources: &Sources<'_>,
    bounds: (Duration, Option<Duration>),
    shown: Shown,
    first: &View,
) -> anyhow::Result<String> {
    let session = ObservedSession {
        prometheus: obs.report.prometheus.clone(),
        selector: obs.report.client_selector.clone(),
        report_path: shown.report_path,
        started: Instant::now(),
    };
    let mut screen = ObserverScreen::new(session);
    screen.note(shown.title, false);
    let mut signals = Signals::new()?;
    let guard = TerminalGuard::enter(CrosstermTerminal)?;
    let mut terminal = ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(std::io::stdout()))?;
    take(obs, &mut screen, sources, first);
    let mut polls = spawn_polls(sources.client.clone(), sources.backend.clone(), bounds.0);
    let mut keys = EventStream::new();
    let mut second = tokio::time::interval(Duration::from_secs(1));
    let until = async move {
        match bounds.1 {
            Some(t) => tokio::time::sleep(t).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(until);
    let ended = loop {
        if obs.all_done() {
            break "all_shards_done".to_string();
        }
        screen.countdown = obs.countdown();
        screen.refresh(Instant::now());
        terminal.draw(|f| draw(f, &screen))?;
        tokio::select! {
            polled = polls.recv() => match polled {
                Some(Ok(view)) => take(obs, &mut screen, sources, &view),
                Some(Err(e)) => screen.note(obs.failed(e), true),
                None => break "poll_task_ended".to_string(),
            },
            _ = second.tick() => {},
            key = keys.next() => match key {
                Some(Ok(Event::Key(k))) => {
                    let action = crate::tui::keymap::action(&k);
                    if let Some(why) = action.and_then(|a| screen.key(a)) {
                        break why;
                    }
                }
                Some(_) => {}
                None => break "input_closed".to_string(),
            },
            _ = &mut until => break "timeout".to_string(),
            s = signals.recv() => break s.name().to_string(),
        }
    };
    drop(guard);
    Ok(ended)
}

/// One poll onto the screen: health changes logged, figures and the replicas' reading shown.
fn take(obs: &mut Observing, screen: &mut ObserverScreen, sources: &Sources<'_>, view: &View) {
    let (changes, _cells) = obs.step(view, obs.clock.now_unix());
    for line in changes {
        let warn = line.contains("stale");
        screen.note(line, warn);
    }
    if let Some(r) = sources.replicas {
        screen.set_replicas(r.latest());
    }
    screen.take(view, &obs.health.shards, Instant::now());
}
