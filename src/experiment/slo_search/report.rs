//! The SLO search's attempt in the report (pure): the common figures over every probe, the
//! search's own figures (the found load and its bracket, the attainment, goodput and output
//! tok/s found there), its settings and outcome as labels, and a `probes` table with a row per
//! probe in the order run.

use super::probe::{Probe, fmt_load};
use super::search::Ending;
use crate::config::slo_search::SloSearchConfig;
use crate::report::compare::Better;
use crate::report::extension::{ExtensionAttempt, ExtensionColumn, ExtensionFigure, ExtensionRow, ExtensionTable};
use crate::report::status::AttemptStatus;
use crate::stats::Proportion;
use std::collections::BTreeMap;

/// What the search ended with, beside its probes.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Its settings.
    pub cfg: SloSearchConfig,
    /// The SLO, as `--goodput` writes it.
    pub slo: String,
    /// (last pass, first fail).
    pub bracket: (Option<f64>, Option<f64>),
    /// How it ended; None when stopped first.
    pub ending: Option<Ending>,
}

/// The columns of the `probes` table after `load` (its unit is the mode's), in print order.
const COLUMNS: [(&str, &str); 16] = [
    ("repeat", "count"),
    ("requests", "count"),
    ("good", "count"),
    ("attainment", "fraction"),
    ("pooled_requests", "count"),
    ("pooled_attainment", "fraction"),
    ("attainment_low", "fraction"),
    ("attainment_high", "fraction"),
    ("pass", "0/1"),
    ("goodput", "req/s"),
    ("ttft_p50_ms", "ms"),
    ("ttft_p99_ms", "ms"),
    ("tpot_p50_ms", "ms"),
    ("tpot_p99_ms", "ms"),
    ("output_tps", "tok/s"),
    ("failed", "count"),
];

/// The `probes` table: one row per probe, keyed by its 1-based index. `pass` is empty for a
/// probe whose load was probed again.
pub fn probes_table(probes: &[Probe], unit: &str) -> ExtensionTable {
    let mut columns = vec![ExtensionColumn { name: "load".into(), unit: unit.into() }];
    columns.extend(COLUMNS.iter().map(|(n, u)| ExtensionColumn { name: n.to_string(), unit: u.to_string() }));
    let rows = probes.iter().enumerate().map(|(i, p)| ExtensionRow { key: i as u64 + 1, values: row(p) }).collect();
    ExtensionTable { key: "probe".into(), columns, rows }
}

fn row(p: &Probe) -> Vec<Option<f64>> {
    let n = |v: u64| Some(v as f64);
    vec![
        Some(p.step.load),
        Some(f64::from(p.step.repeat)),
        n(p.tally.trials),
        n(p.tally.hits),
        p.tally.share(),
        n(p.judged.pooled.trials),
        p.judged.pooled.share(),
        Some(p.judged.interval.0),
        Some(p.judged.interval.1),
        p.judged.verdict.map(|v| f64::from(u8::from(v))),
        Some(p.goodput),
        p.ttft_ms[0],
        p.ttft_ms[1],
        p.tpot_ms[0],
        p.tpot_ms[1],
        Some(p.output_tps),
        n(p.failed),
    ]
}

/// The search's own figures: the found load (the last pass) with its bracket, and at the
/// found load (every probe there pooled) the attainment, goodput and output tok/s.
pub fn figures(probes: &[Probe], out: &Outcome) -> Vec<ExtensionFigure> {
    let unit = out.cfg.mode.unit();
    let f = |name: &str, unit: &str, better: Better, value: Option<f64>| ExtensionFigure {
        name: name.into(),
        unit: unit.into(),
        better,
        value,
    };
    let (pass, fail) = out.bracket;
    let at: Vec<&Probe> = probes.iter().filter(|p| Some(p.step.load) == pass).collect();
    let pooled = at.iter().fold(Proportion::default(), |acc, p| acc.pooled(p.tally));
    let secs: f64 = at.iter().map(|p| p.duration_s).sum();
    let per_s = |n: f64| (secs > 0.0).then(|| n / secs);
    vec![
        f("found_load", unit, Better::Higher, pass),
        f("last_pass", unit, Better::Higher, pass),
        f("first_fail", unit, Better::Higher, fail),
        f("target_attainment", "fraction", Better::Higher, Some(out.cfg.target)),
        f("found_attainment", "fraction", Better::Higher, pooled.share()),
        f("found_goodput", "req/s", Better::Higher, per_s(pooled.hits as f64)),
        f("found_output_tps", "tok/s", Better::Higher, per_s(at.iter().map(|p| p.output_tokens as f64).sum())),
        f("probes", "count", Better::Lower, Some(probes.len() as f64)),
    ]
}

/// The search's settings and outcome in words.
pub fn labels(out: &Outcome) -> BTreeMap<String, String> {
    let c = &out.cfg;
    let outcome = match out.ending {
        Some(e) => e.as_str().to_string(),
        None => "stopped before the bracket closed".into(),
    };
    let resolution = match c.resolution {
        crate::config::slo_search::Resolution::Absolute(1.0) if c.mode.unit() == "streams" => "1 stream".into(),
        crate::config::slo_search::Resolution::Absolute(a) => format!("{} {}", fmt_load(a), c.mode.unit()),
        r => r.to_string(),
    };
    [
        ("mode", c.mode.as_str().to_string()),
        ("slo", out.slo.clone()),
        ("target", format!("{}%", c.target * 100.0)),
        ("loads", format!("{} to {} {}", fmt_load(c.start), fmt_load(c.max), c.mode.unit())),
        ("resolution", resolution),
        ("repeats", c.repeats.to_string()),
        ("outcome", outcome),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The attempt of the whole search: requests, errors and output tokens of every probe, output
/// tok/s over the probes' time, TTFT p50 over every completed request (`ttft_p50_ms`, from the
/// probes' records), measured when any request completed.
pub fn attempt(
    (attempt, started_s, duration_s): (u32, f64, f64),
    probes: &[Probe],
    errors: (BTreeMap<crate::load::sample::ErrorKind, u64>, BTreeMap<crate::load::sample::ErrorKind, String>),
    ttft_p50_ms: Option<f64>,
    out: &Outcome,
) -> ExtensionAttempt {
    let output_tokens: u64 = probes.iter().map(|p| p.output_tokens).sum();
    let busy: f64 = probes.iter().map(|p| p.duration_s).sum();
    let completed = probes.iter().any(|p| p.tally.trials > p.failed);
    let mut tables = BTreeMap::new();
    tables.insert("probes".to_string(), probes_table(probes, out.cfg.mode.unit()));
    ExtensionAttempt {
        attempt,
        status: if completed { AttemptStatus::Measured } else { AttemptStatus::Errored },
        started_s,
        duration_s,
        requests: probes.iter().map(|p| p.tally.trials).sum(),
        errors: errors.0,
        error_examples: errors.1,
        output_tokens,
        output_tps: if busy > 0.0 { output_tokens as f64 / busy } else { 0.0 },
        ttft_p50_ms,
        figures: figures(probes, out),
        tables,
        labels: labels(out),
    }
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
