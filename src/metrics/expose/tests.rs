//! The registry and its page: cumulative per cell across attempts, exact counts, and text that
//! our strict parser and the `prometheus-parse` crate both read.

use super::*;
use crate::load::classify::failure;
use crate::load::sample::{ErrorKind, Mark};
use crate::metrics::prom::Scrape;
use std::io::BufRead;
use tokio::time::Instant;

fn expo() -> Arc<Exposition> {
    let labels = SessionLabels {
        session: "s1".into(),
        shard: 2,
        shards: 4,
        plan: "decode".into(),
        version: "0.1.0 (commit x)".into(),
    };
    Arc::new(Exposition::new(labels))
}

/// A finished request of `tokens` tokens over `marks` (ms, cumulative tokens).
fn sample(outcome: Outcome, marks: &[(u64, u64)]) -> RequestSample {
    let mut s = RequestSample::new(0, Instant::now());
    s.marks = marks.iter().map(|&(ms, tokens)| Mark { at_us: ms * 1000, tokens }).collect();
    s.output_tokens = marks.last().map_or(0, |m| m.1);
    s.content_chunks = marks.len() as u64;
    s.outcome = outcome;
    s
}

fn bump(live: &LiveCounters, tokens: u64, started: u64, completed: u64) {
    LiveCounters::add(&live.tokens, tokens);
    LiveCounters::add(&live.started, started);
    LiveCounters::add(&live.completed, completed);
}

#[test]
fn counters_add_up_over_attempts_and_never_go_back() {
    let e = expo();
    let (a1, b) = (Arc::new(LiveCounters::default()), Arc::new(LiveCounters::default()));
    let r1 = e.register("ctx=0 conc=1", a1.clone());
    let rb = e.register("ctx=0 conc=4", b.clone());
    bump(&a1, 100, 3, 2);
    bump(&b, 7, 1, 0);
    LiveCounters::shift(&a1.in_flight, 1);
    r1.on_sample(&sample(failure(ErrorKind::Stalled, "quiet"), &[(5, 1)]));
    r1.on_sample(&sample(Outcome::Cut, &[]));
    let t = e.totals();
    assert_eq!(t.iter().map(|c| c.label.as_str()).collect::<Vec<_>>(), ["ctx=0 conc=1", "ctx=0 conc=4"]);
    assert_eq!((t[0].tokens, t[0].started, t[0].completed, t[0].cut, t[0].in_flight), (100, 3, 2, 1, 1));
    assert_eq!(t[0].errors.get("stalled"), Some(&1));
    assert!(t[0].active);
    drop(r1);
    let after = e.totals();
    assert_eq!((after[0].tokens, after[0].started, after[0].in_flight), (100, 3, 0), "folded; gauges leave");
    assert!(!after[0].active);
    // A second attempt of the same cell counts on top, never from 0.
    let a2 = Arc::new(LiveCounters::default());
    let r2 = e.register("ctx=0 conc=1", a2.clone());
    bump(&a2, 50, 1, 1);
    assert_eq!(e.totals()[0].tokens, 150);
    drop((r2, rb));
    let end = e.totals();
    assert_eq!((end[0].tokens, end[0].started, end[0].completed), (150, 4, 3));
    assert_eq!(end[1].tokens, 7);
}

#[test]
fn a_final_usage_total_tops_up_the_chunks_counted_live() {
    let e = expo();
    let live = Arc::new(LiveCounters::default());
    let r = e.register("c", live.clone());
    // Three chunks counted live (one token each), then the server's total of 10.
    bump(&live, 3, 1, 1);
    let mut s = sample(Outcome::Completed(None), &[(1, 1), (2, 2), (3, 3)]);
    s.token_source = TokenSource::FinalUsageScaled;
    s.output_tokens = 10;
    r.on_sample(&s);
    assert_eq!(e.totals()[0].tokens, 10);
}

#[test]
fn registering_switches_the_histograms_on_and_requests_feed_them() {
    let e = expo();
    let live = Arc::new(LiveCounters::default());
    assert!(live.series.get().is_none());
    let r = e.register("c", live.clone());
    live.record_ttft(12.5);
    live.series.get().unwrap().read_gaps(Some(3_000), 1, 1);
    // 11 tokens over 100 ms after the first: TPOT 10 ms.
    r.on_sample(&sample(Outcome::Completed(None), &[(20, 1), (120, 11)]));
    let t = &e.totals()[0];
    assert_eq!((t.ttft.count(), t.itl.count(), t.tpot.count()), (1, 1, 1));
    assert_eq!(t.ttft.sum_ns, 12_500_000);
    assert_eq!(t.tpot.sum_ns, 10_000_000);
}

fn page() -> String {
    let e = expo();
    let live = Arc::new(LiveCounters::default());
    let r = e.register("conc-1", live.clone());
    bump(&live, 42, 2, 1);
    live.record_ttft(3.0);
    r.on_sample(&sample(failure(ErrorKind::Overloaded, "503"), &[]));
    drop(r);
    let other = e.register("conc-4", Arc::new(LiveCounters::default()));
    let text = text::render(&e);
    drop(other);
    text
}

#[test]
fn the_page_reads_the_same_in_our_strict_parser() {
    let text = page();
    let s = Scrape::parse_strict(&text).unwrap_or_else(|err| panic!("{err}\n{text}"));
    assert_eq!(s.sum_where("llm_decode_bench_output_tokens_total", "cell", "conc-1"), Some(42.0));
    assert_eq!(s.sum_where("llm_decode_bench_requests_started_total", "cell", "conc-1"), Some(2.0));
    assert_eq!(s.sum_where("llm_decode_bench_request_errors_total", "kind", "overloaded"), Some(1.0));
    assert_eq!(s.sum_where("llm_decode_bench_cell_active", "cell", "conc-4"), Some(1.0));
    let conc1 = |l: &std::collections::BTreeMap<String, String>| l.get("cell").is_some_and(|c| c == "conc-1");
    let h = s.try_histogram_where("llm_decode_bench_ttft_seconds", conc1).expect("ttft histogram");
    assert_eq!((h.count, h.sum), (1.0, Some(0.003)));
    assert_eq!(h.buckets.len(), crate::load::live_hist::BUCKETS);
    for sample in s.all() {
        assert_eq!(sample.labels.get("session").map(String::as_str), Some("s1"), "{}", sample.name);
        assert_eq!(sample.labels.get("shard").map(String::as_str), Some("2"), "{}", sample.name);
    }
    assert_eq!(s.sum_where("llm_decode_bench_info", "shards", "4"), Some(1.0));
}

#[test]
fn prometheus_parse_reads_every_series_so_no_name_has_a_colon() {
    use prometheus_parse::Value;
    let text = page();
    let theirs = prometheus_parse::Scrape::parse(text.as_bytes().lines()).unwrap();
    let ours = Scrape::parse_strict(&text).unwrap();
    let families: std::collections::BTreeSet<&str> = ours.types().keys().map(String::as_str).collect();
    let seen: std::collections::BTreeSet<&str> = theirs.samples.iter().map(|s| s.metric.as_str()).collect();
    assert!(families.len() >= 15, "{families:?}");
    for f in &families {
        assert!(!f.contains(':'), "{f}");
        assert!(f.starts_with("llm_decode_bench_"), "{f}");
        assert!(seen.contains(f), "prometheus-parse dropped {f}");
    }
    let counter = |name: &str, cell: &str| {
        theirs.samples.iter().find(|s| s.metric == name && s.labels.get("cell") == Some(cell)).map(|s| s.value.clone())
    };
    assert!(matches!(counter("llm_decode_bench_output_tokens_total", "conc-1"), Some(Value::Counter(v)) if v == 42.0));
    let Some(Value::Histogram(buckets)) = counter("llm_decode_bench_ttft_seconds", "conc-1") else {
        panic!("no ttft histogram")
    };
    assert_eq!(buckets.len(), crate::load::live_hist::BUCKETS);
    // 3 ms: counted from the 3 ms bucket on, not below.
    let at = |le: f64| buckets.iter().find(|b| b.less_than == le || (b.less_than - le).abs() < 1e-12).map(|b| b.count);
    assert_eq!((at(0.002), at(0.003), at(f64::INFINITY)), (Some(0.0), Some(1.0), Some(1.0)));
}

#[test]
fn an_announced_cell_is_on_the_page_at_zero_before_its_first_request() {
    let e = expo();
    e.announce("ctx=0 conc=4");
    let page = text::render(&e);
    let zero = |name: &str| {
        page.lines().any(|l| l.starts_with(name) && l.contains(r#"cell="ctx=0 conc=4""#) && l.ends_with(" 0"))
    };
    for name in [
        "llm_decode_bench_output_tokens_total",
        "llm_decode_bench_requests_started_total",
        "llm_decode_bench_ttft_seconds_count",
    ] {
        assert!(zero(name), "{name} at 0 in:\n{page}");
    }
    // Its attempt then counts on the same series; announcing again changes nothing.
    let live = Arc::new(LiveCounters::default());
    let r = e.register("ctx=0 conc=4", live.clone());
    bump(&live, 5, 1, 0);
    e.announce("ctx=0 conc=4");
    assert_eq!(e.totals().len(), 1);
    assert_eq!(e.totals()[0].tokens, 5);
    drop(r);
}
