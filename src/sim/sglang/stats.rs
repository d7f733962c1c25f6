//! The numbers of a replica's SGLang `/metrics` page, moved when SGLang's own code moves them
//! (docs/protocol.md §2.1): token counters and `e2e` at a request's end, `realtime_tokens_total`
//! every step, and scheduler gauges only when SGLang logs them.

use crate::sim::stats::Hist;
use std::time::{Duration, Instant};

/// SGLang's default `time_to_first_token_seconds` bounds, seconds (`TokenizerMetricsCollector`).
pub(crate) const TTFT_BOUNDS: &[f64] =
    &[0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0, 40.0, 60.0, 80.0, 100.0, 200.0, 400.0];
/// SGLang's default `inter_token_latency_seconds` bounds, seconds.
pub(crate) const ITL_BOUNDS: &[f64] = &[
    0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100, 0.200, 0.400,
    0.600, 0.800, 1.0, 2.0, 4.0, 6.0, 8.0,
];
/// SGLang's default `e2e_request_latency_seconds` bounds, seconds.
pub(crate) const E2E_BOUNDS: &[f64] = &[
    0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0, 40.0, 60.0, 80.0, 100.0, 200.0, 400.0, 600.0, 1200.0,
    1800.0, 2400.0,
];

/// Decode steps between two decode-stats logs (SGLang `--decode-log-interval`, default 40).
pub(crate) const DECODE_LOG_INTERVAL: u64 = 40;
/// An idle scheduler logs its gauges again this long after the last log (`check_memory`).
pub(crate) const IDLE_LOG_AFTER: Duration = Duration::from_secs(30);

/// Per-request totals, split by SGLang's `is_streaming` label (index 0 = false, 1 = true).
#[derive(Debug, Clone, Default)]
pub struct Finished {
    /// Prompt tokens of finished requests (aborted running ones included), tokens.
    pub prompt_tokens: [u64; 2],
    /// Generated tokens of those requests, tokens.
    pub generation_tokens: [u64; 2],
    /// Requests that reached the tokenizer finished (`num_requests_total`).
    pub requests: [u64; 2],
    /// Prompt tokens served from the prefix cache, tokens (`cache_source="total"`).
    pub cached_tokens: u64,
}

/// The scheduler gauges as last logged.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Logged {
    /// `num_running_reqs`.
    pub running: usize,
    /// `num_queue_reqs`.
    pub waiting: usize,
    /// `num_used_tokens` (= `kv_used_tokens`), tokens.
    pub used_tokens: usize,
    /// `token_usage`, fraction 0..1.
    pub token_usage: f64,
    /// `gen_throughput`, tok/s over the last decode-log interval (0 in an idle log).
    pub gen_throughput: f64,
    /// `cache_hit_rate` of the last prefill batch; a decode log sets 0.
    pub cache_hit_rate: f64,
    /// `num_retracted_reqs`: retractions since the previous log.
    pub retracted: u64,
}

/// What one engine step did, as the SGLang scheduler would log it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Step {
    /// Prompt tokens computed (not served from cache) in the step, tokens.
    pub prefill_tokens: u64,
    /// Tokens sampled by requests past their first token, tokens.
    pub decode_tokens: u64,
    /// Requests running after the step.
    pub running: usize,
    /// Requests waiting after the step.
    pub waiting: usize,
    /// KV tokens held by requests, tokens.
    pub used_tokens: usize,
    /// KV pool usage, fraction 0..1.
    pub token_usage: f64,
}

/// Everything the SGLang page needs beyond the shared [`ReplicaStats`](crate::sim::stats::ReplicaStats).
#[derive(Debug, Clone)]
pub struct SglangStats {
    /// Time to first token by `is_streaming`.
    pub ttft: [Hist; 2],
    /// Gap between tokens.
    pub itl: Hist,
    /// Arrival to finish (or abort) by `is_streaming`.
    pub e2e: [Hist; 2],
    /// Counters of `observe_one_finished_request`.
    pub finished: Finished,
    /// `num_aborted_requests_total`: client aborts of requests still queued or running.
    pub aborted: u64,
    /// `realtime_tokens_total{mode}`: prefill_compute, prefill_cache, decode; tokens.
    pub realtime: [u64; 3],
    /// Gauges as last logged.
    pub logged: Logged,
    /// When the gauges were last logged.
    pub last_log: Option<Instant>,
    cache_hits_pending: u64,
    retracted_pending: u64,
    decode_steps: u64,
    decode_tokens_since_log: u64,
    last_decode_log: Option<Instant>,
}

impl Default for SglangStats {
    fn default() -> Self {
        Self {
            ttft: [Hist::new(TTFT_BOUNDS), Hist::new(TTFT_BOUNDS)],
            itl: Hist::new(ITL_BOUNDS),
            e2e: [Hist::new(E2E_BOUNDS), Hist::new(E2E_BOUNDS)],
            finished: Finished::default(),
            aborted: 0,
            realtime: [0; 3],
            logged: Logged::default(),
            last_log: None,
            cache_hits_pending: 0,
            retracted_pending: 0,
            decode_steps: 0,
            decode_tokens_since_log: 0,
            last_decode_log: None,
        }
    }
}

/// What the engine knows about a request when it leaves: finished or cut by its client.
#[derive(Debug, Clone, Copy)]
pub struct Leaving {
    /// The request streamed its answer.
    pub stream: bool,
    /// Prompt tokens.
    pub prompt: u64,
    /// Tokens generated.
    pub generated: u64,
    /// Prompt tokens served from the prefix cache at first admission.
    pub cached: u64,
    /// Arrival to now.
    pub e2e: Duration,
}

impl SglangStats {
    /// A request was admitted with `cached` prompt tokens already in the cache (they count in
    /// the next prefill log, `#cached-token`).
    pub fn on_admission(&mut self, cached: u64) {
        self.cache_hits_pending += cached;
    }

    /// A running request was retracted (preempted).
    pub fn on_retract(&mut self) {
        self.retracted_pending += 1;
    }

    /// The tokenizer saw the request finish: `observe_one_finished_request`.
    pub fn on_finish(&mut self, r: Leaving) {
        let i = usize::from(r.stream);
        self.finished.prompt_tokens[i] += r.prompt;
        self.finished.generation_tokens[i] += r.generated;
        self.finished.requests[i] += 1;
        self.finished.cached_tokens += r.cached;
        self.e2e[i].observe(r.e2e);
    }

    /// The client went away. `abort_request` counts the abort; a request already running is
    /// finished by the scheduler with reason `abort` and so also counts as finished, its
    /// tokens included; one still queued is dropped without that (`_handle_abort_req`).
    pub fn on_abort(&mut self, r: Leaving, running: bool) {
        self.aborted += 1;
        if running {
            self.on_finish(r);
        }
    }

    /// One engine step ended at `at`. A step that computed prompt tokens is a prefill batch:
    /// `realtime_tokens` of both prefill modes and a gauge log. Otherwise a decode batch:
    /// `realtime_tokens{mode="decode"}` grows by the batch and the gauges are logged every
    /// [`DECODE_LOG_INTERVAL`] decode steps.
    pub fn on_step(&mut self, at: Instant, s: Step) {
        // SGLang's throughput clock runs from the scheduler's start, idle time included.
        let since_decode_log = *self.last_decode_log.get_or_insert(at);
        let hits = std::mem::take(&mut self.cache_hits_pending);
        if s.prefill_tokens > 0 || hits > 0 {
            self.realtime[0] += s.prefill_tokens;
            self.realtime[1] += hits;
            let total = s.prefill_tokens + hits;
            let rate = if total > 0 { hits as f64 / total as f64 } else { 0.0 };
            let throughput = self.logged.gen_throughput;
            self.log(at, s, throughput, rate);
        }
        if s.decode_tokens == 0 {
            return;
        }
        self.realtime[2] += s.decode_tokens;
        self.decode_tokens_since_log += s.decode_tokens;
        self.decode_steps += 1;
        if self.decode_steps.is_multiple_of(DECODE_LOG_INTERVAL) {
            let since = at.saturating_duration_since(since_decode_log);
            let tokens = std::mem::take(&mut self.decode_tokens_since_log);
            let throughput = if since.is_zero() { 0.0 } else { tokens as f64 / since.as_secs_f64() };
            self.last_decode_log = Some(at);
            self.log(at, s, throughput, 0.0);
        }
    }

    fn log(&mut self, at: Instant, s: Step, gen_throughput: f64, cache_hit_rate: f64) {
        let retracted = std::mem::take(&mut self.retracted_pending);
        self.logged = Logged {
            running: s.running,
            waiting: s.waiting,
            used_tokens: s.used_tokens,
            token_usage: s.token_usage,
            gen_throughput,
            cache_hit_rate,
            retracted,
        };
        self.last_log = Some(at);
    }

    /// The gauges a scrape at `now` reads: the last log, or, when the engine is idle (`live`
    /// shows nothing running or waiting) and that log is [`IDLE_LOG_AFTER`] old, the idle
    /// log SGLang writes then (throughput 0, other fields as they are).
    pub fn gauges(&self, now: Instant, live: Step) -> Logged {
        let idle = live.running == 0 && live.waiting == 0;
        let stale = self.last_log.is_none_or(|t| now.saturating_duration_since(t) >= IDLE_LOG_AFTER);
        if idle && stale && self.last_log.is_some() {
            return Logged {
                running: 0,
                waiting: 0,
                used_tokens: live.used_tokens,
                token_usage: live.token_usage,
                gen_throughput: 0.0,
                ..self.logged
            };
        }
        self.logged
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(prefill: u64, decode: u64, running: usize) -> Step {
        Step { prefill_tokens: prefill, decode_tokens: decode, running, waiting: 0, used_tokens: 64, token_usage: 0.5 }
    }

    #[test]
    fn gauges_move_on_prefill_and_every_fortieth_decode_step() {
        let t0 = Instant::now();
        let mut s = SglangStats::default();
        s.on_admission(30);
        s.on_step(t0, step(70, 0, 1));
        assert_eq!((s.logged.running, s.logged.cache_hit_rate), (1, 0.3));
        assert_eq!(s.realtime, [70, 30, 0]);
        for i in 1..DECODE_LOG_INTERVAL {
            s.on_step(t0 + Duration::from_millis(10 * i), step(0, 4, 4));
        }
        assert_eq!(s.logged.running, 1, "39 decode steps log nothing");
        assert_eq!(s.realtime[2], 4 * 39, "the decode counter moves every step");
        s.on_step(t0 + Duration::from_millis(400), step(0, 4, 4));
        assert_eq!((s.logged.running, s.logged.cache_hit_rate), (4, 0.0));
        // 40 decode steps of 4 tokens since the first step at t0: 160 tokens over 400 ms.
        assert!((s.logged.gen_throughput - 400.0).abs() < 1e-9, "{}", s.logged.gen_throughput);
    }

    #[test]
    fn an_idle_engine_shows_its_last_log_for_thirty_seconds() {
        let t0 = Instant::now();
        let mut s = SglangStats::default();
        s.on_step(t0, step(10, 0, 3));
        let idle = Step { used_tokens: 0, token_usage: 0.0, ..Step::default() };
        assert_eq!(s.gauges(t0 + Duration::from_secs(29), idle).running, 3);
        let later = s.gauges(t0 + IDLE_LOG_AFTER, idle);
        assert_eq!((later.running, later.gen_throughput, later.token_usage), (0, 0.0, 0.0));
    }

    #[test]
    fn aborts_count_once_and_running_ones_also_as_finished() {
        let mut s = SglangStats::default();
        let r = Leaving { stream: true, prompt: 10, generated: 7, cached: 0, e2e: Duration::from_secs(1) };
        s.on_abort(r, false);
        assert_eq!((s.aborted, s.finished.requests[1]), (1, 0));
        s.on_abort(r, true);
        assert_eq!((s.aborted, s.finished.requests[1], s.finished.generation_tokens[1]), (2, 1, 7));
        assert_eq!(s.e2e[1].count, 1);
    }
}
