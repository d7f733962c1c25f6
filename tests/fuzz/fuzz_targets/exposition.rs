//! Fuzz target `exposition`: the Prometheus text parser (`src/metrics/exposition.rs` through
//! `metrics::prom::Scrape`) and everything that reads a scrape (engine and gateway samples,
//! histograms and their quantiles).
//!
//! Checked: no panic, lenient or strict; strict parsing succeeds exactly when lenient
//! parsing skips no line, and then both hold the same samples; every sample renders back
//! to a line that parses to the same sample; and on plain sample lines (ASCII names without
//! colons, unquoted-safe label values, see `plain_line`) the `prometheus-parse` crate, which
//! gets those right, reads the same name, labels and value.
#![no_main]

use std::collections::BTreeMap;
use std::fmt::Write as _;

use libfuzzer_sys::fuzz_target;
use llm_decode_bench::metrics::gateway::{self, GatewayDialect};
use llm_decode_bench::metrics::{EngineDialect, EngineSample, Sample, Scrape};

/// Runs every consumer of a scrape; none may panic.
fn exercise(s: &Scrape) {
    let _ = EngineDialect::detect(s);
    let e = EngineSample::detect(s);
    let _ = (e.delta(&EngineSample::default()).prefix_hit_rate(), e.delta(&e).prefix_hit_rate());
    let g = GatewayDialect::detect(s);
    let _ = gateway::per_worker_requests(s, g);
    let series = gateway::counter_series(s);
    let _ = (gateway::deltas(&series, &[]), gateway::deltas(&[], &series), gateway::deltas(&series, &series));
    for name in s.names().filter_map(|n| n.strip_suffix("_bucket")) {
        if let Ok(h) = s.try_histogram(name) {
            let _ = (h.quantile(0.0), h.quantile(0.5), h.quantile(0.99), h.quantile(1.0), h.mean());
            let _ = (h.delta(&h), h.add(&h), h.is_reset_since(&h));
        }
    }
    for name in s.names() {
        let _ = (s.sum(name), s.avg(name), s.resolve(name), s.is_counter_value(name), s.help(name));
    }
}

/// Same sample, with any NaN equal to any NaN (and 0.0 unequal to -0.0).
fn same(a: &Sample, b: &Sample) -> bool {
    let value = (a.value.is_nan() && b.value.is_nan()) || a.value.to_bits() == b.value.to_bits();
    a.name == b.name && a.labels == b.labels && value
}

fn same_all(a: &[Sample], b: &[Sample]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
}

fn is_ident(s: &str, colon: bool) -> bool {
    let ok =
        |i: usize, b: u8| b.is_ascii_alphabetic() || b == b'_' || (colon && b == b':') || (i > 0 && b.is_ascii_digit());
    !s.is_empty() && s.bytes().enumerate().all(|(i, b)| ok(i, b))
}

fn quote(out: &mut String, s: &str) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            _ => out.push(ch),
        }
    }
    out.push('"');
}

/// One exposition line for `s`, using the quoted forms where a name is not an identifier.
fn render(s: &Sample) -> String {
    let mut out = String::new();
    let bare_name = is_ident(&s.name, true);
    if bare_name {
        out.push_str(&s.name);
    }
    let mut parts = Vec::new();
    if !bare_name {
        let mut q = String::new();
        quote(&mut q, &s.name);
        parts.push(q);
    }
    for (k, v) in &s.labels {
        let mut p = String::new();
        if is_ident(k, false) {
            p.push_str(k)
        } else {
            quote(&mut p, k)
        }
        p.push('=');
        quote(&mut p, v);
        parts.push(p);
    }
    if !parts.is_empty() || !bare_name {
        let _ = write!(out, "{{{}}}", parts.join(","));
    }
    let _ = write!(out, " {:?}", s.value);
    out
}

fn check_round_trip(s: &Sample) {
    let line = render(s);
    let back = Scrape::parse_strict(&line).unwrap_or_else(|e| panic!("{line:?} does not parse back: {e}"));
    assert!(back.all().len() == 1 && same(&back.all()[0], s), "{line:?} parses back as {:?}, not {s:?}", back.all());
}

/// A sample line that `prometheus-parse` 0.2 reads correctly: only ASCII identifier characters,
/// `{}=",.+-` and spaces/tabs (no `:`, `#`, `\`), a bare name (not the quoted form) right
/// before its labels, no space
/// inside the labels, no quoted label names, and label values without `,` `=` `}`.
fn plain_line(line: &str, s: &Sample) -> bool {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "_{}=\",.+- \t".contains(c);
    let t = line.trim();
    if !t.chars().all(allowed) || !t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return false;
    }
    if let Some(open) = t.find('{') {
        let close = t.find('}').unwrap_or(t.len());
        let name_end = t.find([' ', '\t']).unwrap_or(t.len());
        let quotes = t.matches('"').count();
        if s.labels.is_empty() || name_end < close || open > name_end || quotes != 2 * s.labels.len() {
            return false;
        }
    }
    s.labels.values().all(|v| !v.contains([',', '=', '}', ' ', '\t']))
}

fn check_against_crate(line: &str, ours: &Sample) {
    let theirs = prometheus_parse::Scrape::parse(std::iter::once(Ok(line.to_string()))).expect("no io");
    assert_eq!(theirs.samples.len(), 1, "{line:?}: prometheus-parse found {:?}", theirs.samples);
    let t = &theirs.samples[0];
    let value = match t.value {
        prometheus_parse::Value::Untyped(v) => v,
        ref other => panic!("{line:?}: untyped expected, got {other:?}"),
    };
    let labels: BTreeMap<String, String> = t.labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let theirs = Sample { name: t.metric.clone(), labels, value };
    assert!(same(&theirs, ours), "{line:?}: prometheus-parse {theirs:?}, ours {ours:?}");
}

fn check_lines(text: &str) {
    for line in text.split('\n') {
        let Ok(one) = Scrape::parse_strict(line) else { continue };
        let [s] = one.all() else { continue };
        if plain_line(line, s) {
            check_against_crate(line, s);
        }
    }
}

fn check(text: &str) {
    let lenient = Scrape::parse(text);
    let strict = Scrape::parse_strict(text);
    match (&lenient, &strict) {
        (Ok(l), Ok(s)) => {
            assert_eq!(l.skipped_lines(), 0);
            assert!(same_all(l.all(), s.all()));
        }
        (Ok(l), Err(_)) => assert!(l.skipped_lines() > 0, "strict failed but lenient skipped nothing"),
        (Err(_), Ok(_)) => panic!("strict parse succeeded where lenient failed"),
        (Err(_), Err(_)) => {}
    }
    if let Ok(l) = &lenient {
        assert!(l.issues().len() <= l.skipped_lines() && l.issues().len() <= 16);
        assert!(l.issues().windows(2).all(|w| w[0].line < w[1].line));
        l.all().iter().for_each(check_round_trip);
        exercise(l);
    }
    check_lines(text);
}

fuzz_target!(|data: &[u8]| {
    check(&String::from_utf8_lossy(data));
});
