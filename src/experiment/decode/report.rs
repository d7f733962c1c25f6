//! Turning a finished decode attempt (samples, window, metrics rounds) into its report entry.

use super::spec::DecodeCellSpec;
use super::verdict::{Evidence, capacity, counts_disagree};
use crate::cell::context::CellEnv;
use crate::cell::sample_window::Window;
use crate::cell::summarize::Summarizer;
use crate::load::sample::{RequestSample, TokenSource};
use crate::metrics::poller::MetricsSnapshot;
use crate::metrics::window::window_stats;
use crate::metrics::{EngineDialect, dialect::LiveTokens};
use crate::report::json::{DecodeAttempt, PromValidation};
use crate::report::status::AttemptStatus;
use crate::stats::Reservoir;
use std::sync::Arc;
use tokio::time::Instant;

/// How an attempt ended, as the runner saw it.
#[derive(Debug, Clone)]
pub(crate) struct AttemptEnd {
    /// Attempt start.
    pub started: Instant,
    /// Attempt end (workers stopped).
    pub finished: Instant,
    /// The measurement window, when one ran.
    pub window: Option<Window>,
    /// The warmup hit its timeout.
    pub warmup_timed_out: bool,
    /// Streams producing tokens when the window opened.
    pub streaming_at_start: u32,
    /// Metrics round at the window start.
    pub metrics_start: Option<Arc<MetricsSnapshot>>,
    /// Metrics round at the window end.
    pub metrics_end: Option<Arc<MetricsSnapshot>>,
    /// Client event-loop lag, ms.
    pub lag: Option<Reservoir>,
    /// The operator or a signal stopped the attempt.
    pub interrupted: bool,
}

impl AttemptEnd {
    /// An attempt that started at `started`.
    pub(crate) fn new(started: Instant) -> Self {
        Self {
            started,
            finished: started,
            window: None,
            warmup_timed_out: false,
            streaming_at_start: 0,
            metrics_start: None,
            metrics_end: None,
            lag: None,
            interrupted: false,
        }
    }
}

/// Prometheus counter deltas between two rounds, summed over the replicas in both.
/// `span_s` is the time the counters' readings span (the window, or the scrapes' own times
/// when read from a Prometheus server).
fn validation(
    start: &MetricsSnapshot,
    end: &MetricsSnapshot,
    span_s: f64,
    client_tps: f64,
    dialect: EngineDialect,
) -> PromValidation {
    let live = dialect.live_tokens();
    let mut v = PromValidation {
        server_counter: match live {
            LiveTokens::Counter(name) => Some(name.to_string()),
            _ => None,
        },
        counts_unchecked: live.unchecked_reason(dialect),
        generation_tokens_delta: None,
        generation_tps: None,
        client_over_server: None,
        prefix_hits_delta: None,
        prefix_queries_delta: None,
        preemptions_delta: None,
        kv_usage_peak: None,
        counts_disagree: false,
    };
    let add = |slot: &mut Option<f64>, x: Option<f64>| {
        if let Some(x) = x {
            *slot = Some(slot.unwrap_or(0.0) + x);
        }
    };
    for d in end.deltas_since(start) {
        // Only a counter that moves as tokens are generated can speak for a window.
        add(&mut v.generation_tokens_delta, d.live_generation_tokens.filter(|_| v.server_counter.is_some()));
        add(&mut v.prefix_hits_delta, d.prefix_hits_tokens);
        add(&mut v.prefix_queries_delta, d.prefix_queries_tokens);
        add(&mut v.preemptions_delta, d.preemptions);
    }
    if v.server_counter.is_some() && v.generation_tokens_delta.is_none() {
        // The dialect has a live counter, but not this build (older SGLang).
        (v.server_counter, v.counts_unchecked) = (None, Some(dialect.no_live_counter_reason()));
    }
    v.generation_tps = v.generation_tokens_delta.filter(|_| span_s > 0.0).map(|g| g / span_s);
    v.client_over_server = v.generation_tps.filter(|s| *s > 0.0).map(|s| client_tps / s);
    v
}

/// Builds the report entry of an attempt from the requests `folded` in while it ran and the
/// `samples` still held. The status is `measured` when a window ran and received tokens or
/// had no errors, `errored` otherwise; the runner overrides it for interrupted attempts.
pub(crate) fn build_attempt(
    env: &CellEnv,
    spec: &DecodeCellSpec,
    end: AttemptEnd,
    mut folded: Summarizer,
    samples: Vec<RequestSample>,
) -> DecodeAttempt {
    let cutoff = end.window.map_or(end.finished, |w| w.end);
    for s in &samples {
        folded.add(s, end.window.as_ref(), cutoff);
    }
    // A shard keeps the values behind its summaries for `report merge` (src/report/shard_dists.rs).
    let shard_dists = env.cfg.shard.is_some().then(|| folded.dists());
    let st = folded.finish(end.window, spec.conc);
    let window_s = end.window.map_or(0.0, |w| w.len().as_secs_f64());
    let mut prom = match (&end.metrics_start, &end.metrics_end) {
        (Some(a), Some(b)) => {
            let span_s = crate::cell::scrapes::counter_span(env, a, b).unwrap_or(window_s);
            Some(validation(a, b, span_s, st.aggregate_tps, env.facts.dialect()))
        }
        _ => None,
    };
    // A shard's server-wide figures are compared with the cell's conc over every shard.
    let planned = (!env.cfg.slice().is_whole()).then_some(spec.planned_conc);
    let mut ev = Evidence {
        requested: spec.conc,
        planned,
        streaming_at_start: end.streaming_at_start,
        warmup_timed_out: end.warmup_timed_out,
        completed: st.completed,
        ..Evidence::default()
    };
    // One copy of the poller's history serves the window statistics and the saturation test.
    let history = env.poller.as_ref().map(|p| p.history());
    if let (Some(history), Some(w)) = (&history, end.window) {
        let ws = window_stats(history, w.start, w.end);
        crate::cell::scrapes::note_few_scrapes(env, &spec.label, &ws);
        (ev.running_avg, ev.waiting_avg) = (ws.running_avg_total, ws.waiting_avg_total);
        ev.running_peak = ws.replicas.iter().filter_map(|r| r.running_peak).reduce(|a, b| a + b);
        ev.kv_usage_peak = ws.replicas.iter().filter_map(|r| r.kv_usage_peak).reduce(f64::max);
    }
    if let Some(p) = prom.as_mut() {
        p.kv_usage_peak = ev.kv_usage_peak;
        // A shard's tokens are its slice of what the server counts: no disagreement to tell.
        p.counts_disagree = p.counts_unchecked.is_none()
            && env.cfg.slice().is_whole()
            && counts_disagree(st.window_tokens, p.generation_tokens_delta);
        ev.preemptions = p.preemptions_delta;
    }
    let verdict = end.window.map(|_| capacity(&ev)).unwrap_or_default();
    // Errors and not one token: nothing was measured (docs/reports.md §1.5).
    let measured = end.window.is_some() && !(st.error_count > 0 && st.window_tokens == 0);
    let status = if measured { AttemptStatus::Measured } else { AttemptStatus::Errored };
    let source = st.sources.first().copied().unwrap_or(TokenSource::None);
    let saturation = super::knee::attempt_saturation(
        history.as_ref(),
        end.window,
        env.cfg.poll_interval,
        &st.records,
        &st.window_series,
    );
    DecodeAttempt {
        attempt: spec.attempt,
        status,
        started_s: env.since_start(end.started),
        warmup_s: end.window.map_or(0.0, |w| w.start.saturating_duration_since(end.started).as_secs_f64()),
        warmup_timed_out: end.warmup_timed_out,
        window_s,
        window_tokens: st.window_tokens,
        aggregate_tps: st.aggregate_tps,
        aggregate_source: source,
        per_request_tps: st.per_request_tps,
        decoding_avg: st.decoding_avg,
        user_tps: st.user_tps,
        requested: spec.conc,
        cell_requested: planned,
        running_avg: ev.running_avg,
        waiting_avg: ev.waiting_avg,
        streaming_at_start: end.streaming_at_start,
        capacity_limited: verdict.capacity_limited,
        capacity_limit: verdict.limit,
        turnover: verdict.turnover,
        ttft_ms: st.ttft_ms,
        itl_ms: st.itl_ms,
        itl_token_ms: st.itl_token_ms,
        itl_chunk_ms: st.itl_chunk_ms,
        tpot_ms: st.tpot_ms,
        latency_ms: st.latency_ms,
        errors: st.errors,
        error_count: st.error_count,
        error_examples: st.error_examples,
        reconnects: st.reconnects,
        prometheus: prom,
        client_lag_ms: end.lag.and_then(|mut l| l.summary()),
        target_lost: Vec::new(),
        request_samples: st.records,
        request_outcomes: st.outcomes,
        // Requests are judged against a window: none ran, none was judged.
        goodput: end.window.and(st.goodput).map(|g| g.finish(window_s)),
        saturation,
        rate: None,
        achieved_rate: None,
        levels: Vec::new(),
        prefix_cache: None,
        shard_dists,
    }
}
