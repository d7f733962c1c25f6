//! The monitor's event loop: one `select!` over keys (first), the runner's join handle and
//! events, the live, session and metrics snapshots, and a frame tick. Generic over the backend
//! and the input source so tests drive it with `TestBackend` and scripted keys.

use super::app::App;
use super::logging::TARGET;
use crate::cell::control::{Command, LiveAttempt, RunnerEvent};
use crate::metrics::poller::MetricsSnapshot;
use crate::report::json::SessionReport;
use crate::session::SessionHandles;
use crate::session::snapshot::SessionSnapshot;
use crossterm::event::Event;
use futures_util::stream::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::backend::Backend;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, Interval, MissedTickBehavior};

/// Longest time without a redraw while the session clock and progress bars move (4 Hz).
const MAX_IDLE: Duration = Duration::from_millis(250);

/// Settings of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopOptions {
    /// Most frames per second for data updates (1..=30); a key redraws at once.
    pub fps: u16,
    /// Draw the tui-logger widget in the log panel (off: the app's own lines, for tests).
    pub log_widget: bool,
}

impl Default for LoopOptions {
    fn default() -> Self {
        Self { fps: 20, log_widget: false }
    }
}

/// Terminal events from a channel (scripted keys in tests).
#[derive(Debug)]
pub struct ChannelInput(pub mpsc::UnboundedReceiver<Event>);

impl Stream for ChannelInput {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        self.0.poll_recv(cx)
    }
}

/// Why [`run_loop`] ended without a report: a second Ctrl-C while the session was stopping
/// left at once. The report file holds what the runner last wrote (at the start and after every
/// cell, `complete: false`); the exit code is still the interruption's
/// ([`crate::cmd::exit::after_error`]), never a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("interrupted twice: left without waiting for the runner; the report file holds every finished cell")]
pub struct Abandoned;

/// How the session shown by [`run_loop`] ended (for the exit code, `src/cmd/exit.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The runner ended on its own (every cell done, or a halt); the operator then quit.
    Finished,
    /// Stopped by Ctrl-C (a key, or a signal delivered as one).
    Interrupted,
    /// Stopped by the operator with `q`, `y` while cells were left.
    Quit,
    /// The operator skipped the sweep's running parameter set (`x`, `run --server-cmd`).
    SkippedSet,
}

impl Ending {
    fn of(app: &App) -> Ending {
        match (app.interrupted(), app.quit_mid_session()) {
            (true, _) => Ending::Interrupted,
            (false, true) if app.skipping_set() => Ending::SkippedSet,
            (false, true) => Ending::Quit,
            (false, false) => Ending::Finished,
        }
    }

    /// Stopped by Ctrl-C.
    pub fn interrupted(self) -> bool {
        self == Ending::Interrupted
    }
}

/// Time between frames at `fps` (clamped to 1..=30).
pub(crate) fn frame_period(fps: u16) -> Duration {
    Duration::from_secs(1) / u32::from(fps.clamp(1, 30))
}

/// Which sources still deliver.
struct Open {
    input: bool,
    events: bool,
    live: bool,
    snapshot: bool,
    metrics: bool,
}

async fn metrics_changed(rx: &mut Option<watch::Receiver<Arc<MetricsSnapshot>>>) -> Option<Arc<MetricsSnapshot>> {
    let rx = rx.as_mut()?;
    rx.changed().await.ok()?;
    Some(rx.borrow_and_update().clone())
}

fn draw<B: Backend>(terminal: &mut Terminal<B>, app: &mut App) -> anyhow::Result<()> {
    app.now = Instant::now();
    terminal.draw(|f| f.render_widget(&*app, f.area())).map_err(|e| anyhow::anyhow!("cannot draw: {e}"))?;
    Ok(())
}

/// The newest panel line to `--log-file` (`logging::to_file`), with the panel's time.
fn to_file(app: &App) {
    if let Some(l) = app.logs.back() {
        super::logging::to_file(l.at_s, &l.text);
    }
}

/// Applies one terminal event; true when it should be drawn at once.
fn on_input(app: &mut App, ev: Event, commands: &mpsc::UnboundedSender<Command>) -> bool {
    match ev {
        Event::Key(key) => {
            let Some(action) = super::keymap::action(&key) else { return false };
            app.now = Instant::now();
            if let Some(cmd) = app.update(action) {
                let line = super::logging::operator_line(&cmd, &app.session);
                tracing::info!(target: TARGET, "{line}");
                app.log(line, false);
                to_file(app);
                // The runner may have ended; the command then has nothing left to do.
                let _ = commands.send(cmd);
            }
            true
        }
        Event::Resize(..) => true,
        _ => false,
    }
}

/// What woke the loop.
enum Wake {
    Input(Option<Event>),
    Joined(Box<Result<SessionReport, tokio::task::JoinError>>),
    Runner(Option<RunnerEvent>),
    Live(bool),
    Snapshot(bool),
    Metrics(Option<Arc<MetricsSnapshot>>),
    Tick,
}

/// The session's channels and which of them still deliver.
struct Sources {
    commands: mpsc::UnboundedSender<Command>,
    events: mpsc::UnboundedReceiver<RunnerEvent>,
    live: watch::Receiver<LiveAttempt>,
    snapshot: watch::Receiver<Arc<SessionSnapshot>>,
    metrics: Option<watch::Receiver<Arc<MetricsSnapshot>>>,
    join: tokio::task::JoinHandle<SessionReport>,
    report: Option<SessionReport>,
    open: Open,
}

impl Sources {
    /// Waits for the next thing to happen; keys first.
    async fn wait<S: Stream<Item = Event> + Unpin>(&mut self, input: &mut S, ticker: &mut Interval) -> Wake {
        let open = &self.open;
        tokio::select! {
            biased;
            ev = input.next(), if open.input => Wake::Input(ev),
            res = &mut self.join, if self.report.is_none() => Wake::Joined(Box::new(res)),
            ev = self.events.recv(), if open.events => Wake::Runner(ev),
            r = self.live.changed(), if open.live => Wake::Live(r.is_ok()),
            r = self.snapshot.changed(), if open.snapshot => Wake::Snapshot(r.is_ok()),
            m = metrics_changed(&mut self.metrics), if open.metrics => Wake::Metrics(m),
            _ = ticker.tick() => Wake::Tick,
        }
    }

    /// Applies what woke the loop; `Some(true)` asks for a draw now, `Some(false)` marks the
    /// screen dirty, `None` changes nothing.
    fn apply(&mut self, app: &mut App, wake: Wake) -> anyhow::Result<Option<bool>> {
        match wake {
            Wake::Input(Some(ev)) => return Ok(on_input(app, ev, &self.commands).then_some(true)),
            Wake::Input(None) => self.open.input = false,
            Wake::Joined(res) => {
                self.report = Some((*res).map_err(|e| anyhow::anyhow!("the session runner failed: {e}"))?);
                app.now = Instant::now();
                app.runner_finished();
                return Ok(Some(true));
            }
            Wake::Runner(Some(ev)) => {
                app.now = Instant::now();
                if let Some(line) = app.on_runner_event(&ev) {
                    // A warning is one in the log panel (`W`) and in `--log-file` too.
                    match app.logs.back().is_some_and(|l| l.warn) {
                        true => tracing::warn!(target: TARGET, "{line}"),
                        false => tracing::info!(target: TARGET, "{line}"),
                    }
                    to_file(app);
                }
            }
            Wake::Runner(None) => self.open.events = false,
            Wake::Live(true) => app.set_live(self.live.borrow_and_update().clone()),
            Wake::Live(false) => self.open.live = false,
            Wake::Snapshot(true) => app.set_session(self.snapshot.borrow_and_update().clone()),
            Wake::Snapshot(false) => self.open.snapshot = false,
            Wake::Metrics(Some(m)) => app.set_metrics(m),
            Wake::Metrics(None) => self.open.metrics = false,
            Wake::Tick => return Ok(None),
        };
        Ok(Some(false))
    }
}

/// Runs the monitor until the operator quits and the runner has returned its report; returns
/// the report and how the session ended ([`Ending`]). A second Ctrl-C while stopping
/// returns [`Abandoned`] at once.
pub async fn run_loop<B, S>(
    terminal: &mut Terminal<B>,
    handles: SessionHandles,
    input: S,
    opts: LoopOptions,
) -> anyhow::Result<(SessionReport, Ending)>
where
    B: Backend,
    S: Stream<Item = Event> + Unpin,
{
    run_set_loop(terminal, handles, input, opts, None).await
}

/// [`run_loop`] for the session of one parameter set of a sweep (`run --server-cmd`) when
/// `set` is given: the set line under the header, `x` skips the set ([`Ending::SkippedSet`]),
/// and the loop ends as soon as the runner has (the sweep goes on with the next set).
pub async fn run_set_loop<B, S>(
    terminal: &mut Terminal<B>,
    handles: SessionHandles,
    mut input: S,
    opts: LoopOptions,
    set: Option<super::view::sweep::SetLine>,
) -> anyhow::Result<(SessionReport, Ending)>
where
    B: Backend,
    S: Stream<Item = Event> + Unpin,
{
    let SessionHandles { commands, events, live, mut snapshot, metrics, join, .. } = handles;
    let mut app = App::new(snapshot.borrow_and_update().clone(), Instant::now());
    app.log_widget = opts.log_widget.then(tui_logger::TuiWidgetState::new);
    let leave_when_done = set.is_some();
    app.set_line = set;
    let open = Open { input: true, events: true, live: true, snapshot: true, metrics: metrics.is_some() };
    let mut src = Sources { commands, events, live, snapshot, metrics, join, report: None, open };
    let mut ticker = tokio::time::interval(frame_period(opts.fps));
    ticker.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let (mut dirty, mut last_draw) = (false, Instant::now());
    draw(terminal, &mut app)?;
    loop {
        if app.abandoned() {
            return Err(Abandoned.into());
        }
        if (app.should_exit() || !src.open.input || (leave_when_done && app.runner_done()))
            && let Some(r) = src.report.take()
        {
            draw(terminal, &mut app)?;
            return Ok((r, Ending::of(&app)));
        }
        let wake = src.wait(&mut input, &mut ticker).await;
        let now = match src.apply(&mut app, wake)? {
            Some(now) => {
                dirty = true;
                now
            }
            None => dirty || last_draw.elapsed() >= MAX_IDLE,
        };
        if now {
            draw(terminal, &mut app)?;
            (dirty, last_draw) = (false, Instant::now());
        }
    }
}
