//! One decode attempt merged over the shards that made it (docs/reports.md "Merged reports"):
//! counts add, rates add over the common window, per-request records concatenate, percentiles
//! come from the shards' distributions together (`dists`), and the server's figures are the
//! base shard's (the first given, shard 0 when present).

use super::dists;
use crate::experiment::decode::verdict::counts_disagree;
use crate::load::sample::ErrorKind;
use crate::report::goodput::Goodput;
use crate::report::json::{DecodeAttempt, PromValidation, RequestRecord, TargetLoss};
use crate::report::status::AttemptStatus;
use crate::stats::Summary;
use std::collections::BTreeMap;

/// The attempt `parts` (shard index, that shard's attempt; the base shard first) make
/// together; `name` heads its notes.
pub(super) fn merge(parts: &[(u32, &DecodeAttempt)], name: &str, notes: &mut Vec<String>) -> DecodeAttempt {
    let base = parts[0].1;
    let all = || parts.iter().map(|(_, a)| *a);
    let window_s = all().map(|a| a.window_s).fold(f64::INFINITY, f64::min);
    let longest = all().map(|a| a.window_s).fold(0.0, f64::max);
    if longest > window_s * 1.01 {
        notes.push(format!(
            "{name}: the shards' windows differ ({window_s:.3} to {longest:.3} s); rates add each shard's own"
        ));
    }
    let window_tokens = all().map(|a| a.window_tokens).sum();
    let aggregate_tps = added(all().map(|a| a.aggregate_tps));
    let decoding_avg = all().map(|a| a.decoding_avg).sum::<Option<f64>>().map(tidy);
    let requested = all().map(|a| a.requested).sum::<u32>();
    let streams = decoding_avg.filter(|d| *d > 0.0).unwrap_or(f64::from(requested.max(1)));
    let figures = dists::merge(parts, name, notes);
    let capacity_limited = all().any(|a| a.capacity_limited);
    if all().any(|a| !a.levels.is_empty()) {
        notes.push(format!("{name}: load levels (the knob) are per shard and left out"));
    }
    let request_samples = records(parts.iter().map(|(_, a)| (a.request_samples.as_slice(), a.requested)));
    let saturation = super::saturation::merge(parts, &request_samples, window_s, name, notes);
    DecodeAttempt {
        attempt: base.attempt,
        status: least_finished(&parts.iter().map(|(i, a)| (*i, a.status)).collect::<Vec<_>>(), name, notes),
        started_s: all().map(|a| a.started_s).fold(f64::INFINITY, f64::min),
        warmup_s: all().map(|a| a.warmup_s).fold(0.0, f64::max),
        warmup_timed_out: all().any(|a| a.warmup_timed_out),
        window_s,
        window_tokens,
        aggregate_tps,
        aggregate_source: base.aggregate_source,
        per_request_tps: if window_s > 0.0 { aggregate_tps / streams } else { 0.0 },
        decoding_avg,
        user_tps: figures.itl_ms.map(|s| s.p50).filter(|p| *p > 0.0).map(|p| 1e3 / p),
        requested,
        cell_requested: None,
        running_avg: base.running_avg,
        waiting_avg: base.waiting_avg,
        streaming_at_start: all().map(|a| a.streaming_at_start).sum(),
        capacity_limited,
        capacity_limit: all().find(|a| a.capacity_limited).and_then(|a| a.capacity_limit),
        turnover: !capacity_limited && all().any(|a| a.turnover),
        ttft_ms: figures.ttft_ms,
        itl_ms: figures.itl_ms,
        itl_token_ms: figures.itl_token_ms,
        itl_chunk_ms: figures.itl_chunk_ms,
        tpot_ms: figures.tpot_ms,
        latency_ms: figures.latency_ms,
        errors: add_counts(all().map(|a| &a.errors)),
        error_count: all().map(|a| a.error_count).sum(),
        error_examples: examples(all().map(|a| &a.error_examples)),
        reconnects: all().map(|a| a.reconnects).sum(),
        prometheus: base.prometheus.clone().map(|p| validation(p, window_tokens, aggregate_tps)),
        client_lag_ms: worst_lag(all().map(|a| a.client_lag_ms.as_ref())),
        target_lost: target_lost(all().map(|a| a.target_lost.as_slice())),
        request_samples,
        request_outcomes: add_counts(all().map(|a| &a.request_outcomes)),
        goodput: goodput(all().map(|a| a.goodput.as_ref())),
        saturation,
        rate: base.rate,
        achieved_rate: all().map(|a| a.achieved_rate).sum::<Option<f64>>().map(tidy),
        levels: Vec::new(),
        prefix_cache: base.prefix_cache,
        shard_dists: None,
    }
}

/// Shard figures added (rates, stream averages), [`tidy`].
pub(super) fn added(values: impl Iterator<Item = f64>) -> f64 {
    tidy(values.sum())
}

/// `x` to 12 significant digits. A shard's figure is one division (tokens / window) and its
/// float prints short (`3247.8`); adding shards' figures in binary floating point adds digits
/// past the 15th (`3000.1 + 3495.5 = 6495.599999999999`) that no measurement holds.
pub(super) fn tidy(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let digits = 11 - x.abs().log10().floor() as i32;
    match digits >= 0 {
        true => (x * 10f64.powi(digits)).round() / 10f64.powi(digits),
        false => (x / 10f64.powi(-digits)).round() * 10f64.powi(-digits),
    }
}

/// The shards' status when they agree, else the least finished (stopped, paused, errored,
/// skipped), with a note: the merged attempt is measured only when every shard's is.
pub(super) fn least_finished(parts: &[(u32, AttemptStatus)], name: &str, notes: &mut Vec<String>) -> AttemptStatus {
    let first = parts[0].1;
    if parts.iter().all(|(_, s)| *s == first) {
        return first;
    }
    let order =
        [AttemptStatus::Stopped, AttemptStatus::Paused, AttemptStatus::Errored, AttemptStatus::SkippedByOperator];
    let least = order.into_iter().find(|o| parts.iter().any(|(_, s)| s == o)).unwrap_or(first);
    let each: Vec<String> = parts.iter().map(|(i, s)| format!("shard {i} {}", s.as_str())).collect();
    notes.push(format!("{name}: the shards' statuses differ ({}); merged as {}", each.join(", "), least.as_str()));
    least
}

/// Counts by key, added.
pub(super) fn add_counts<'a, K: Ord + Copy + 'a>(maps: impl Iterator<Item = &'a BTreeMap<K, u64>>) -> BTreeMap<K, u64> {
    let mut out = BTreeMap::new();
    for (k, n) in maps.flatten() {
        *out.entry(*k).or_default() += n;
    }
    out
}

/// The first example of each error kind, shards in order.
pub(super) fn examples<'a>(maps: impl Iterator<Item = &'a BTreeMap<ErrorKind, String>>) -> BTreeMap<ErrorKind, String> {
    let mut out = BTreeMap::new();
    for (k, v) in maps.flatten() {
        out.entry(*k).or_insert_with(|| v.clone());
    }
    out
}

/// The base shard's server counters beside the merged client figures: the ratio of client
/// to server tok/s and the count check are recomputed with the session's window tokens.
fn validation(mut p: PromValidation, window_tokens: u64, aggregate_tps: f64) -> PromValidation {
    p.client_over_server = p.generation_tps.filter(|s| *s > 0.0).map(|s| aggregate_tps / s);
    p.counts_disagree = p.counts_unchecked.is_none() && counts_disagree(window_tokens, p.generation_tokens_delta);
    p
}

/// The client event-loop lag of the shard that lagged most (highest p99): each load machine
/// has its own, and the worst one bounds the session's timing.
fn worst_lag<'a>(lags: impl Iterator<Item = Option<&'a Summary>>) -> Option<Summary> {
    lags.flatten().max_by(|a, b| a.p99.total_cmp(&b.p99)).copied()
}

/// Targets lost, by target: the longest stale time any shard saw, connection errors added.
pub(super) fn target_lost<'a>(lists: impl Iterator<Item = &'a [TargetLoss]>) -> Vec<TargetLoss> {
    let mut out: Vec<TargetLoss> = Vec::new();
    for t in lists.flatten() {
        match out.iter_mut().find(|o| o.replica == t.replica) {
            Some(o) => (o.lost_s, o.connect_errors) = (o.lost_s.max(t.lost_s), o.connect_errors + t.connect_errors),
            None => out.push(t.clone()),
        }
    }
    out
}

/// Every shard's request records, in shard order, times still relative to each shard's own
/// attempt start; stream slots (`worker`) numbered after the previous shards' slots.
/// (`parts`: each shard's records and the streams it ran.)
pub(super) fn records<'a>(parts: impl Iterator<Item = (&'a [RequestRecord], u32)>) -> Vec<RequestRecord> {
    let mut out = Vec::new();
    let mut offset = 0u32;
    for (records, streams) in parts {
        out.extend(records.iter().map(|r| RequestRecord { worker: r.worker + offset, ..r.clone() }));
        let slots = records.iter().map(|r| r.worker + 1).max().unwrap_or(0);
        offset += slots.max(streams);
    }
    out
}

/// Good and judged requests added; good requests per second are the shards' rates added (the
/// rule of the aggregate tok/s). None unless every shard judged.
fn goodput<'a>(tallies: impl Iterator<Item = Option<&'a Goodput>>) -> Option<Goodput> {
    let tallies: Vec<&Goodput> = tallies.collect::<Option<_>>()?;
    let (good, judged) = tallies.iter().fold((0, 0), |(g, j), t| (g + t.good, j + t.judged));
    let rps = added(tallies.iter().map(|t| t.rps));
    Some(Goodput { rps, ..Goodput::new(good, judged, 1.0) })
}
