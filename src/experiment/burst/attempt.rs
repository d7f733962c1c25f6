//! Phase 3: a finite burst of requests per cell, all sent at once and measured end to end.

use crate::cell::attempt_loop::{AttemptLoop, Tally};
use crate::cell::context::CellEnv;
use crate::cell::control::LiveAttempt;
use crate::cell::control::Phase;
use crate::cell::goodput::{GoodputTally, judge};
use crate::cell::publisher::LivePublisher;
use crate::cell::sample_window::per_token_gaps;
use crate::cell::summarize::Summarizer;
use crate::load::live::LiveCounters;
use crate::load::request::{BodyOptions, BodyTemplate};
use crate::load::sample::RequestSample;
use crate::load::worker::{Planned, run_open_loop};
use crate::report::json::BurstAttempt;
use crate::report::status::AttemptStatus;
use crate::stats::Slo;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Identifies the burst cell being run.
#[derive(Debug, Clone)]
pub(crate) struct BurstCellSpec {
    /// Index in the session plan.
    pub cell: usize,
    /// Label.
    pub label: String,
    /// Context size, tokens.
    pub ctx: u64,
    /// Requests in the burst (the whole plan's).
    pub conc: u32,
    /// 1-based attempt number.
    pub attempt: u32,
    /// The instant the burst is sent on the session's timeline (`--start-at`), the same on
    /// every shard; None: at once.
    pub opens_at: Option<Instant>,
}

/// Judges each request of the burst as it ends, for the live view.
struct GoodputLive {
    slo: Slo,
    tally: GoodputTally,
}

impl Tally for GoodputLive {
    fn extra(&mut self, s: &RequestSample, _replica: Option<&str>, live: &mut LiveAttempt) {
        self.tally.add(judge(s, &self.slo, None, s.ended_at));
        live.goodput = Some(self.tally);
    }
}

/// Sends `conc` requests at once (a shard its share, `Slice::share`, at the timeline's
/// instant) and waits for all of them (or `cancel`).
pub(crate) async fn run_burst_attempt(env: &CellEnv, spec: &BurstCellSpec, cancel: &CancellationToken) -> BurstAttempt {
    let prompt = env.facts.prompt(spec.ctx);
    let text = prompt.map(|p| p.text.clone()).unwrap_or_default();
    let first_token = env.cfg.first_token_limit(prompt.map_or(spec.ctx, |p| p.tokens));
    let opts = BodyOptions {
        endpoint: env.cfg.endpoint,
        model: env.facts.model.clone(),
        max_tokens: env.cfg.decode.burst_tokens,
        ignore_eos: true,
    };
    let body = BodyTemplate::new(&opts, &text);
    let live = Arc::new(LiveCounters::default());
    let mut ctx = env.worker_ctx(live.clone(), env.cfg.decode.burst_tokens, None, Some(first_token), 0);
    // Requests of a burst queue behind each other; only a burst that gets no token fails.
    ctx.queued_waits = true;
    ctx.request_timeout = env.cfg.request_timeout;
    let ctx = Arc::new(ctx);
    let nonce = env.nonce ^ (env.since_start(Instant::now()) * 1e6) as u64;
    let plan = (0..env.cfg.slice().share(spec.conc))
        .map(|i| Planned { offset: Duration::ZERO, body: body.render(&format!("[b{nonce:x}.{i}] ")), tag: i })
        .collect();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let publisher = LivePublisher::new(spec.cell, spec.label.clone(), spec.conc);
    let tally = GoodputLive { slo: env.cfg.slo, tally: GoodputTally::default() };
    let mut lp = AttemptLoop::new(env, rx, live, publisher, tally);
    lp.phase(Phase::Measuring, None);
    // The prefix-cache counters before the first request (experiment::decode::prefix).
    let before = crate::cell::prefix_cache::start_round(env).await;
    let started = crate::experiment::serve::attempt::schedule_start(env, &spec.label, spec.opens_at);
    lp.run_until(run_open_loop(ctx, started, plan, tx, cancel.clone())).await;
    let (samples, _) = lp.finish();
    let (started_s, sharded) = (env.since_start(started), env.cfg.shard.is_some());
    let mut attempt = summarize_burst(&samples, (started, started_s), env.cfg.slo, spec.attempt, sharded);
    if let (Some(p), false) = (prompt, cancel.is_cancelled()) {
        attempt.prefix_cache = crate::experiment::decode::prefix::check(env, &spec.label, p, before.as_deref()).await;
    }
    attempt
}

/// The burst attempt `attempt` of `samples`, sent at `started` (`started_s` after the session's
/// start), judged against `slo`; with its distributions when `sharded` (a shard's report).
pub(crate) fn summarize_burst(
    samples: &[RequestSample],
    (started, started_s): (Instant, f64),
    slo: Slo,
    attempt: u32,
    sharded: bool,
) -> BurstAttempt {
    let end = samples.iter().map(|s| s.ended_at).max().unwrap_or(started);
    let mut sum = Summarizer::new(started).with_slo(slo);
    for s in samples {
        sum.add(s, None, end);
    }
    let gaps = per_token_gaps(samples);
    // A shard keeps its distributions for `report merge` (src/report/shard_dists.rs).
    let shard_dists = sharded.then(|| crate::report::shard_dists::ShardDists {
        itl_token_ms: crate::stats::SavedGapDist::of(&gaps),
        ..sum.dists()
    });
    let st = sum.finish(None, samples.len() as u32);
    let makespan = end.saturating_duration_since(started).as_secs_f64();
    let output_tokens: u64 = samples.iter().map(|s| s.output_tokens).sum();
    // Errors and not one token: nothing was measured (docs/reports.md §1.5).
    let measured = st.completed > 0 && !(st.error_count > 0 && output_tokens == 0);
    BurstAttempt {
        attempt,
        status: if measured { AttemptStatus::Measured } else { AttemptStatus::Errored },
        started_s,
        requests: samples.len() as u64,
        success: st.completed,
        error_count: st.error_count,
        errors: st.errors,
        error_examples: st.error_examples,
        reconnects: st.reconnects,
        e2e_ms: st.latency_ms,
        ttft_ms: st.ttft_ms,
        itl_token_ms: gaps.summary(),
        tpot_ms: st.tpot_ms,
        output_tokens,
        output_tps: if makespan > 0.0 { output_tokens as f64 / makespan } else { 0.0 },
        makespan_s: makespan,
        target_lost: Vec::new(),
        request_samples: st.records,
        goodput: st.goodput.map(|g| g.finish(makespan)),
        prefix_cache: None,
        shard_dists,
    }
}
