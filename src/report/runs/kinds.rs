//! Each experiment's headline figures as repetitions read and set them: one table of (name,
//! read, write) per attempt type. Names carry their unit and match `compare`'s where both have
//! the figure (`aggregate_tok_s`, `output_tok_s`, `p50_ttft_ms`, `goodput_ratio`, ...).

use super::Repeated;
use crate::report::extension::ExtensionAttempt;
use crate::report::json::{BurstAttempt, DecodeAttempt};
use crate::report::phase::{PhaseLatency, RoutingPhase};
use crate::report::serve::ServeAttempt;
use crate::report::status::AttemptStatus;
use crate::stats::Summary;

/// A figure: its name, how it is read, how a mean is written back.
type Field<T> = (&'static str, fn(&T) -> Option<f64>, fn(&mut T, f64));

fn read<T>(table: &[Field<T>], a: &T) -> Vec<(String, Option<f64>)> {
    table.iter().map(|(name, get, _)| (name.to_string(), get(a))).collect()
}

fn write<T>(table: &[Field<T>], a: &mut T, name: &str, value: f64) {
    if let Some((_, _, set)) = table.iter().find(|(n, _, _)| *n == name) {
        set(a, value);
    }
}

/// Writes `v` into a summary that exists.
fn put(s: &mut Option<Summary>, f: impl FnOnce(&mut Summary) -> &mut f64, v: f64) {
    if let Some(s) = s.as_mut() {
        *f(s) = v;
    }
}

const DECODE: &[Field<DecodeAttempt>] = &[
    ("aggregate_tok_s", |a| Some(a.aggregate_tps), |a, v| a.aggregate_tps = v),
    ("per_request_tok_s", |a| Some(a.per_request_tps), |a, v| a.per_request_tps = v),
    ("user_tok_s", |a| a.user_tps, |a, v| a.user_tps = a.user_tps.map(|_| v)),
    ("achieved_rate_rps", |a| a.achieved_rate, |a, v| a.achieved_rate = a.achieved_rate.map(|_| v)),
    ("running_avg", |a| a.running_avg, |a, v| a.running_avg = a.running_avg.map(|_| v)),
    ("p50_ttft_ms", |a| a.ttft_ms.map(|s| s.p50), |a, v| put(&mut a.ttft_ms, |s| &mut s.p50, v)),
    ("p90_ttft_ms", |a| a.ttft_ms.map(|s| s.p90), |a, v| put(&mut a.ttft_ms, |s| &mut s.p90, v)),
    ("p99_ttft_ms", |a| a.ttft_ms.map(|s| s.p99), |a, v| put(&mut a.ttft_ms, |s| &mut s.p99, v)),
    ("p50_itl_ms", |a| a.itl_ms.map(|s| s.p50), |a, v| put(&mut a.itl_ms, |s| &mut s.p50, v)),
    ("p99_itl_ms", |a| a.itl_ms.map(|s| s.p99), |a, v| put(&mut a.itl_ms, |s| &mut s.p99, v)),
    ("p50_tpot_ms", |a| a.tpot_ms.map(|s| s.p50), |a, v| put(&mut a.tpot_ms, |s| &mut s.p50, v)),
    ("p99_tpot_ms", |a| a.tpot_ms.map(|s| s.p99), |a, v| put(&mut a.tpot_ms, |s| &mut s.p99, v)),
    ("p50_latency_ms", |a| a.latency_ms.map(|s| s.p50), |a, v| put(&mut a.latency_ms, |s| &mut s.p50, v)),
    ("p90_latency_ms", |a| a.latency_ms.map(|s| s.p90), |a, v| put(&mut a.latency_ms, |s| &mut s.p90, v)),
    ("goodput_rps", |a| a.goodput.map(|g| g.rps), |a, v| a.goodput.iter_mut().for_each(|g| g.rps = v)),
    (
        "goodput_ratio",
        |a| a.goodput.and_then(|g| g.fraction),
        |a, v| a.goodput.iter_mut().for_each(|g| g.fraction = g.fraction.map(|_| v)),
    ),
    (
        "cache_hit_ratio",
        |a| a.prefix_cache.map(|p| p.hit_ratio),
        |a, v| a.prefix_cache.iter_mut().for_each(|p| p.hit_ratio = v),
    ),
];

impl Repeated for DecodeAttempt {
    fn number(&self) -> Option<u32> {
        Some(self.attempt)
    }
    fn status(&self) -> AttemptStatus {
        self.status
    }
    fn figures(&self) -> Vec<(String, Option<f64>)> {
        read(DECODE, self)
    }
    fn set(&mut self, name: &str, value: f64) {
        write(DECODE, self, name, value);
    }
    fn blend(&mut self, runs: &[&Self]) {
        super::blend::decode(self, runs);
    }
}

const BURST: &[Field<BurstAttempt>] = &[
    ("output_tok_s", |a| Some(a.output_tps), |a, v| a.output_tps = v),
    ("p50_ttft_ms", |a| a.ttft_ms.map(|s| s.p50), |a, v| put(&mut a.ttft_ms, |s| &mut s.p50, v)),
    ("p99_ttft_ms", |a| a.ttft_ms.map(|s| s.p99), |a, v| put(&mut a.ttft_ms, |s| &mut s.p99, v)),
    ("p50_tpot_ms", |a| a.tpot_ms.map(|s| s.p50), |a, v| put(&mut a.tpot_ms, |s| &mut s.p50, v)),
    ("p99_tpot_ms", |a| a.tpot_ms.map(|s| s.p99), |a, v| put(&mut a.tpot_ms, |s| &mut s.p99, v)),
    ("p50_itl_ms", |a| a.itl_token_ms.map(|s| s.p50), |a, v| put(&mut a.itl_token_ms, |s| &mut s.p50, v)),
    ("p99_itl_ms", |a| a.itl_token_ms.map(|s| s.p99), |a, v| put(&mut a.itl_token_ms, |s| &mut s.p99, v)),
    ("p50_e2e_ms", |a| a.e2e_ms.map(|s| s.p50), |a, v| put(&mut a.e2e_ms, |s| &mut s.p50, v)),
    ("p90_e2e_ms", |a| a.e2e_ms.map(|s| s.p90), |a, v| put(&mut a.e2e_ms, |s| &mut s.p90, v)),
    ("goodput_rps", |a| a.goodput.map(|g| g.rps), |a, v| a.goodput.iter_mut().for_each(|g| g.rps = v)),
    (
        "cache_hit_ratio",
        |a| a.prefix_cache.map(|p| p.hit_ratio),
        |a, v| a.prefix_cache.iter_mut().for_each(|p| p.hit_ratio = v),
    ),
];

impl Repeated for BurstAttempt {
    fn number(&self) -> Option<u32> {
        Some(self.attempt)
    }
    fn status(&self) -> AttemptStatus {
        self.status
    }
    fn figures(&self) -> Vec<(String, Option<f64>)> {
        read(BURST, self)
    }
    fn set(&mut self, name: &str, value: f64) {
        write(BURST, self, name, value);
    }
    fn blend(&mut self, runs: &[&Self]) {
        super::blend::burst(self, runs);
    }
}

const SERVE: &[Field<ServeAttempt>] = &[
    ("output_tok_s", |a| Some(a.metrics.output_throughput), |a, v| a.metrics.output_throughput = v),
    ("request_rate_rps", |a| Some(a.metrics.request_throughput), |a, v| a.metrics.request_throughput = v),
    ("total_tok_s", |a| Some(a.metrics.total_token_throughput), |a, v| a.metrics.total_token_throughput = v),
    (
        "request_goodput_rps",
        |a| a.metrics.request_goodput,
        |a, v| a.metrics.request_goodput = a.metrics.request_goodput.map(|_| v),
    ),
    ("p50_ttft_ms", |a| a.metrics.median_ttft_ms, |a, v| a.metrics.median_ttft_ms = Some(v)),
    ("p99_ttft_ms", |a| a.metrics.p99_ttft_ms, |a, v| a.metrics.p99_ttft_ms = Some(v)),
    ("p50_tpot_ms", |a| a.metrics.median_tpot_ms, |a, v| a.metrics.median_tpot_ms = Some(v)),
    ("p99_tpot_ms", |a| a.metrics.p99_tpot_ms, |a, v| a.metrics.p99_tpot_ms = Some(v)),
    ("p50_itl_ms", |a| a.metrics.median_itl_ms, |a, v| a.metrics.median_itl_ms = Some(v)),
    ("p99_itl_ms", |a| a.metrics.p99_itl_ms, |a, v| a.metrics.p99_itl_ms = Some(v)),
    ("p50_e2el_ms", |a| a.metrics.median_e2el_ms, |a, v| a.metrics.median_e2el_ms = Some(v)),
    ("p99_e2el_ms", |a| a.metrics.p99_e2el_ms, |a, v| a.metrics.p99_e2el_ms = Some(v)),
    (
        "cache_hit_ratio",
        |a| a.prefix_cache.map(|p| p.hit_ratio),
        |a, v| a.prefix_cache.iter_mut().for_each(|p| p.hit_ratio = v),
    ),
];

impl Repeated for ServeAttempt {
    fn number(&self) -> Option<u32> {
        Some(self.attempt)
    }
    fn status(&self) -> AttemptStatus {
        self.status
    }
    fn figures(&self) -> Vec<(String, Option<f64>)> {
        read(SERVE, self)
    }
    fn set(&mut self, name: &str, value: f64) {
        write(SERVE, self, name, value);
    }
    fn blend(&mut self, runs: &[&Self]) {
        super::blend::serve(self, runs);
    }
}

/// A latency of a phase (kept in seconds) read and written in ms.
fn ms(l: &PhaseLatency, q: fn(&PhaseLatency) -> Option<f64>) -> Option<f64> {
    q(l).map(|s| s * 1e3)
}

const ROUTING: &[Field<RoutingPhase>] = &[
    ("output_tok_s", |p| Some(p.output_tokens_per_second), |p, v| p.output_tokens_per_second = v),
    (
        "goodput_ratio",
        |p| (p.requests > 0).then(|| p.good as f64 / p.requests as f64),
        |p, v| p.good = (v * p.requests as f64).round() as u64,
    ),
    ("p50_ttft_ms", |p| ms(&p.ttft, |l| l.p50), |p, v| p.ttft.p50 = Some(v / 1e3)),
    ("p99_ttft_ms", |p| ms(&p.ttft, |l| l.p99), |p, v| p.ttft.p99 = Some(v / 1e3)),
    ("p50_tpot_ms", |p| ms(&p.tpot, |l| l.p50), |p, v| p.tpot.p50 = Some(v / 1e3)),
    ("p99_tpot_ms", |p| ms(&p.tpot, |l| l.p99), |p, v| p.tpot.p99 = Some(v / 1e3)),
    ("p50_itl_ms", |p| ms(&p.itl, |l| l.p50), |p, v| p.itl.p50 = Some(v / 1e3)),
    ("p99_itl_ms", |p| ms(&p.itl, |l| l.p99), |p, v| p.itl.p99 = Some(v / 1e3)),
    ("p50_e2e_ms", |p| ms(&p.e2e, |l| l.p50), |p, v| p.e2e.p50 = Some(v / 1e3)),
    ("p99_e2e_ms", |p| ms(&p.e2e, |l| l.p99), |p, v| p.e2e.p99 = Some(v / 1e3)),
    ("cache_hit_ratio", |p| p.cache_hit_ratio, |p, v| p.cache_hit_ratio = Some(v)),
];

impl Repeated for RoutingPhase {
    /// A phase keeps no attempt number: its place in the phase's history is.
    fn number(&self) -> Option<u32> {
        None
    }
    fn status(&self) -> AttemptStatus {
        self.status
    }
    fn figures(&self) -> Vec<(String, Option<f64>)> {
        read(ROUTING, self)
    }
    fn set(&mut self, name: &str, value: f64) {
        write(ROUTING, self, name, value);
    }
    fn blend(&mut self, runs: &[&Self]) {
        super::blend::routing(self, runs);
    }
}

const EXTENSION: &[Field<ExtensionAttempt>] = &[
    ("output_tok_s", |a| Some(a.output_tps), |a, v| a.output_tps = v),
    ("p50_ttft_ms", |a| a.ttft_p50_ms, |a, v| a.ttft_p50_ms = Some(v)),
];

impl Repeated for ExtensionAttempt {
    fn number(&self) -> Option<u32> {
        Some(self.attempt)
    }
    fn status(&self) -> AttemptStatus {
        self.status
    }
    /// The common figures, then the experiment's own ones (a name of its own that repeats a
    /// common one is left to the common one).
    fn figures(&self) -> Vec<(String, Option<f64>)> {
        let mut out = read(EXTENSION, self);
        for f in &self.figures {
            if !out.iter().any(|(n, _)| *n == f.name) {
                out.push((f.name.clone(), f.value));
            }
        }
        out
    }
    fn set(&mut self, name: &str, value: f64) {
        match EXTENSION.iter().any(|(n, _, _)| *n == name) {
            true => write(EXTENSION, self, name, value),
            false => self.figures.iter_mut().filter(|f| f.name == name).for_each(|f| f.value = Some(value)),
        }
    }
}
