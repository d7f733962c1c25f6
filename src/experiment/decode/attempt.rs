//! One attempt of a sustained-decode cell: closed-loop streams (or open-loop arrivals at a
//! rate), warmup until the engine has admitted them, a measurement window, then the streams
//! are cut and the attempt summarised. While the window runs, the operator's knob (`+` / `-`)
//! moves the load: each step opens a new level with a full window of its own
//! ([`super::levels`]); the attempt's figures stay those of the planned level.

use super::admission::{Admission, AdmissionTracker, Observation};
use super::fit::{Wanted, fit};
use super::levels::Levels;
use super::load::Load;
use super::report::{AttemptEnd, build_attempt};
use super::spec::DecodeCellSpec;
use crate::cell::attempt_loop::{AttemptLoop, PlainTally, Wake};
use crate::cell::context::CellEnv;
use crate::cell::control::{Knob, Phase, RunnerEvent};
use crate::cell::goodput::GoodputTally;
use crate::cell::publisher::LivePublisher;
use crate::cell::sample_window::Window;
use crate::cell::summarize::Summarizer;
use crate::load::live::LiveCounters;
use crate::load::request::{BodyOptions, BodyTemplate};
use crate::metrics::poller::MetricsSnapshot;
use crate::report::json::DecodeAttempt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

#[path = "attempt_fixed.rs"]
mod fixed;
#[path = "attempt_stop.rs"]
mod stop;

pub(crate) use stop::STOP_GRACE;

struct Run<'a> {
    env: &'a CellEnv,
    spec: &'a DecodeCellSpec,
    /// Longest wait of a stream for its first token while none of the cell has one.
    first_token: Duration,
    lp: AttemptLoop<'a>,
    load: Load,
    told_silent: bool,
    /// Requests that ended while the window ran, folded in as they finish (their token
    /// timelines dropped), so a long window keeps no per-token data.
    folded: Summarizer,
    started: Instant,
    /// Knob steps from the runner (None: no knob, or the runner is gone).
    knob: Option<UnboundedReceiver<Knob>>,
    /// The load levels, once the window opened.
    levels: Option<Levels>,
    /// Metrics round and requests sent when the planned level closed (first knob step).
    planned_close: Option<(Option<Arc<MetricsSnapshot>>, u64)>,
    /// Stops the workers starting requests (the workers' `no_more`), for `--drain`.
    no_more: CancellationToken,
}

/// What woke the measuring loop.
enum Step {
    Wake(Wake),
    Knob(Knob),
}

impl Run<'_> {
    /// True once every stream has stopped (permanent errors, or cut).
    fn all_stopped(&mut self) -> bool {
        let tasks = self.load.tasks();
        while tasks.try_join_next().is_some() {}
        tasks.is_empty()
    }

    /// Knob steps that arrive before the window opens are dropped, with a log line.
    fn ignore_knob(&mut self) {
        let Some(rx) = self.knob.as_mut() else { return };
        while let Ok(k) = rx.try_recv() {
            let label = &self.spec.label;
            self.env.emit(RunnerEvent::Log(format!("{label}: knob {} ignored: the window has not opened", k.sign())));
        }
    }

    /// Warms up until admitted, timed out, every stream died, or `cancel`.
    async fn warmup(&mut self, cancel: &CancellationToken) -> Option<bool> {
        if let Some(at) = self.spec.opens_at {
            return self.warmup_until(cancel, at).await;
        }
        let timeout = self.env.cfg.decode.warmup_timeout;
        self.lp.phase(Phase::Warming, Some(timeout));
        let start = Instant::now();
        let mut tracker = AdmissionTracker::default();
        let mut admitted_at: Option<Instant> = None;
        loop {
            if cancel.is_cancelled() || self.all_stopped() {
                return None;
            }
            self.ignore_knob();
            let now = Instant::now();
            if let Some(t) = admitted_at {
                if now.saturating_duration_since(t) >= self.env.cfg.decode.settle {
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
        if self.load.is_open() {
            // Open loop: in flight follows the arrivals, not a requested count; the first
            // token starts the settle time.
            return if t.tokens > 0 { Admission::Full } else { Admission::NotYet };
        }
        let metrics =
            self.env.metrics().and_then(|m| Some((m.seq, m.running_total()?, m.waiting_total().unwrap_or(0.0))));
        let max_ttft = self.lp.live().ttft_max_ms().filter(|ms| ms.is_finite());
        tracker.check(&Observation {
            requested: self.spec.conc,
            in_flight: t.in_flight,
            streaming: t.streaming,
            completed: t.completed,
            max_ttft: max_ttft.map(|ms| crate::units::secs(ms / 1e3)),
            metrics,
            now,
            sharded: !self.spec.slice.is_whole(),
        })
    }

    /// Measures for the window (or until every stream died, or `cancel`); returns its end. A
    /// knob step starts a new level and a full window after it.
    async fn measure(&mut self, cancel: &CancellationToken, start: Instant) -> Instant {
        let window = self.env.cfg.window;
        self.lp.phase(Phase::Measuring, Some(window));
        self.levels = Some(Levels::planned(self.load.level(), start, self.lp.live().totals(), self.started));
        let mut end = start + window;
        loop {
            match self.next_step(cancel, end).await {
                Step::Knob(k) => {
                    if self.turn(k).await {
                        end = Instant::now() + window;
                    }
                }
                Step::Wake(Wake::Cancelled) => return Instant::now().min(end),
                Step::Wake(Wake::Deadline) => return end,
                Step::Wake(Wake::Tick) if self.all_stopped() => return Instant::now().min(end),
                Step::Wake(Wake::Tick) => self.fold(start, end),
            }
        }
    }

    async fn next_step(&mut self, cancel: &CancellationToken, end: Instant) -> Step {
        let Some(rx) = self.knob.as_mut() else { return Step::Wake(self.lp.wait(cancel, Some(end)).await) };
        tokio::select! {
            w = self.lp.wait(cancel, Some(end)) => Step::Wake(w),
            k = rx.recv() => match k {
                Some(k) => Step::Knob(k),
                None => {
                    self.knob = None;
                    Step::Wake(Wake::Tick)
                }
            },
        }
    }

    /// Applies one knob step at once: the load moves, the current level closes and a new one
    /// opens. False when the load cannot move that way (said in the log).
    async fn turn(&mut self, k: Knob) -> bool {
        let Some(levels) = self.levels.as_ref() else { return false };
        let (label, before, first) = (self.spec.label.clone(), levels.load(), !levels.turned());
        // The planned level's closing round is taken before its load changes.
        let close = match first {
            true => Some((self.env.metrics_now().await, self.lp.live().totals().started)),
            false => None,
        };
        let load = match self.load.turn(k, self.env.cfg.decode.knob_step) {
            Ok(load) => load,
            Err(why) => {
                self.env.emit(RunnerEvent::Log(format!("{label}: knob {}: {why}", k.sign())));
                return false;
            }
        };
        if close.is_some() {
            self.planned_close = close;
        }
        let (now, totals) = (Instant::now(), self.lp.live().totals());
        let levels = self.levels.get_or_insert_with(|| unreachable!("checked above"));
        levels.step(now, load, format!("operator {}", k.sign()), totals, self.started);
        let points = levels.points(&totals, now);
        let view = self.lp.live_mut();
        view.levels = points;
        view.phase_started = Some(now);
        if !self.load.is_open() {
            view.requested = load.conc.unwrap_or(view.requested);
        }
        let (from, to) = (before.label(), load.label());
        self.env.emit(RunnerEvent::Log(format!("{label}: knob {}: load {from} -> {to}", k.sign())));
        true
    }

    /// Folds the requests that ended before now into the summary and the levels. The window's
    /// real end is now or later, so each is judged against the planned window exactly as it
    /// would be at the end; requests still running, or ending at this very instant, wait for
    /// the end.
    fn fold(&mut self, start: Instant, end: Instant) {
        let now = Instant::now();
        let planned_end = self.levels.as_ref().and_then(Levels::planned_end).unwrap_or(end);
        let planned = Window { start, end: planned_end };
        for s in self.lp.take_ended_before(now) {
            self.folded.add(&s, Some(&planned), planned.end);
            if let Some(levels) = self.levels.as_mut() {
                levels.add(&s, end);
            }
        }
        if let Some(levels) = self.levels.as_ref().filter(|l| l.turned()) {
            let points = levels.points(&self.lp.live().totals(), now);
            self.lp.live_mut().levels = points;
        }
        let (good, judged) = self.lp.live().flight_goodput(now);
        let view = self.lp.live_mut();
        view.goodput = self.folded.goodput().map(|g| GoodputTally { good: g.good + good, judged: g.judged + judged });
        view.goodput_running = judged;
    }
}

/// `max_tokens` of the cell's requests: --max-tokens, else a stream that outlasts the window
/// (closed loop, shortened to what the context length leaves) or --output tokens (open loop, so
/// requests finish and arrivals replace them); the rule is `fit`'s.
fn max_tokens(env: &CellEnv, prompt_tokens: u64) -> u64 {
    fit(env.facts.max_model_len, prompt_tokens, Wanted::decode(&env.cfg)).max_tokens()
}

/// Starts the cell's load and the loop that receives it.
fn start<'a>(
    env: &'a CellEnv,
    spec: &'a DecodeCellSpec,
    prompt: &crate::cell::facts::Prompt,
    stop: &CancellationToken,
    knob: Option<UnboundedReceiver<Knob>>,
) -> Run<'a> {
    let started = Instant::now();
    let max_tokens = max_tokens(env, prompt.tokens);
    let body = BodyTemplate::new(
        &BodyOptions { endpoint: env.cfg.endpoint, model: env.facts.model.clone(), max_tokens, ignore_eos: true },
        &prompt.text,
    );
    // In-flight streams are judged on their tokens so far: sustained streams outlast the
    // window, so the live goodput would otherwise stay `0/0` until the cell ends.
    let live = Arc::new(LiveCounters { slo: Some(env.cfg.slo), ..LiveCounters::default() });
    let nonce_base = env.nonce ^ (env.since_start(started) * 1e6) as u64 ^ ((spec.cell as u64) << 40);
    let first_token = env.cfg.first_token_limit(prompt.tokens);
    let mut ctx = env.worker_ctx(live.clone(), max_tokens, None, Some(first_token), nonce_base);
    // Streams beyond what the engine runs at once queue behind the running ones: they wait.
    ctx.queued_waits = true;
    let no_more = ctx.no_more.clone();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let seed = env.cfg.routing.seed.wrapping_add(spec.cell as u64).wrapping_add(u64::from(spec.attempt) << 32);
    let open = spec.rate.map(|r| (r, env.cfg.burstiness, seed));
    let load = Load::start(Arc::new(ctx), body, (spec.conc, spec.slice), open, tx, stop.clone());
    let publisher = LivePublisher::new(spec.cell, spec.label.clone(), spec.conc);
    let lp = AttemptLoop::new(env, rx, live, publisher, PlainTally);
    let folded = Summarizer::new(started).with_slo(env.cfg.slo);
    Run {
        env,
        spec,
        first_token,
        lp,
        load,
        told_silent: false,
        folded,
        started,
        knob,
        levels: None,
        planned_close: None,
        no_more,
    }
}

/// Runs one attempt of a decode cell until its window closes or `cancel` fires; `knob`
/// carries the operator's load steps.
pub async fn run_decode_attempt(
    env: &CellEnv,
    spec: &DecodeCellSpec,
    cancel: &CancellationToken,
    knob: Option<UnboundedReceiver<Knob>>,
) -> DecodeAttempt {
    let Some(prompt) = env.facts.prompt(spec.ctx).cloned() else {
        let started = Instant::now();
        let none = Summarizer::new(started).with_slo(env.cfg.slo);
        return build_attempt(env, spec, AttemptEnd::new(started), none, Vec::new());
    };
    let stop = cancel.child_token();
    // The prefix-cache counters before the first request (experiment::decode::prefix).
    let before = crate::cell::prefix_cache::start_round(env).await;
    let mut run = start(env, spec, &prompt, &stop, knob);
    let lag = crate::cell::lag::spawn(Duration::from_millis(10), stop.clone(), run.lp.live_arc());
    let mut end = AttemptEnd::new(run.started);
    let mut sent = None;
    let mut we = run.started;
    // Requests that end during the warmup end before the window opens (after the warmup
    // returns): only their first and last marks are ever read, so their timelines are not kept.
    run.lp.set_ends_only(true);
    let warmed = run.warmup(cancel).await;
    run.lp.set_ends_only(false);
    if let Some(timed_out) = warmed {
        end.warmup_timed_out = timed_out;
        let ws = Instant::now();
        end.streaming_at_start = run.lp.live().totals().streaming.max(0) as u32;
        end.metrics_start = env.metrics_now().await;
        let sent_start = run.lp.live().totals().started;
        we = run.measure(cancel, ws).await;
        let (metrics_end, sent_end) = match run.planned_close.take() {
            Some(closed) => closed,
            None => (env.metrics_now().await, run.lp.live().totals().started),
        };
        end.metrics_end = metrics_end;
        let planned_end = run.levels.as_ref().and_then(Levels::planned_end).unwrap_or(we);
        end.window = Some(Window { start: ws, end: planned_end });
        sent = Some(sent_end.saturating_sub(sent_start));
    }
    run.lp.phase(Phase::Draining, None);
    run.stop_workers(&stop).await;
    end.lag = lag.await.ok();
    end.finished = Instant::now();
    end.interrupted = cancel.is_cancelled();
    let prefix = match end.interrupted {
        true => None,
        false => super::prefix::check(env, &spec.label, &prompt, before.as_deref()).await,
    };
    DecodeAttempt { prefix_cache: prefix, ..finish(env, spec, run, end, sent, we) }
}

/// The report entry: the planned level's figures, the rate, and the levels when turned.
fn finish(
    env: &CellEnv,
    spec: &DecodeCellSpec,
    run: Run<'_>,
    end: AttemptEnd,
    sent: Option<u64>,
    we: Instant,
) -> DecodeAttempt {
    let (samples, _) = run.lp.finish();
    let mut levels = run.levels;
    if let Some(l) = levels.as_mut() {
        samples.iter().for_each(|s| l.add(s, we));
    }
    let window_s = end.window.map(|w| w.len().as_secs_f64());
    let mut a = build_attempt(env, spec, end, run.folded, samples);
    if spec.rate.is_some() {
        a.rate = spec.rate;
        a.achieved_rate = sent.zip(window_s).filter(|(_, w)| *w > 0.0).map(|(n, w)| n as f64 / w);
    }
    if let Some(l) = levels.filter(Levels::turned) {
        a.levels = l.report(env, &a, we);
    }
    a
}
