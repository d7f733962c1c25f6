//! One attempt of a conversation cell: its `--num-conversations` sessions arrive on the cell's
//! schedule (all at once at `inf`, else `--request-rate` sessions/s), at most `conc` of them
//! running; the replicas' scrapes over the attempt are kept so the prefix-cache counters can
//! be told per turn (`turns::apportion`), and the attempt's figures and `turns` table are
//! built on the extension seam (`experiment::extension`).

use super::live::TurnTally;
use super::script::{Script, for_cell, seed_of};
use super::session::{SessionShape, run_session};
use super::turns;
use crate::cell::attempt_loop::AttemptLoop;
use crate::cell::context::CellEnv;
use crate::cell::control::Phase;
use crate::cell::prefix_cache::prefix_between;
use crate::cell::publisher::LivePublisher;
use crate::config::Rate;
use crate::experiment::extension::summarize;
use crate::experiment::serve::dispatch::each_capped;
use crate::load::live::LiveCounters;
use crate::load::request::Endpoint;
use crate::load::sample::RequestSample;
use crate::load::worker::WorkerCtx;
use crate::metrics::dialect::EngineDialect;
use crate::report::compare::Better;
use crate::report::extension::{ExtensionAttempt, ExtensionFigure};
use crate::report::prefix_cache::PrefixCacheCheck;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Identifies the conversation cell being run.
#[derive(Debug, Clone)]
pub(crate) struct ConversationCell {
    /// Index in the session plan.
    pub cell: usize,
    /// Its place among the conversation cells (each runs its own conversations).
    pub slot: usize,
    /// Label.
    pub label: String,
    /// Most sessions running at once.
    pub conc: u32,
    /// Session arrival rate.
    pub rate: Rate,
    /// 1-based attempt number.
    pub attempt: u32,
    /// The instant the schedule starts on the session's timeline (`--start-at`); None: at once.
    pub opens_at: Option<Instant>,
}

/// Runs every session of `scripts`, session i arriving at `start + offsets[i]` and starting
/// once one of `conc` slots is free, until all ended or `cancel`.
async fn dispatch(
    ctx: Arc<WorkerCtx>,
    shape: Arc<SessionShape>,
    scripts: Arc<Vec<Script>>,
    (start, offsets): (Instant, Vec<Duration>),
    conc: (u32, crate::load::slice::Slice),
    tx: UnboundedSender<RequestSample>,
    cancel: CancellationToken,
) {
    let job = |i: usize| {
        let (ctx, shape, scripts, tx, cancel) =
            (ctx.clone(), shape.clone(), scripts.clone(), tx.clone(), cancel.clone());
        async move { run_session(&ctx, &shape, i as u32, &scripts[i], &tx, &cancel).await }
    };
    each_capped(start, offsets, conc, cancel.clone(), job).await;
}

/// The shape every session of the attempt shares.
fn shape(env: &CellEnv, seed: u64) -> SessionShape {
    let c = &env.cfg.conversation;
    let dataset_len = c.dataset.as_ref().and_then(|d| d.output_len);
    SessionShape {
        model: env.facts.model.clone(),
        max_tokens: dataset_len.unwrap_or(env.cfg.serve.output_len),
        history: c.history,
        think: c.think,
        header: c.session_header.as_deref().and_then(|h| reqwest::header::HeaderName::from_bytes(h.as_bytes()).ok()),
        id_base: seed,
    }
}

/// Runs one attempt of `cell` until every session ended (or `cancel`).
pub(crate) async fn run_attempt(
    env: &CellEnv,
    cell: &ConversationCell,
    cancel: &CancellationToken,
) -> ExtensionAttempt {
    let cfg = &env.cfg.conversation;
    let seed = seed_of(env.cfg.serve.seed, cell.slot, cell.attempt, usize::MAX);
    let shape = Arc::new(shape(env, seed));
    let scripts = Arc::new(for_cell(cfg, env.cfg.serve.seed, cell.slot, cell.attempt, shape.max_tokens));
    // A shard runs conversation k when its slice takes k (issue 27), with its share of --conc.
    let slice = env.cfg.slice();
    let mine = |(i, s): (usize, &Script)| slice.takes(i as u64).then_some(s.users.len());
    let planned_turns: usize = scripts.iter().enumerate().filter_map(mine).sum();
    let offsets =
        crate::experiment::serve::schedule::arrival_offsets(scripts.len(), cell.rate, env.cfg.burstiness, seed);
    let live = Arc::new(LiveCounters::default());
    // The longest history: every message of the longest conversation, about 4 bytes a token.
    let longest = scripts.iter().map(|s| s.users.iter().chain(&s.answers).map(String::len).sum::<usize>()).max();
    let first_token = env.cfg.first_token_limit(longest.unwrap_or(0) as u64 / 4);
    let mut ctx = env.worker_ctx(live.clone(), shape.max_tokens, None, Some(first_token), seed);
    ctx.url = format!("{}{}", env.target.base, Endpoint::Chat.path());
    ctx.queued_waits = true;
    ctx.request_timeout = env.cfg.request_timeout;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let publisher = LivePublisher::new(cell.cell, cell.label.clone(), cell.conc);
    let turns_of: Vec<u32> = scripts.iter().map(|s| s.users.len() as u32).collect();
    let sessions = turns_of.len() as u32;
    let mut lp = AttemptLoop::new(env, rx, live, publisher, TurnTally::new(turns_of)).ends_only();
    lp.live_mut().conversation = Some(crate::cell::control::ConversationLive { sessions, ..Default::default() });
    lp.live_mut().planned_requests = Some(planned_turns as u64);
    lp.live_mut().workload = Some(match &cfg.dataset {
        Some(d) => format!("conversations from {}", d.format.name()),
        None => "generated conversations".into(),
    });
    lp.phase(Phase::Measuring, None);
    let before = env.metrics_now().await;
    let started = crate::experiment::serve::attempt::schedule_start(env, &cell.label, cell.opens_at);
    let cap = (slice.cap(cell.conc), slice);
    let run = dispatch(Arc::new(ctx), shape.clone(), scripts, (started, offsets), cap, tx, cancel.clone());
    lp.run_until(run).await;
    let (samples, _) = lp.finish();
    let after = env.metrics_now().await;
    let history = env.poller.as_ref().map(|p| p.history());
    let intervals = history.map_or_else(Vec::new, |h| super::counters::intervals(&h, started, Instant::now()));
    let at_end = env.facts.dialect() == EngineDialect::LlamaCpp;
    let share = turns::shareable(&samples, shape.history);
    let (counters, moved) = turns::apportion(&samples, &share, &intervals, at_end);
    let table = turns::table(&samples, shape.history, &counters, &env.cfg.slo);
    let check = match (before.as_deref(), after.as_deref()) {
        (Some(b), Some(a)) if !cancel.is_cancelled() => prefix_between(b, a),
        _ => None,
    };
    let prompt: u64 = samples.iter().filter_map(|s| s.prompt_tokens).sum();
    let expected = (prompt > 0).then(|| share.iter().sum::<u64>() as f64 / prompt as f64);
    let check = check.and_then(|(h, q)| PrefixCacheCheck::judge(h, q, expected));
    if let Some(c) = check.filter(|c| c.warm) {
        env.warn(format!(
            "{}: {} (conversations an earlier run left there: a repeated --seed, or the same dataset entries drawn again)",
            cell.label,
            c.warm_note()
        ));
    }
    let figures = figures(&samples, planned_turns, check, expected, moved, &env.cfg.slo);
    let mut attempt = summarize(cell.attempt, started, env.since_start(started), &samples, figures);
    attempt.tables.insert("turns".into(), table);
    attempt
}

/// Median TPOT of the completed requests, ms: each one's (last token − first token) / (tokens −
/// 1), as the `turns` table's `tpot_p50_ms` per turn; the Pareto view's tok/s per user.
fn tpot_p50(samples: &[RequestSample]) -> Option<f64> {
    let mut s = crate::stats::Samples::new();
    samples.iter().filter(|x| x.completed()).filter_map(RequestSample::itl).for_each(|d| s.push(d.as_secs_f64() * 1e3));
    s.percentile(50.0)
}

/// The attempt's own figures.
fn figures(
    samples: &[RequestSample],
    planned_turns: usize,
    check: Option<PrefixCacheCheck>,
    expected: Option<f64>,
    moved: f64,
    slo: &crate::load::slo::Slo,
) -> Vec<ExtensionFigure> {
    let f = |name: &str, unit: &str, better: Better, value: Option<f64>| ExtensionFigure {
        name: name.into(),
        unit: unit.into(),
        better,
        value,
    };
    let ttft_of = |pick: &dyn Fn(&RequestSample) -> bool| {
        let mut s = crate::stats::Samples::new();
        samples.iter().filter(|x| pick(x)).filter_map(RequestSample::ttft).for_each(|d| s.push(d.as_secs_f64() * 1e3));
        s.percentile(50.0)
    };
    let last = samples.iter().map(|s| s.tag).max().unwrap_or(0);
    let good = samples.iter().filter(|s| s.completed() && slo.is_met(s.ttft(), s.itl(), Some(s.e2e()))).count();
    let sent = samples.len();
    let prompts: Vec<f64> = samples.iter().filter_map(|s| s.prompt_tokens).map(|p| p as f64).collect();
    vec![
        f("turns_not_sent", "count", Better::Lower, Some(planned_turns.saturating_sub(sent) as f64)),
        f("ttft_p50_first_turn_ms", "ms", Better::Lower, ttft_of(&|s| s.tag == 0 && s.completed())),
        f("ttft_p50_last_turn_ms", "ms", Better::Lower, ttft_of(&|s| s.tag == last && last > 0 && s.completed())),
        f(crate::report::pareto::TPOT_FIGURE, "ms", Better::Lower, tpot_p50(samples)),
        f(
            "prompt_tokens_mean",
            "tokens",
            Better::Lower,
            (!prompts.is_empty()).then(|| prompts.iter().sum::<f64>() / prompts.len() as f64),
        ),
        f("goodput", "fraction", Better::Higher, (sent > 0).then(|| good as f64 / sent as f64)),
        f("prefix_hit_ratio", "fraction", Better::Higher, check.map(|c| c.hit_ratio)),
        f("expected_prefix_hit_ratio", "fraction", Better::Higher, expected),
        f("warm_cache", "0/1", Better::Lower, check.map(|c| f64::from(u8::from(c.warm)))),
        f("prefix_hits_moved", "tokens", Better::Lower, check.map(|_| moved)),
    ]
}
