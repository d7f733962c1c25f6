//! One attempt of a serve cell: `--num-prompts` random token-id prompts of `input_len`
//! tokens (each its own length with `--random-range-ratio`; or random prefixes shared by
//! groups of them, `prefix_repetition`), or the cell's run of a dataset's prompts, on the
//! cell's arrival schedule,
//! at most `max_concurrency` in flight, measured with `vllm bench serve`'s definitions.

use super::dataset::DatasetPrompts;
use super::dispatch::run_capped;
use super::lengths::Lengths;
use super::metrics::{RequestFigures, ServeGaps, serve_metrics};
use super::prompts::{completion_body, prompt_ids, text_completion_body};
use super::schedule::arrival_offsets;
use crate::cell::attempt_loop::{AttemptLoop, Tally};
use crate::cell::context::CellEnv;
use crate::cell::control::LiveAttempt;
use crate::cell::control::Phase;
use crate::cell::publisher::LivePublisher;
use crate::cell::sample_window::record;
use crate::config::Rate;
use crate::config::prefix_repetition::PrefixRepetition;
use crate::config::serve::ServeConfig;
use crate::load::live::LiveCounters;
use crate::load::request::Endpoint;
use crate::load::sample::RequestSample;
use crate::report::json::RequestRecord;
use crate::report::schedule_lag::{ScheduleLag, Slot};
use crate::report::serve::ServeAttempt;
use crate::report::status::AttemptStatus;
use crate::units::secs;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Identifies the serve cell being run.
#[derive(Debug, Clone)]
pub struct ServeCell {
    /// Index in the session plan.
    pub cell: usize,
    /// Label.
    pub label: String,
    /// Prompt length, tokens.
    pub input_len: u64,
    /// Most requests in flight.
    pub max_concurrency: u32,
    /// Mean arrival rate.
    pub rate: Rate,
    /// 1-based attempt number.
    pub attempt: u32,
    /// The SLO search this attempt is a probe of, shown live beside it (`--slo-search`).
    pub search: Option<crate::cell::search_live::SearchLive>,
    /// The instant the schedule starts on the session's timeline (`--start-at`, its slot's
    /// start + `session::timeline_open::SCHEDULE_LEAD`, the same on every shard); None: at
    /// once.
    pub opens_at: Option<Instant>,
}

impl ServeCell {
    /// The seed of this cell's prompts and gaps: `--seed` mixed with the cell and attempt, so
    /// no cell or re-run finds another's prompts in the prefix cache.
    pub fn seed(&self, base: u64) -> u64 {
        let rate = self.rate.per_second().to_bits();
        let key = [self.input_len, u64::from(self.max_concurrency), rate, u64::from(self.attempt)];
        key.iter().fold(base ^ 0x5e7e, |h, k| (h ^ k).wrapping_mul(0x100_0000_01b3).rotate_left(17))
    }
}

/// What a serve attempt's prompts are.
#[derive(Debug, Clone)]
pub enum PromptSource {
    /// vLLM's `random` workload: token ids drawn from this range.
    TokenIds(std::ops::Range<u32>),
    /// vLLM's `prefix_repetition` workload, its token ids drawn from `ids`.
    SharedPrefix {
        /// The ids drawn from.
        ids: std::ops::Range<u32>,
        /// The prefixes and suffixes.
        shape: PrefixRepetition,
    },
    /// A trace's requests on its own schedule, their token ids drawn from `ids`.
    Trace {
        /// The ids drawn from.
        ids: std::ops::Range<u32>,
        /// The trace.
        trace: crate::config::trace::TraceSource,
    },
    /// A dataset file's prompts: those of serve cell `slot`.
    Dataset {
        /// Every prompt of the session.
        prompts: Arc<DatasetPrompts>,
        /// The cell's place among the serve cells, plan order.
        slot: usize,
    },
}

/// The request lengths of an attempt (a dataset prompt not counted before the load is 0: its
/// usage tells) and the longest prompt to expect, tokens (an uncounted one: 4 bytes a token).
fn plan_lengths(serve: &ServeConfig, spec: &ServeCell, source: &PromptSource, seed: u64) -> (Lengths, u64) {
    let n = serve.num_prompts as usize;
    if let PromptSource::Trace { trace, .. } = source {
        let l = super::trace::lengths(trace, n);
        let longest = l.max_input();
        return (l, longest);
    }
    let PromptSource::Dataset { prompts, slot } = source else {
        let l = Lengths::draw(n, spec.input_len, serve.output_len, serve.range_ratio, seed);
        let longest = l.max_input();
        return (l, longest);
    };
    let each: Vec<_> = (0..n).map(|i| prompts.get(*slot, i)).collect();
    let longest = each.iter().map(|p| p.input_tokens.unwrap_or(p.text.len() as u64 / 4)).max().unwrap_or(0);
    let input = each.iter().map(|p| p.input_tokens.unwrap_or(0)).collect();
    (Lengths { input, output: each.iter().map(|p| p.output_tokens).collect() }, longest)
}

/// The most an attempt's own requests share of their prompt tokens: none for token ids (every
/// prompt's first ids are its own) or a dataset's distinct prompts; unknown for a dataset that
/// repeats prompts on purpose (too few entries for every cell).
fn expected_sharing(source: &PromptSource, n: u32) -> Option<f64> {
    match source {
        PromptSource::TokenIds(_) => Some(0.0),
        PromptSource::SharedPrefix { shape, .. } => Some(shape.expected_hit_ratio(n)),
        PromptSource::Trace { trace, .. } => Some(trace.trace.expected_hit_ratio()),
        PromptSource::Dataset { prompts, .. } => (!prompts.record.reused).then_some(0.0),
    }
}

/// What the live panel calls the attempt's prompts: vLLM's dataset name (a file's with its
/// entries sampled).
fn source_name(source: &PromptSource) -> String {
    match source {
        PromptSource::TokenIds(_) => "random".into(),
        PromptSource::SharedPrefix { .. } => "prefix_repetition".into(),
        PromptSource::Trace { trace, .. } => format!("{} x{}", trace.format.name(), trace.speed.get()),
        PromptSource::Dataset { prompts, .. } => {
            let r = &prompts.record;
            format!("{} ({} of {} entries)", r.name, r.sampled, r.entries)
        }
    }
}

/// Runs one attempt of `spec` until every request ended (or `cancel`).
pub async fn run_serve_attempt(
    env: &CellEnv,
    spec: &ServeCell,
    source: PromptSource,
    cancel: &CancellationToken,
) -> ServeAttempt {
    let serve = &env.cfg.serve;
    let seed = spec.seed(serve.seed);
    let n = serve.num_prompts as usize;
    let offsets = match &source {
        PromptSource::Trace { trace, .. } => super::trace::offsets(trace, n),
        _ => arrival_offsets(n, spec.rate, env.cfg.burstiness, seed),
    };
    let (lengths, longest) = plan_lengths(serve, spec, &source, seed);
    let expected = expected_sharing(&source, serve.num_prompts);
    let lengths = Arc::new(lengths);
    let (model, planned) = (env.facts.model.clone(), lengths.clone());
    let shared = SharedPrefixes::of(&source, n, seed);
    let name = source_name(&source);
    let span = matches!(source, PromptSource::Trace { .. }).then(|| offsets.last().copied()).flatten();
    let body = Arc::new(move |i: u32| {
        let (input, output) = (planned.input[i as usize], planned.output[i as usize]);
        match &source {
            PromptSource::TokenIds(ids) => completion_body(&model, &prompt_ids(input, seed, i, ids.clone()), output),
            PromptSource::SharedPrefix { ids, shape } => {
                completion_body(&model, &shared.prompt(i, shape.suffix_len, seed, ids.clone()), output)
            }
            PromptSource::Trace { ids, trace } => {
                let r = &trace.trace.requests[i as usize];
                completion_body(&model, &super::trace::prompt(r, i, seed, ids.clone()), output)
            }
            PromptSource::Dataset { prompts, slot } => {
                text_completion_body(&model, &prompts.get(*slot, i as usize).text, output)
            }
        }
    });
    let live = Arc::new(LiveCounters::default());
    let first_token = env.cfg.first_token_limit(longest);
    let mut ctx = env.worker_ctx(live.clone(), lengths.max_output(), None, Some(first_token), 0);
    // Token-id prompts are a completions feature: serve uses it whatever --endpoint says.
    ctx.url = format!("{}{}", env.target.base, Endpoint::Completions.path());
    ctx.queued_waits = true;
    ctx.request_timeout = env.cfg.request_timeout;
    let ctx = Arc::new(ctx);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let publisher = LivePublisher::new(spec.cell, spec.label.clone(), spec.max_concurrency);
    // Each request's gaps are folded in as it ends; only its first and last marks are kept.
    let mut lp = AttemptLoop::new(env, rx, live, publisher, GapTally::default()).ends_only();
    // Progress through the cell's prompts (and a trace's clock) for the live panel.
    // A shard sends request k when its slice takes k (issue 27), with its share of the cap.
    let slice = env.cfg.slice();
    (lp.live_mut().planned_requests, lp.live_mut().workload) = (Some(slice.count_of(n as u64)), Some(name));
    lp.live_mut().slo_search = spec.search.clone();
    lp.phase(Phase::Measuring, span);
    let before = env.metrics_now().await;
    let started = schedule_start(env, &spec.label, spec.opens_at);
    let due = offsets.clone();
    let cap = (slice.cap(spec.max_concurrency), slice);
    lp.run_until(run_capped(ctx, started, offsets, cap, body, tx, cancel.clone())).await;
    let (samples, tally) = lp.finish();
    let mut attempt = summarize_serve(env, spec, started, &samples, &tally.0, (&lengths.input, &due));
    if let Some(note) = attempt.schedule_lag.and_then(|l| l.behind_note()) {
        env.warn(format!("{}: {note}", spec.label));
    }
    // The server counts every shard's tokens: only a whole plan's client count can match it.
    if !cancel.is_cancelled() && slice.is_whole() {
        attempt.server_tokens = super::server_check::check(env, before.clone(), &samples).await;
    }
    if !cancel.is_cancelled() {
        attempt.prefix_cache = crate::cell::prefix_cache::prefix_cache(env, before.as_deref(), expected).await;
        if let Some(p) = attempt.prefix_cache.filter(|p| p.warm) {
            env.warn(format!(
                "{}: {} (prompts an earlier run left there: a repeated --seed?)",
                spec.label,
                p.warm_note()
            ));
        }
        if let Some(c) = attempt.server_tokens.as_ref().filter(|c| !c.equal) {
            env.warn(format!(
                "{}: the server counted {} output tokens ({}), the client {}",
                spec.label, c.server_output_tokens, c.counter, c.client_output_tokens
            ));
        }
    }
    attempt
}

/// When an attempt's schedule starts: at `opens_at` (its slot's, on the `--start-at` timeline)
/// when that is still ahead, else now; a start past `opens_at` is said (`label` heads it).
pub(crate) fn schedule_start(env: &CellEnv, label: &str, opens_at: Option<Instant>) -> Instant {
    let now = Instant::now();
    match opens_at {
        Some(at) if at >= now => at,
        Some(at) => {
            let late = now.saturating_duration_since(at).as_secs_f64() * 1e3;
            env.warn(format!("{label}: its schedule started {late:.0} ms after its slot's instant (the work before the load overran the lead)"));
            now
        }
        None => now,
    }
}

/// The prefixes of a `prefix_repetition` attempt, drawn once, and which one each request sends.
#[derive(Default)]
struct SharedPrefixes {
    prefixes: Vec<Vec<u32>>,
    groups: Vec<u32>,
}

impl SharedPrefixes {
    /// Salt of the prefixes' seed, so a prefix is not a request's suffix.
    const SALT: u64 = 0x7072_6566_6978;

    /// The attempt's prefixes (none unless `source` is `prefix_repetition`), seeded per cell.
    fn of(source: &PromptSource, n: usize, seed: u64) -> Self {
        let PromptSource::SharedPrefix { ids, shape } = source else { return Self::default() };
        let draw = |g: u32| prompt_ids(shape.prefix_len, seed ^ Self::SALT, g, ids.clone());
        Self { prefixes: (0..shape.num_prefixes).map(draw).collect(), groups: shape.groups(n, seed) }
    }

    /// Request `i`'s prompt: its group's prefix, then its own `suffix_len` ids.
    fn prompt(&self, i: u32, suffix_len: u64, seed: u64, ids: std::ops::Range<u32>) -> Vec<u32> {
        let mut out = self.prefixes[self.groups[i as usize] as usize].clone();
        out.extend(prompt_ids(suffix_len, seed, i, ids));
        out
    }
}

/// Folds each finished request's chunk gaps into the attempt's distributions.
#[derive(Debug, Default)]
struct GapTally(ServeGaps);

impl Tally for GapTally {
    fn extra(&mut self, s: &RequestSample, _replica: Option<&str>, _live: &mut LiveAttempt) {
        self.0.add(s);
    }
}

/// An attempt that sent no load: the vocabulary probe failed (`why`, logged), its request
/// filed under `kind`.
pub(crate) fn refused_attempt(
    env: &CellEnv,
    spec: &ServeCell,
    kind: crate::load::sample::ErrorKind,
    why: &str,
) -> ServeAttempt {
    env.emit(crate::cell::control::RunnerEvent::Log(format!("{}: no load sent: {why}", spec.label)));
    let started = Instant::now();
    let mut a = summarize_serve(env, spec, started, &[], &ServeGaps::default(), (&[], &[]));
    // The probe's one-token request is the one that failed.
    a.errors.insert(kind, 1);
    a.error_examples.insert(kind, why.to_string());
    a
}

fn summarize_serve(
    env: &CellEnv,
    spec: &ServeCell,
    started: Instant,
    samples: &[RequestSample],
    gaps: &ServeGaps,
    (input_lens, due): (&[u64], &[Duration]),
) -> ServeAttempt {
    let end = samples.iter().map(|s| s.ended_at).max().unwrap_or(started);
    let duration = end.saturating_duration_since(started).as_secs_f64();
    // Request i's prompt is exactly its planned length (token ids, or a dataset prompt counted
    // by /tokenize); its tag is its index. 0 is a dataset prompt not counted: its usage says.
    let input_of = |s: &RequestSample| match input_lens.get(s.tag as usize).copied().unwrap_or(spec.input_len) {
        0 => s.prompt_tokens.unwrap_or(0),
        n => n,
    };
    let figures: Vec<RequestFigures> = samples.iter().map(|s| RequestFigures::of(s, input_of(s))).collect();
    let metrics = serve_metrics(&figures, gaps, duration, env.cfg.serve.goodput.as_ref());
    let errors = crate::load::sample::ErrorTally::of(samples);
    // Not one request completed: nothing was measured (docs/reports.md §1.5).
    let status = if metrics.completed > 0 { AttemptStatus::Measured } else { AttemptStatus::Errored };
    // Request i was due at `due[i]` on the cell's schedule (its tag is i).
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let slot = |s: &RequestSample| Slot {
        due_ms: due.get(s.tag as usize).copied().map_or(0.0, ms),
        sent_ms: ms(s.sent_at.saturating_duration_since(started)),
        end_ms: ms(s.ended_at.saturating_duration_since(started)),
    };
    let slots: Vec<Slot> = samples.iter().map(slot).collect();
    let mut records: Vec<_> = samples
        .iter()
        .zip(&slots)
        .map(|(s, at)| RequestRecord {
            input_tokens: s.prompt_tokens.or(Some(input_of(s))),
            schedule_lag_ms: Some((at.sent_ms - at.due_ms).max(0.0)),
            ..record(s, started, s.output_tokens)
        })
        .collect();
    records.sort_by(|a, b| a.sent_ms.total_cmp(&b.sent_ms));
    ServeAttempt {
        attempt: spec.attempt,
        status,
        started_s: env.since_start(started),
        // This shard's requests of the cell (all of them unsharded).
        num_prompts: env.cfg.slice().count_of(u64::from(env.cfg.serve.num_prompts)) as u32,
        errors: errors.counts,
        error_examples: errors.examples,
        reconnects: samples.iter().map(|s| u64::from(s.reconnects)).sum(),
        metrics,
        request_samples: records,
        server_tokens: None,
        prefix_cache: None,
        schedule_lag: ScheduleLag::of(&slots, spec.max_concurrency),
        // A shard keeps its gaps for `report merge` (src/report/shard_dists.rs).
        shard_gaps: env.cfg.shard.is_some().then(|| crate::report::shard_dists::ServeShardGaps {
            chunk_ms: crate::stats::SavedGapDist::of(&gaps.chunk_ms),
            token_ms: crate::stats::SavedGapDist::of(&gaps.token_ms),
        }),
    }
}

/// How long an attempt of a cell is planned to take: its arrivals span n / rate; at `inf`, a
/// rough n / concurrency waves of `output_len` tokens at 20 ms each (unknown until measured).
pub(crate) fn planned(num_prompts: u32, output_len: u64, conc: u32, rate: Rate) -> Duration {
    let waves = f64::from(num_prompts) / f64::from(conc.max(1));
    let wave = 0.02 * output_len as f64;
    match rate {
        Rate::PerSecond(r) => secs(f64::from(num_prompts) / r).max(secs(wave)),
        Rate::Inf => secs(wave * waves.ceil().max(1.0)),
    }
}
