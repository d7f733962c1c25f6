//! One attempt of a sustained-decode cell: closed-loop streams, warmup until the engine has
//! admitted them, a measurement window, then the streams are cut and the attempt summarised.

use super::admission::{Admission, AdmissionTracker, Observation};
use super::report::{AttemptEnd, build_attempt};
use super::spec::{DecodeCellSpec, sustained_max_tokens};
use crate::cell::attempt_loop::{AttemptLoop, PlainTally, Wake};
use crate::cell::context::CellEnv;
use crate::cell::control::{Phase, RunnerEvent};
use crate::cell::publisher::LivePublisher;
use crate::cell::sample_window::Window;
use crate::cell::summarize::Summarizer;
use crate::load::live::LiveCounters;
use crate::load::request::{BodyOptions, BodyTemplate};
use crate::load::worker::spawn_closed_loop;
use crate::report::json::DecodeAttempt;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Longest wait for the streams to end once they are told to stop.
const STOP_GRACE: Duration = Duration::from_secs(10);

struct Run<'a> {
    env: &'a CellEnv,
    spec: &'a DecodeCellSpec,
    /// Longest wait of a stream for its first token while none of the cell has one.
    first_token: Duration,
    lp: AttemptLoop<'a>,
    workers: JoinSet<()>,
    told_silent: bool,
    /// Requests that ended while the window ran, folded in as they finish (their token
    /// timelines dropped), so a long window keeps no per-token data.
    folded: Summarizer,
}

impl Run<'_> {
    /// True once every stream has stopped (permanent errors, or cut).
    fn all_stopped(&mut self) -> bool {
        while self.workers.try_join_next().is_some() {}
        self.workers.is_empty()
    }

    /// Warms up until admitted, timed out, every stream died, or `cancel`.
    async fn warmup(&mut self, cancel: &CancellationToken) -> Option<bool> {
        let timeout = self.env.cfg.warmup_timeout;
        self.lp.phase(Phase::Warming, Some(timeout));
        let start = Instant::now();
        let mut tracker = AdmissionTracker::default();
        let mut admitted_at: Option<Instant> = None;
        loop {
            if cancel.is_cancelled() || self.all_stopped() {
                return None;
            }
            let now = Instant::now();
            if let Some(t) = admitted_at {
                if now.saturating_duration_since(t) >= self.env.cfg.settle {
                    return Some(false);
                }
            } else if self.admission(&mut tracker, now) != Admission::NotYet {
                admitted_at = Some(now);
                continue;
            }
            if now.saturating_duration_since(start) >= timeout && !self.still_silent(start, now, timeout) {
                return Some(true);
            }
            if self.lp.wait(cancel, None).await == Wake::Cancelled {
                return None;
            }
        }
    }

    /// True while no stream has a token yet, streams still wait for one and their first-token
    /// timeout has not passed: opening a window then would measure a silent server as 0 tok/s,
    /// so the warmup waits on until a token arrives or the streams fail.
    fn still_silent(&mut self, start: Instant, now: Instant, timeout: Duration) -> bool {
        let t = self.lp.live().totals();
        let waiting = t.tokens == 0 && t.in_flight > 0;
        let limit = self.first_token + Duration::from_secs(1);
        if !waiting || now.saturating_duration_since(start) >= limit {
            return false;
        }
        if !self.told_silent {
            self.told_silent = true;
            let (label, wait) = (&self.spec.label, self.first_token.as_secs_f64());
            self.env.emit(RunnerEvent::Log(format!(
                "{label}: no first token after {:.0} s; waiting up to {wait:.0} s (--first-token-timeout)",
                timeout.as_secs_f64()
            )));
        }
        true
    }

    fn admission(&self, tracker: &mut AdmissionTracker, now: Instant) -> Admission {
        let t = self.lp.live().totals();
        let metrics =
            self.env.metrics().and_then(|m| Some((m.seq, m.running_total()?, m.waiting_total().unwrap_or(0.0))));
        let max_ttft = self.lp.live().ttft_max_ms().filter(|ms| ms.is_finite());
        tracker.check(&Observation {
            requested: self.spec.conc,
            in_flight: t.in_flight,
            streaming: t.streaming,
            max_ttft: max_ttft.map(|ms| Duration::from_secs_f64(ms.max(0.0) / 1e3)),
            metrics,
            now,
        })
    }

    /// Measures for the window (or until every stream died, or `cancel`); returns its end.
    async fn measure(&mut self, cancel: &CancellationToken, start: Instant) -> Instant {
        let window = self.env.cfg.window;
        self.lp.phase(Phase::Measuring, Some(window));
        let end = start + window;
        let planned = Window { start, end };
        loop {
            match self.lp.wait(cancel, Some(end)).await {
                Wake::Cancelled => return Instant::now().min(end),
                Wake::Deadline => return end,
                Wake::Tick if self.all_stopped() => return Instant::now().min(end),
                Wake::Tick => self.fold(&planned),
            }
        }
    }

    /// Folds the requests that ended before now into the summary. The window's real end is
    /// now or later, so each is judged against the planned window exactly as it would be at
    /// the end; requests still running, or ending at this very instant, wait for the end.
    fn fold(&mut self, planned: &Window) {
        let now = Instant::now();
        for s in self.lp.take_ended_before(now) {
            self.folded.add(&s, Some(planned), planned.end);
        }
        self.lp.live_mut().goodput = self.folded.goodput();
    }

    async fn stop_workers(&mut self, stop: &CancellationToken) {
        stop.cancel();
        let grace_end = Instant::now() + STOP_GRACE;
        let workers = &mut self.workers;
        let joined = async { while workers.join_next().await.is_some() {} };
        if self.lp.run_until(tokio::time::timeout_at(grace_end, joined)).await.is_err() {
            self.workers.abort_all();
        }
    }
}

/// Runs one attempt of a decode cell until its window closes or `cancel` fires.
pub async fn run_decode_attempt(env: &CellEnv, spec: &DecodeCellSpec, cancel: &CancellationToken) -> DecodeAttempt {
    let started = Instant::now();
    let Some(prompt) = env.facts.prompt(spec.ctx).cloned() else {
        let none = Summarizer::new(started).with_slo(env.cfg.slo);
        return build_attempt(env, spec, AttemptEnd::no_prompt(started), none, Vec::new());
    };
    let floor = env.cfg.min_stream_tokens;
    let max_tokens =
        env.cfg.max_tokens.unwrap_or_else(|| sustained_max_tokens(env.facts.max_model_len, prompt.tokens, floor));
    let body = BodyTemplate::new(
        &BodyOptions { endpoint: env.cfg.endpoint, model: env.facts.model.clone(), max_tokens, ignore_eos: true },
        &prompt.text,
    );
    let live = Arc::new(LiveCounters::default());
    let nonce_base = (env.since_start(started) * 1e6) as u64 ^ ((spec.cell as u64) << 40);
    let first_token = env.cfg.first_token_limit(prompt.tokens);
    let mut ctx = env.worker_ctx(live.clone(), max_tokens, None, Some(first_token), nonce_base);
    // Streams beyond what the engine runs at once queue behind the running ones: they wait.
    ctx.queued_waits = true;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let stop = cancel.child_token();
    let workers = spawn_closed_loop(Arc::new(ctx), body, spec.conc, tx, stop.clone());
    let lag = crate::cell::lag::spawn(Duration::from_millis(10), stop.clone(), live.clone());
    let publisher = LivePublisher::new(spec.cell, spec.label.clone(), spec.conc);
    let lp = AttemptLoop::new(env, rx, live, publisher, PlainTally);
    let folded = Summarizer::new(started).with_slo(env.cfg.slo);
    let mut run = Run { env, spec, first_token, lp, workers, told_silent: false, folded };
    let mut end = AttemptEnd::new(started, prompt.tokens);
    if let Some(timed_out) = run.warmup(cancel).await {
        end.warmup_timed_out = timed_out;
        let ws = Instant::now();
        end.streaming_at_start = run.lp.live().totals().streaming.max(0) as u32;
        end.metrics_start = env.metrics_now().await;
        let we = run.measure(cancel, ws).await;
        end.metrics_end = env.metrics_now().await;
        end.window = Some(Window { start: ws, end: we });
    }
    run.lp.phase(Phase::Draining, None);
    run.stop_workers(&stop).await;
    end.lag = lag.await.ok();
    end.finished = Instant::now();
    end.interrupted = cancel.is_cancelled();
    build_attempt(env, spec, end, run.folded, run.lp.finish().0)
}
