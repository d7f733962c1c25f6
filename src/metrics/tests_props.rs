//! Property tests: the parser never panics, and generated expositions parse back exactly.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufRead;

use proptest::prelude::*;

use super::engine::EngineSample;
use super::gateway::{self, GatewayDialect};
use super::prom::{MetricType, Scrape};
use super::tests_prom::FIXTURES;

type Labels = BTreeMap<String, String>;

/// Runs every consumer over a scrape; none may panic.
fn exercise(s: &Scrape) {
    let e = EngineSample::detect(s);
    let _ = e.delta(&EngineSample::default());
    let _ = e.delta(&e);
    let g = GatewayDialect::detect(s);
    let _ = gateway::per_worker_requests(s, g);
    let series = gateway::counter_series(s);
    let _ = gateway::deltas(&series, &[]);
    let _ = gateway::deltas(&[], &series);
    for name in s.names().filter_map(|n| n.strip_suffix("_bucket")) {
        if let Some(h) = s.histogram(name) {
            let _ = (h.quantile(0.5), h.quantile(0.99), h.mean(), h.delta(&h));
        }
    }
}

fn parse_all_ways(text: &str) {
    if let Ok(s) = Scrape::parse(text) {
        exercise(&s);
    }
    if let Ok(s) = Scrape::parse_strict(text) {
        exercise(&s);
    }
}

const TRICKY: &[&str] = &[
    "\"",
    "\\",
    "{",
    "}",
    ",",
    "=",
    "\n",
    "\r\n",
    "#",
    " ",
    "NaN",
    "+Inf",
    "-1e308",
    "le=\"",
    "_bucket",
    "_total",
    ":",
    "# TYPE x histogram\n",
    "é",
    "\u{feff}",
    "\t",
];

/// Applies one edit (delete, insert, truncate, duplicate) at a char boundary.
fn mutate(text: &mut String, pos: usize, op: u8, arg: usize) {
    let mut at = pos % (text.len() + 1);
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let mut end = (at + arg % 40).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    match op % 4 {
        0 => drop(text.drain(at..end)),
        1 => text.insert_str(at, TRICKY[arg % TRICKY.len()]),
        2 => text.truncate(at),
        _ => {
            let piece = text[at..end].to_string();
            text.insert_str(at, &piece);
        }
    }
}

fn label_value() -> impl Strategy<Value = String> {
    let ch = prop_oneof![
        4 => any::<char>(),
        1 => prop::sample::select(vec!['"', '\\', '\n', ',', '}', '{', '=', ' ', '#']),
    ];
    prop::collection::vec(ch, 0..8).prop_map(String::from_iter)
}

fn label_set() -> impl Strategy<Value = Labels> {
    prop::collection::btree_map("[a-zA-Z_][a-zA-Z0-9_]{0,6}", label_value(), 0..4)
}

fn value() -> impl Strategy<Value = f64> {
    prop_oneof![any::<f64>(), -1e6..1e6f64, Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY), Just(-1.0),]
}

#[derive(Debug, Clone)]
struct Family {
    name: String,
    kind: MetricType,
    series: Vec<(Labels, f64)>,
}

fn families() -> impl Strategy<Value = Vec<Family>> {
    let kind = prop::sample::select(vec![MetricType::Counter, MetricType::Gauge, MetricType::Untyped]);
    let one = ("[a-zA-Z_:][a-zA-Z0-9_:]{0,10}", kind, prop::collection::btree_map(label_set(), value(), 1..4));
    prop::collection::vec(one, 0..6).prop_map(|fams| {
        let unique = fams.into_iter().enumerate();
        unique
            .map(|(i, (name, kind, series))| Family {
                name: format!("{name}_f{i}"),
                kind,
                series: series.into_iter().collect(),
            })
            .collect()
    })
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn render_labels(labels: &Labels) -> String {
    let pairs: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
    if pairs.is_empty() { String::new() } else { format!("{{{}}}", pairs.join(",")) }
}

fn render(fams: &[Family], exp: bool, eol: &str) -> String {
    let mut out = String::new();
    for f in fams {
        let kind = match f.kind {
            MetricType::Counter => "counter",
            MetricType::Gauge => "gauge",
            _ => "untyped",
        };
        let _ = write!(out, "# HELP {} help \\\\ text{eol}# TYPE {} {kind}{eol}", f.name, f.name);
        for (labels, v) in &f.series {
            let v = if exp { format!("{v:e}") } else { format!("{v}") };
            let _ = write!(out, "{}{} {v}{eol}", f.name, render_labels(labels));
        }
    }
    out
}

fn same(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

proptest! {
    // No regression files: they would land beside `src/` of the main crate.
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn parse_never_panics_on_arbitrary_strings(s in any::<String>()) {
        parse_all_ways(&s);
    }

    #[test]
    fn parse_never_panics_on_exposition_like_text(s in "[a-z_:{}=\",#\\\\ \t\n\r0-9.eE+-]{0,300}") {
        parse_all_ways(&s);
    }

    #[test]
    fn parse_never_panics_on_mutated_fixtures(
        which in 0..FIXTURES.len(),
        edits in prop::collection::vec((any::<usize>(), any::<u8>(), any::<usize>()), 1..10),
    ) {
        let mut text = FIXTURES[which].1.to_string();
        for (pos, op, arg) in edits {
            mutate(&mut text, pos, op, arg);
        }
        parse_all_ways(&text);
    }

    #[test]
    fn generated_exposition_parses_back(fams in families(), exp: bool, crlf: bool) {
        let text = render(&fams, exp, if crlf { "\r\n" } else { "\n" });
        let s = Scrape::parse_strict(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let want: Vec<(&str, &Labels, f64)> = fams
            .iter()
            .flat_map(|f| f.series.iter().map(move |(l, v)| (f.name.as_str(), l, *v)))
            .collect();
        prop_assert_eq!(s.all().len(), want.len());
        for (got, (name, labels, v)) in s.all().iter().zip(want) {
            prop_assert_eq!(&got.name, name);
            prop_assert_eq!(&got.labels, labels);
            prop_assert!(same(got.value, v), "{} vs {}", got.value, v);
        }
        for f in &fams {
            prop_assert_eq!(s.sample_type(&f.name), f.kind);
            prop_assert_eq!(s.help(&f.name), Some("help \\ text"));
        }
    }

    #[test]
    fn generated_histograms_sum_across_label_sets(
        bounds in prop::collection::btree_set(0u32..10_000, 1..8),
        sets in prop::collection::vec(prop::collection::vec(0u32..50, 9), 1..4),
    ) {
        let bounds: Vec<f64> = bounds.into_iter().map(|b| f64::from(b) / 100.0).collect();
        let mut text = String::from("# TYPE lat histogram\n");
        let mut want = vec![0.0; bounds.len() + 1];
        for (i, incs) in sets.iter().enumerate() {
            let mut cum = 0.0;
            for (j, le) in bounds.iter().map(|b| b.to_string()).chain(["+Inf".into()]).enumerate() {
                cum += f64::from(incs[j]);
                want[j] += cum;
                let _ = writeln!(text, "lat_bucket{{set=\"{i}\",le=\"{le}\"}} {cum}");
            }
            let _ = writeln!(text, "lat_count{{set=\"{i}\"}} {cum}\nlat_sum{{set=\"{i}\"}} 1.5");
        }
        let h = Scrape::parse_strict(&text).unwrap().histogram("lat").unwrap();
        let got: Vec<f64> = h.buckets.iter().map(|b| b.1).collect();
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(h.count, want[bounds.len()]);
        prop_assert_eq!(h.sum, Some(1.5 * sets.len() as f64));
        let top = bounds[bounds.len() - 1];
        let mut last = f64::NEG_INFINITY;
        for q in [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0] {
            if let Some(v) = h.quantile(q) {
                prop_assert!(v >= last && (0.0..=top).contains(&v), "q={} v={} {:?}", q, v, h);
                last = v;
            }
        }
    }

    #[test]
    fn agrees_with_prometheus_parse_on_simple_pages(
        rows in prop::collection::vec(
            ("[a-zA-Z_][a-zA-Z0-9_]{0,8}", prop::collection::btree_map("[a-z]{1,4}", "[a-zA-Z0-9 ._/-]{0,8}", 0..3), -1e9..1e9f64),
            1..8,
        ),
    ) {
        let mut text = String::new();
        for (i, (name, labels, v)) in rows.iter().enumerate() {
            let _ = writeln!(text, "# TYPE {name}_r{i} gauge\n{name}_r{i}{} {v}", render_labels(labels));
        }
        let ours = Scrape::parse_strict(&text).unwrap();
        let theirs = prometheus_parse::Scrape::parse(text.as_bytes().lines()).unwrap();
        prop_assert_eq!(theirs.samples.len(), ours.all().len());
        for t in theirs.samples {
            let labels: Labels = t.labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            let mine = ours.samples(&t.metric).find(|s| s.labels == labels);
            prop_assert_eq!(Some(prometheus_parse::Value::Gauge(mine.unwrap().value)), Some(t.value));
        }
    }
}
