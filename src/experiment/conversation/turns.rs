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

/// Hits and lookups apportioned to each request (by index into `samples`). A request's
/// lookups are its prompt tokens (what the engines count as queried). The hits of each scrape
/// interval go to the requests counted in it, up to what each can share with its own earlier
/// turn (`shareable`: a cache of this run's own prompts can serve no more), in proportion.
/// Hits an interval cannot place (the server counted a request in a neighbouring interval of
/// the client's clock, or no request was counted in it) go to the requests with room left, in
/// proportion to it; only hits beyond every request's room (a cache warm from before) are
/// spread by prompt tokens. Returns the hits placed outside their own interval: how far the
/// split by turn leans on that second pass.
pub fn apportion(
    samples: &[RequestSample],
    shareable: &[u64],
    intervals: &[Interval],
    at_end: bool,
) -> (Vec<(f64, f64)>, f64) {
    let prompt = |i: usize| samples[i].prompt_tokens.unwrap_or(0) as f64;
    let mut out: Vec<(f64, f64)> = (0..samples.len()).map(|i| (0.0, prompt(i))).collect();
    let mut room: Vec<f64> = (0..samples.len()).map(|i| shareable.get(i).copied().unwrap_or(0) as f64).collect();
    let mut pool = 0.0;
    for iv in intervals.iter().filter(|iv| iv.hits > 0.0) {
        let inside: Vec<usize> = (0..samples.len())
            .filter(|&i| {
                let t = counted_at(&samples[i], at_end);
                t > iv.from && t <= iv.to && samples[i].prompt_tokens.is_some()
            })
            .collect();
        pool += iv.hits - place(iv.hits, &inside, &mut room, &mut out);
    }
    let moved = pool;
    let all: Vec<usize> = (0..samples.len()).collect();
    pool -= place(pool, &all, &mut room, &mut out);
    let weight: f64 = all.iter().map(|&i| prompt(i)).sum();
    if pool > 0.0 && weight > 0.0 {
        all.iter().for_each(|&i| out[i].0 += pool * prompt(i) / weight);
    }
    (out, moved)
}

/// Gives up to `hits` to the requests `to`, each at most its `room` left, in proportion to
/// it; returns how many were placed.
fn place(hits: f64, to: &[usize], room: &mut [f64], out: &mut [(f64, f64)]) -> f64 {
    let free: f64 = to.iter().map(|&i| room[i]).sum();
    let placed = hits.min(free);
    if placed <= 0.0 {
        return 0.0;
    }
    for &i in to {
        let share = placed * room[i] / free;
        out[i].0 += share;
        room[i] -= share;
    }
    placed
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

/// What the requests of one turn index ended with: the live view's counts and the table's
/// common part.
#[derive(Debug, Default)]
pub(crate) struct TurnCounts {
    /// Requests that completed.
    pub done: u64,
    /// Requests that failed.
    pub failed: u64,
    prompt_sum: f64,
    prompts: u64,
    /// TTFT of the completed requests, ms.
    pub ttft: Samples,
    cached_sum: f64,
    /// A completed request without prompt tokens or `cached_tokens` in its usage.
    cached_missing: bool,
}

impl TurnCounts {
    /// Counts one request of the turn; true when it completed.
    pub(crate) fn add(&mut self, s: &RequestSample) -> bool {
        if !s.completed() {
            self.failed += 1;
            return false;
        }
        self.done += 1;
        s.ttft().inspect(|d| self.ttft.push(d.as_secs_f64() * 1e3));
        match (s.prompt_tokens, s.cached_tokens) {
            (Some(p), cached) => {
                (self.prompt_sum, self.prompts) = (self.prompt_sum + p as f64, self.prompts + 1);
                match cached {
                    Some(c) => self.cached_sum += c as f64,
                    None => self.cached_missing = true,
                }
            }
            (None, _) => self.cached_missing = true,
        }
        true
    }

    /// Mean prompt tokens of the completed requests that report them.
    pub(crate) fn prompt_mean(&self) -> Option<f64> {
        (self.prompts > 0).then(|| self.prompt_sum / self.prompts as f64)
    }

    /// Share of prompt tokens served from the cache, when every completed request's usage says.
    pub(crate) fn cached_ratio(&self) -> Option<f64> {
        (!self.cached_missing && self.prompt_sum > 0.0).then(|| (self.cached_sum / self.prompt_sum).min(1.0))
    }
}

/// What one turn index gathered for the table.
#[derive(Default)]
struct Turn {
    counts: TurnCounts,
    tpot: Samples,
    good: u64,
    shareable: f64,
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
        if !t.counts.add(s) {
            continue;
        }
        let tpot = s.itl();
        tpot.inspect(|d| t.tpot.push(d.as_secs_f64() * 1e3));
        t.good += u64::from(slo.is_met(s.ttft(), tpot, Some(s.e2e())));
        if s.prompt_tokens.is_some() {
            t.shareable += share[i] as f64;
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
    let c = &mut t.counts;
    let (hits, from_usage) = match c.cached_ratio() {
        Some(r) => (Some(r), 1.0),
        None => (ratio(t.hits, t.queries), 0.0),
    };
    let requests = c.done + c.failed;
    let values = vec![
        Some(requests as f64),
        Some(c.done as f64),
        c.prompt_mean(),
        c.ttft.percentile(50.0),
        c.ttft.percentile(99.0),
        t.tpot.percentile(50.0),
        (requests > 0).then(|| t.good as f64 / requests as f64),
        ratio(t.shareable, c.prompt_sum),
        hits,
        Some(from_usage),
        Some(c.failed as f64),
    ];
    ExtensionRow { key: u64::from(turn) + 1, values }
}

#[cfg(test)]
#[path = "turns_tests.rs"]
mod tests;
