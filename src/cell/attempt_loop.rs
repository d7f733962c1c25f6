//! The one attempt loop every experiment uses: receive finished samples as they arrive, tally
//! them in the live view, and publish the view on the [`TICK`] interval.
//!
//! Experiments drive it two ways: [`AttemptLoop::run_until`] runs a future (an open-loop
//! schedule) to its end, and [`AttemptLoop::wait`] returns at the next tick, at a deadline or on
//! cancel, so a closed-loop attempt can check its own conditions (admission, the window end)
//! between ticks. One interval timer and one deadline timer live as long as the loop.

use super::context::CellEnv;
use super::control::{LiveAttempt, Phase};
use super::publisher::LivePublisher;
use crate::load::live::LiveCounters;
use crate::load::sample::{ErrorKind, RequestSample};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::{Instant, Interval, MissedTickBehavior, Sleep};
use tokio_util::sync::CancellationToken;

/// Most samples taken from the channel in one receive: a batch per poll keeps the loop ahead
/// of thousands of finishing requests a second while the workers keep every core busy.
const INBOX: usize = 1024;

/// How often an attempt publishes its live view (and checks its conditions).
pub const TICK: Duration = Duration::from_millis(250);

/// What an experiment adds to the common tally of a finished sample.
pub trait Tally: Send {
    /// The replica that served `s`, as the live view names it (default: the response header
    /// value as received).
    fn replica(&self, s: &RequestSample) -> Option<String> {
        s.served_by.clone()
    }

    /// Experiment-specific counting, after errors and the replica were tallied.
    fn extra(&mut self, _s: &RequestSample, _replica: Option<&str>, _live: &mut LiveAttempt) {}
}

/// Halts the session on a refused request: every other request would be refused too. The line
/// names the status only: the server's text may echo the key.
fn halt_unauthorized(env: &CellEnv, status: Option<u16>) {
    let status = status.map_or_else(|| "401/403".to_string(), |s| s.to_string());
    let hint = crate::load::client::key_hint(env.cfg.api_key.is_some());
    let line = format!(
        "stopping the session: the server refused the credentials (HTTP {status}); retrying cannot help: {hint}"
    );
    if env.halt.raise(line.clone()) {
        env.warn(line);
    }
}

/// The common tally only.
#[derive(Debug, Default, Clone, Copy)]
pub struct PlainTally;

impl Tally for PlainTally {}

/// Why [`AttemptLoop::wait`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// The view was published; check conditions and wait again.
    Tick,
    /// The deadline passed.
    Deadline,
    /// The attempt was cancelled.
    Cancelled,
}

/// The receiving end of an attempt: its samples, live counters and publisher.
pub struct AttemptLoop<'a, T: Tally = PlainTally> {
    env: &'a CellEnv,
    rx: UnboundedReceiver<RequestSample>,
    live: Arc<LiveCounters>,
    publisher: LivePublisher,
    tally: T,
    samples: Vec<RequestSample>,
    ticker: Interval,
    deadline: Pin<Box<Sleep>>,
    deadline_at: Option<Instant>,
    /// Keep only the first and last mark of each sample's timeline ([`AttemptLoop::ends_only`]).
    ends_only: bool,
    /// Samples of the latest batch receive, taken at once.
    inbox: Vec<RequestSample>,
    /// Every sender is gone: nothing more can arrive.
    closed: bool,
    /// The attempt on the live `/metrics` page (`--metrics-listen`), folded into its cell when
    /// the loop is dropped.
    page: Option<crate::metrics::expose::Registration>,
}

/// Drops the inner marks of a finished timeline, keeping its first and last (TTFT, ITL, the
/// last token) and freeing the rest.
pub fn keep_timeline_ends(s: &mut RequestSample) {
    s.marks.keep_ends();
}

impl<'a, T: Tally> AttemptLoop<'a, T> {
    /// A loop over the samples arriving on `rx`, publishing `publisher`'s view of `live`.
    pub fn new(
        env: &'a CellEnv,
        rx: UnboundedReceiver<RequestSample>,
        live: Arc<LiveCounters>,
        publisher: LivePublisher,
        tally: T,
    ) -> Self {
        let mut ticker = tokio::time::interval_at(Instant::now() + TICK, TICK);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let deadline = Box::pin(tokio::time::sleep_until(Instant::now()));
        let page = env.cfg.exposition.as_ref().map(|e| e.register(publisher.label(), live.clone()));
        Self {
            env,
            rx,
            live,
            publisher,
            tally,
            samples: Vec::new(),
            ticker,
            deadline,
            deadline_at: None,
            ends_only: false,
            inbox: Vec::with_capacity(INBOX),
            closed: false,
            page,
        }
    }

    /// Keeps only the first and last mark of each sample received (after the tally saw it
    /// whole): for an experiment whose tally folds the timelines as requests end, so memory
    /// does not grow with tokens.
    pub fn ends_only(mut self) -> Self {
        self.ends_only = true;
        self
    }

    /// Turns [`Self::ends_only`] on or off from now on: a decode attempt keeps only the ends
    /// of the requests that end during its warmup, since none of their tokens falls in the
    /// window that opens after it.
    pub fn set_ends_only(&mut self, on: bool) {
        self.ends_only = on;
    }

    /// Moves the view to `phase` (bounded by `len` when known).
    pub fn phase(&mut self, phase: Phase, len: Option<Duration>) {
        self.publisher.phase(self.env, phase, len);
    }

    /// Counts the panels' deltas from `snap`, the attempt's opening scrape (the report's
    /// `before`), so the final panels and the report agree.
    pub fn baseline(&mut self, snap: Option<Arc<crate::metrics::window::MetricsSnapshot>>) {
        if let Some(snap) = snap {
            self.publisher.baseline(snap);
        }
    }

    /// The live view's tallies, for experiment-specific rows (e.g. prompt families).
    pub fn live_mut(&mut self) -> &mut LiveAttempt {
        self.publisher.live_mut()
    }

    /// The attempt's live counters.
    pub fn live(&self) -> &LiveCounters {
        &self.live
    }

    /// The attempt's live counters, shared (for probes that outlive a borrow).
    pub fn live_arc(&self) -> Arc<LiveCounters> {
        self.live.clone()
    }

    /// Samples received so far.
    pub fn samples(&self) -> &[RequestSample] {
        &self.samples
    }

    /// Removes and returns the oldest samples, in order, up to the first that did not end
    /// before `t`: a long attempt folds them into its summary instead of keeping timelines.
    pub fn take_ended_before(&mut self, t: Instant) -> std::vec::Drain<'_, RequestSample> {
        let n = self.samples.iter().position(|s| s.ended_at >= t).unwrap_or(self.samples.len());
        self.samples.drain(..n)
    }

    fn take(&mut self, s: RequestSample) {
        if s.error_kind() == Some(ErrorKind::Unauthorized) {
            halt_unauthorized(self.env, s.status);
        }
        if let Some(page) = &self.page {
            page.on_sample(&s);
        }
        let replica = self.tally.replica(&s);
        self.publisher.tally(&s, replica.as_deref());
        self.tally.extra(&s, replica.as_deref(), self.publisher.live_mut());
        let mut s = s;
        if self.ends_only {
            keep_timeline_ends(&mut s);
        }
        self.samples.push(s);
    }

    /// Takes the `n` samples [`UnboundedReceiver::recv_many`] put in the inbox (0: the channel
    /// closed, every sender is gone).
    fn take_inbox(&mut self, n: usize) {
        if n == 0 {
            self.closed = true;
        }
        let mut inbox = std::mem::take(&mut self.inbox);
        for s in inbox.drain(..) {
            self.take(s);
        }
        self.inbox = inbox;
    }

    /// Takes every sample already waiting on the channel.
    pub fn drain(&mut self) {
        while let Ok(s) = self.rx.try_recv() {
            self.take(s);
        }
    }

    fn publish(&mut self) {
        self.drain();
        self.publisher.tick(self.env, &self.live);
        if let Some(page) = &self.page {
            page.exposition().beat();
        }
    }

    /// Receives samples until the next tick (then publishes), `deadline` or `cancel`.
    pub async fn wait(&mut self, cancel: &CancellationToken, deadline: Option<Instant>) -> Wake {
        if deadline != self.deadline_at {
            self.deadline_at = deadline;
            if let Some(at) = deadline {
                self.deadline.as_mut().reset(at);
            }
        }
        let armed = self.deadline_at.is_some();
        loop {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Wake::Cancelled,
                _ = &mut self.deadline, if armed => return Wake::Deadline,
                // The tick before the samples: a channel that never empties (thousands of
                // short requests a second) must not starve the view and the caller's checks.
                _ = self.ticker.tick() => {
                    self.publish();
                    return Wake::Tick;
                }
                n = self.rx.recv_many(&mut self.inbox, INBOX), if !self.closed => self.take_inbox(n),
            }
        }
    }

    /// Drives `fut` to its end while receiving samples and publishing; every sample sent
    /// before it ended is received.
    pub async fn run_until<F: Future>(&mut self, fut: F) -> F::Output {
        tokio::pin!(fut);
        loop {
            tokio::select! {
                biased;
                out = &mut fut => {
                    self.drain();
                    return out;
                }
                _ = self.ticker.tick() => self.publish(),
                n = self.rx.recv_many(&mut self.inbox, INBOX), if !self.closed => self.take_inbox(n),
            }
        }
    }

    /// Ends the loop: the samples, oldest first, and the experiment's tally. The view is
    /// published once more with every sample folded in, so the panels' last figures (the
    /// Replicas `reqs`, the split) are the attempt's whole, not its last tick's.
    pub fn finish(mut self) -> (Vec<RequestSample>, T) {
        self.publish();
        (self.samples, self.tally)
    }
}

#[cfg(test)]
#[path = "attempt_loop_tests.rs"]
mod tests;
