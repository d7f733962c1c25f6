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
    /// Requests in the burst.
    pub conc: u32,
    /// 1-based attempt number.
    pub attempt: u32,
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

/// Sends `conc` requests at once and waits for all of them (or `cancel`).
pub(crate) async fn run_burst_attempt(env: &CellEnv, spec: &BurstCellSpec, cancel: &CancellationToken) -> BurstAttempt {
    let started = Instant::now();
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
    let ctx = Arc::new(ctx);
    let nonce = env.nonce ^ (env.since_start(started) * 1e6) as u64;
    let plan = (0..spec.conc)
        .map(|i| Planned { offset: Duration::ZERO, body: body.render(&format!("[b{nonce:x}.{i}] ")), tag: i })
        .collect();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let publisher = LivePublisher::new(spec.cell, spec.label.clone(), spec.conc);
    let tally = GoodputLive { slo: env.cfg.slo, tally: GoodputTally::default() };
    let mut lp = AttemptLoop::new(env, rx, live, publisher, tally);
    lp.phase(Phase::Measuring, None);
    // The prefix-cache counters before the first request (experiment::decode::prefix).
    let before = crate::cell::prefix_cache::start_round(env).await;
    lp.run_until(run_open_loop(ctx, started, plan, tx, cancel.clone())).await;
    let (samples, _) = lp.finish();
    let mut attempt = summarize_burst(env, spec, started, samples);
    if let (Some(p), false) = (prompt, cancel.is_cancelled()) {
        attempt.prefix_cache = crate::experiment::decode::prefix::check(env, &spec.label, p, before.as_deref()).await;
    }
    attempt
}

fn summarize_burst(env: &CellEnv, spec: &BurstCellSpec, started: Instant, samples: Vec<RequestSample>) -> BurstAttempt {
    let end = samples.iter().map(|s| s.ended_at).max().unwrap_or(started);
    let mut sum = Summarizer::new(started).with_slo(env.cfg.slo);
    for s in &samples {
        sum.add(s, None, end);
    }
    let st = sum.finish(None, spec.conc);
    let makespan = end.saturating_duration_since(started).as_secs_f64();
    let output_tokens: u64 = samples.iter().map(|s| s.output_tokens).sum();
    // Errors and not one token: nothing was measured (docs/reports.md §1.5).
    let measured = st.completed > 0 && !(st.error_count > 0 && output_tokens == 0);
    BurstAttempt {
        attempt: spec.attempt,
        status: if measured { AttemptStatus::Measured } else { AttemptStatus::Errored },
        started_s: env.since_start(started),
        requests: samples.len() as u64,
        success: st.completed,
        error_count: st.error_count,
        errors: st.errors,
        error_examples: st.error_examples,
        reconnects: st.reconnects,
        e2e_ms: st.latency_ms,
        ttft_ms: st.ttft_ms,
        itl_token_ms: per_token_gaps(&samples).summary(),
        tpot_ms: st.tpot_ms,
        output_tokens,
        output_tps: if makespan > 0.0 { output_tokens as f64 / makespan } else { 0.0 },
        makespan_s: makespan,
        target_lost: Vec::new(),
        request_samples: st.records,
        goodput: st.goodput.map(|g| g.finish(makespan)),
        prefix_cache: None,
    }
}
