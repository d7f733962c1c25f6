//! Figures per turn index of a conversation attempt (the report's `turns` table): requests,
//! the history each turn sent (its prompt tokens), TTFT against it, TPOT, goodput, the most
//! the conversation's own earlier turns can serve from a prefix cache, and what the server's
//! cache did serve: exact from `usage.prompt_tokens_details.cached_tokens` where every request
//! of the turn carries it, else the replicas' counters apportioned to the requests counted in
//! each scrape interval by their prompt tokens (`apportion`).

use crate::config::conversation::History;
use crate::load::sample::RequestSample;
use crate::load::slo::Slo;
use crate::report::extension::{ExtensionColumn, ExtensionRow, ExtensionTable};
use crate::stats::Samples;
use std::collections::BTreeMap;
use tokio::time::Instant;

/// One interval between two scrapes: the prefix-cache tokens the replicas counted in it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// The earlier scrape.
    pub from: Instant,
    /// The later scrape.
    pub to: Instant,
    /// Prompt tokens served from the cache in it.
    pub hits: f64,
    /// Prompt tokens looked up in it.
    pub queries: f64,
}

/// When the server counts a request's prompt in its prefix-cache counters: at its prefill
/// (its first token), or when it ends (llama.cpp's counters move only then, docs/protocol.md §9).
pub fn counted_at(s: &RequestSample, at_end: bool) -> Instant {
    match at_end {
        true => s.ended_at,
        false => s.first_token_at().unwrap_or(s.ended_at),
    }
}

/// Hits and lookups apportioned to each request (by index into `samples`): each interval's
/// lookups go to the requests counted in it in proportion to their prompt tokens; its hits
/// first to their `shareable` tokens (the only ones a cache of this run's own prompts can
/// serve), in proportion, and any beyond those (a cache warm from before) by prompt tokens.
/// The lookups of an interval in which no request was counted are returned apart
/// (unattributed).
pub fn apportion(
    samples: &[RequestSample],
    shareable: &[u64],
    intervals: &[Interval],
    at_end: bool,
) -> (Vec<(f64, f64)>, f64) {
    let mut out = vec![(0.0, 0.0); samples.len()];
    let mut unattributed = 0.0;
    for iv in intervals.iter().filter(|iv| iv.queries > 0.0) {
        let inside: Vec<usize> = (0..samples.len())
            .filter(|&i| {
                let t = counted_at(&samples[i], at_end);
                t > iv.from && t <= iv.to && samples[i].prompt_tokens.is_some()
            })
            .collect();
        let weight: f64 = inside.iter().map(|&i| samples[i].prompt_tokens.unwrap_or(0) as f64).sum();
        if weight <= 0.0 {
            unattributed += iv.queries;
            continue;
        }
        let share = |i: usize| shareable.get(i).copied().unwrap_or(0) as f64;
        let shared: f64 = inside.iter().map(|&i| share(i)).sum();
        let own = iv.hits.min(shared);
        for i in inside {
            let w = samples[i].prompt_tokens.unwrap_or(0) as f64 / weight;
            let from_own = if shared > 0.0 { own * share(i) / shared } else { 0.0 };
            out[i].0 += from_own + (iv.hits - own) * w;
            out[i].1 += iv.queries * w;
        }
    }
    (out, unattributed)
}

/// The most of each request's prompt a prefix cache can hold from its own conversation's
/// earlier turn, tokens: the previous turn's prompt, plus its answer when that answer is sent
/// back (`--history model`). A session is a `worker`, a turn its `tag`.
pub fn shareable(samples: &[RequestSample], history: History) -> Vec<u64> {
    let mut by_turn: BTreeMap<(u32, u32), &RequestSample> = BTreeMap::new();
    samples.iter().for_each(|s| {
        by_turn.insert((s.worker, s.tag), s);
    });
    let prev = |s: &RequestSample| s.tag.checked_sub(1).and_then(|t| by_turn.get(&(s.worker, t)));
    samples
        .iter()
        .map(|s| match prev(s) {
            None => 0,
            Some(p) => {
                let answer = if history == History::Model { p.output_tokens } else { 0 };
                (p.prompt_tokens.unwrap_or(0) + answer).min(s.prompt_tokens.unwrap_or(0))
            }
        })
        .collect()
}

/// The columns of the `turns` table, in print order.
const COLUMNS: [(&str, &str); 11] = [
    ("requests", "count"),
    ("completed", "count"),
    ("prompt_tokens_mean", "tokens"),
    ("ttft_p50_ms", "ms"),
    ("ttft_p99_ms", "ms"),
    ("tpot_p50_ms", "ms"),
    ("goodput", "fraction"),
    ("expected_prefix_hit_ratio", "fraction"),
    ("prefix_hit_ratio", "fraction"),
    ("prefix_hits_from_usage", "0/1"),
    ("cut_by_errors", "count"),
];

/// What one turn index gathered.
#[derive(Default)]
struct Turn {
    requests: u64,
    completed: u64,
    errors: u64,
    prompt: Samples,
    ttft: Samples,
    tpot: Samples,
    good: u64,
    shareable: f64,
    prompt_sum: f64,
    cached_sum: f64,
    /// A completed request of the turn without `cached_tokens` in its usage.
    cached_missing: bool,
    hits: f64,
    queries: f64,
}

/// The `turns` table of an attempt's `samples`, given each request's apportioned counter
/// share (`counters`, by index) and the session SLO.
pub fn table(samples: &[RequestSample], history: History, counters: &[(f64, f64)], slo: &Slo) -> ExtensionTable {
    let share = shareable(samples, history);
    let mut turns: BTreeMap<u32, Turn> = BTreeMap::new();
    for (i, s) in samples.iter().enumerate() {
        let t = turns.entry(s.tag).or_default();
        t.requests += 1;
        if !s.completed() {
            t.errors += 1;
            continue;
        }
        t.completed += 1;
        let ttft = s.ttft();
        let tpot = s.itl();
        ttft.inspect(|d| t.ttft.push(d.as_secs_f64() * 1e3));
        tpot.inspect(|d| t.tpot.push(d.as_secs_f64() * 1e3));
        t.good += u64::from(slo.is_met(ttft, tpot, Some(s.e2e())));
        if let Some(p) = s.prompt_tokens {
            t.prompt.push(p as f64);
            t.prompt_sum += p as f64;
            t.shareable += share[i] as f64;
            match s.cached_tokens {
                Some(c) => t.cached_sum += c as f64,
                None => t.cached_missing = true,
            }
        } else {
            t.cached_missing = true;
        }
        let (h, q) = counters.get(i).copied().unwrap_or((0.0, 0.0));
        t.hits += h;
        t.queries += q;
    }
    let rows = turns.into_iter().map(|(k, mut t)| row(k, &mut t)).collect();
    let columns = COLUMNS.iter().map(|(n, u)| ExtensionColumn { name: n.to_string(), unit: u.to_string() }).collect();
    ExtensionTable { key: "turn".into(), columns, rows }
}

fn row(turn: u32, t: &mut Turn) -> ExtensionRow {
    let ratio = |a: f64, b: f64| (b > 0.0).then(|| (a / b).min(1.0));
    let (hits, from_usage) = match t.cached_missing || t.completed == 0 {
        false => (ratio(t.cached_sum, t.prompt_sum), 1.0),
        true => (ratio(t.hits, t.queries), 0.0),
    };
    let values = vec![
        Some(t.requests as f64),
        Some(t.completed as f64),
        t.prompt.mean(),
        t.ttft.percentile(50.0),
        t.ttft.percentile(99.0),
        t.tpot.percentile(50.0),
        (t.completed + t.errors > 0).then(|| t.good as f64 / (t.completed + t.errors) as f64),
        ratio(t.shareable, t.prompt_sum),
        hits,
        Some(from_usage),
        Some(t.errors as f64),
    ];
    ExtensionRow { key: u64::from(turn) + 1, values }
}

#[cfg(test)]
#[path = "turns_tests.rs"]
mod tests;
