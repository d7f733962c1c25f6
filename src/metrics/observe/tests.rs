//! The observer's PromQL, its parsing of the server's answers (fixtures in the HTTP API's
//! shape), the view assembled from them and the shards' health transitions.

use std::collections::BTreeMap;

use serde_json::json;

use super::ClientSource;
use super::answer::{Point, parse_vector};
use super::health::{Health, HealthEvent, ShardSeen, stale_after_s};
use super::query::{Ask, Latency, Queries, rate_window_s};
use super::view::View;

const SEL: &str = r#"job="shards",session="s-1""#;

#[test]
fn promql_sums_over_shards_by_cell_and_takes_quantiles_of_summed_buckets() {
    let q = Queries::new(SEL, 4);
    assert_eq!(
        q.promql(Ask::TokensPerSecond),
        r#"sum by (cell) (rate(llm_decode_bench_output_tokens_total{job="shards",session="s-1"}[4s]))"#
    );
    assert_eq!(
        q.promql(Ask::Quantile(Latency::Ttft, 0.99)),
        r#"histogram_quantile(0.99, sum by (le, cell) (rate(llm_decode_bench_ttft_seconds_bucket{job="shards",session="s-1"}[4s])))"#
    );
    assert_eq!(
        q.promql(Ask::Errors),
        r#"sum by (cell, kind) (llm_decode_bench_request_errors_total{job="shards",session="s-1"})"#
    );
    assert_eq!(
        q.promql(Ask::Heartbeat),
        r#"max by (shard, session) (llm_decode_bench_heartbeat_timestamp_seconds{job="shards",session="s-1"})"#
    );
    // Every query of a poll selects with the matchers, and none averages a percentile.
    for ask in Queries::all() {
        let text = q.promql(ask);
        assert!(text.contains(&format!("{{{SEL}}}")), "{text}");
        assert!(!text.contains("avg"), "{text}");
    }
    assert_eq!(Queries::all().len(), 11 + 6 + 1, "figures, p50/p99 of three histograms, TTFT p90");
}

#[test]
fn the_rate_window_spans_four_scrapes_and_at_least_two_seconds() {
    assert_eq!(rate_window_s(1.0), 4);
    assert_eq!(rate_window_s(15.0), 60);
    assert_eq!(rate_window_s(0.25), 2);
    assert_eq!(rate_window_s(2.5), 10);
}

#[test]
fn the_client_selector_is_checked_and_unwrapped() {
    let ok = ClientSource::new("http://127.0.0.1:9090/", &format!("{{{SEL}}}")).unwrap();
    assert_eq!((ok.url.as_str(), ok.queries.selector.as_str()), ("http://127.0.0.1:9090", SEL));
    let e = ClientSource::new("http://127.0.0.1:9090", "job=shards").unwrap_err();
    assert!(e.starts_with("--client-selector `job=shards`: `job=shards` is not a label matcher"), "{e}");
    assert!(ClientSource::new("http://127.0.0.1:9090", " {} ").unwrap_err().contains("is empty"));
    assert!(ClientSource::new("not a url", SEL).unwrap_err().starts_with("--prometheus:"));
}

fn answer(result: serde_json::Value) -> serde_json::Value {
    json!({"status": "success", "data": {"resultType": "vector", "result": result}})
}

#[test]
fn vector_answers_parse_with_labels_times_and_special_values() {
    let body = answer(json!([
        {"metric": {"cell": "ctx=0 conc=2"}, "value": [1700000000.5, "123.25"]},
        {"metric": {"cell": "ctx=0 conc=4"}, "value": [1700000000.5, "NaN"]},
        {"metric": {}, "value": [1700000000.5, "+Inf"]},
    ]));
    let points = parse_vector(&body).unwrap();
    assert_eq!(points.len(), 3);
    assert_eq!((points[0].label("cell"), points[0].at_unix, points[0].value), ("ctx=0 conc=2", 1700000000.5, 123.25));
    assert!(points[1].value.is_nan());
    assert_eq!((points[2].label("cell"), points[2].value), ("", f64::INFINITY));
    assert_eq!(parse_vector(&answer(json!([]))).unwrap(), vec![]);
}

#[test]
fn bad_answers_are_errors_not_empty_results() {
    let err = json!({"status": "error", "errorType": "bad_data", "error": "parse error at char 5"});
    assert!(parse_vector(&err).unwrap_err().contains("parse error at char 5"));
    let matrix = json!({"status": "success", "data": {"resultType": "matrix", "result": []}});
    assert!(parse_vector(&matrix).unwrap_err().contains("expected a vector"));
    let bad_value = answer(json!([{"metric": {}, "value": [1.0, "twelve"]}]));
    assert!(parse_vector(&bad_value).unwrap_err().contains("`twelve`"));
    let no_pair = answer(json!([{"metric": {}, "value": [1.0]}]));
    assert!(parse_vector(&no_pair).is_err());
}

fn pt(labels: &[(&str, &str)], at: f64, value: f64) -> Point {
    let labels = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Point { labels, at_unix: at, value }
}

#[test]
fn a_view_gathers_cells_and_shards_from_every_answer() {
    let cell = [("cell", "ctx=0 conc=4")];
    let answers = vec![
        (Ask::TokensPerSecond, vec![pt(&cell, 10.0, 812.5)]),
        (Ask::Started, vec![pt(&cell, 10.0, 40.0)]),
        (Ask::Tokens, vec![pt(&cell, 10.0, 5120.0)]),
        (Ask::Errors, vec![pt(&[("cell", "ctx=0 conc=4"), ("kind", "stalled")], 10.0, 2.0)]),
        (Ask::Running, vec![pt(&cell, 10.0, 4.0)]),
        (Ask::InFlight, vec![pt(&cell, 10.0, 5.0)]),
        (Ask::ActiveShards, vec![pt(&cell, 10.0, 2.0)]),
        (Ask::Quantile(Latency::Ttft, 0.5), vec![pt(&cell, 10.0, 0.012)]),
        (Ask::Quantile(Latency::Itl, 0.99), vec![pt(&cell, 11.0, f64::NAN)]),
        (Ask::Heartbeat, vec![pt(&[("shard", "1"), ("session", "s-1")], 10.0, 9.75)]),
        (Ask::Finished, vec![pt(&[("shard", "1")], 10.0, 0.0), pt(&[("shard", "0")], 10.0, 1.0)]),
        (Ask::ShardActive, vec![pt(&[("shard", "1")], 10.0, 1.0)]),
    ];
    let v = View::from_answers(&answers);
    assert_eq!(v.at_unix, 11.0);
    let c = &v.cells["ctx=0 conc=4"];
    assert_eq!((c.tok_s, c.started, c.running, c.active_shards), (Some(812.5), 40.0, 4.0, 2.0));
    assert_eq!((c.errors["stalled"], c.tokens, c.in_flight), (2.0, 5120.0, 5.0));
    assert_eq!(c.quantile(Latency::Ttft, 0.5), Some(0.012));
    assert_eq!(c.quantile(Latency::Itl, 0.99), None, "NaN: no observation in the window");
    assert!(c.is_active());
    assert_eq!(v.shards["1"], ShardSeen { session: "s-1".into(), heartbeat_unix: 9.75, finished: false, active: true });
    assert!(v.shards["0"].finished);
}

fn seen(beat: f64, active: bool, finished: bool) -> ShardSeen {
    ShardSeen { session: "s-1".into(), heartbeat_unix: beat, finished, active }
}

#[test]
fn a_shard_goes_stale_when_its_heartbeat_stops_or_its_series_vanish_and_comes_back() {
    assert_eq!(stale_after_s(1.0), 4.0);
    let mut h = Health::new(4.0);
    let both = |a: ShardSeen, b: ShardSeen| BTreeMap::from([("0".to_string(), a), ("1".to_string(), b)]);
    let ev = h.update(&both(seen(100.0, true, false), seen(100.0, true, false)), 100.0);
    assert_eq!(ev.len(), 2);
    assert!(matches!(&ev[0], HealthEvent::Joined { shard, session } if shard == "0" && session == "s-1"));
    // Shard 1's heartbeat stops while it runs a cell: not stale within the limit, stale past it.
    assert!(h.update(&both(seen(103.0, true, false), seen(100.0, true, false)), 103.0).is_empty());
    let ev = h.update(&both(seen(105.0, true, false), seen(100.0, true, false)), 105.0);
    assert_eq!(ev, vec![HealthEvent::Stale { shard: "1".into(), age_s: 5.0, vanished: false }]);
    assert_eq!((h.up(), h.stale()), (1, 1));
    let ev = h.update(&both(seen(106.0, true, false), seen(106.0, true, false)), 106.0);
    assert_eq!(ev, vec![HealthEvent::Back { shard: "1".into() }]);
    // Between cells the heartbeat does not move: not stale.
    assert!(h.update(&both(seen(106.0, false, false), seen(106.0, false, false)), 120.0).is_empty());
    // Shard 0's series vanish (a failed scrape): stale at once.
    let only1 = BTreeMap::from([("1".to_string(), seen(121.0, true, false))]);
    let ev = h.update(&only1, 121.0);
    assert_eq!(ev, vec![HealthEvent::Stale { shard: "0".into(), age_s: 15.0, vanished: true }]);
    assert!(!h.all_done(121.0, Some(30.0)));
}

#[test]
fn the_observer_is_done_when_every_shard_finished_or_has_long_been_stale() {
    let mut h = Health::new(4.0);
    assert!(!h.all_done(0.0, Some(30.0)), "no shard seen yet");
    let two = BTreeMap::from([("0".to_string(), seen(1.0, true, false)), ("1".to_string(), seen(1.0, true, false))]);
    h.update(&two, 1.0);
    let fin = BTreeMap::from([("0".to_string(), seen(2.0, false, true))]);
    let ev = h.update(&fin, 2.0);
    assert!(ev.contains(&HealthEvent::Finished { shard: "0".into() }));
    assert!(ev.iter().any(|e| matches!(e, HealthEvent::Stale { shard, vanished: true, .. } if shard == "1")));
    assert!(!h.all_done(20.0, Some(30.0)));
    assert!(h.all_done(32.5, Some(30.0)));
    assert_eq!(h.giving_up(20.0, Some(30.0)), vec![("1".to_string(), 12.0)], "stale since 2.0");
    assert_eq!(h.giving_up(40.0, Some(30.0)), vec![("1".to_string(), 0.0)]);
    assert!(!h.all_done(1e6, None), "0 waits: a stale shard holds the observer");
    assert!(h.giving_up(20.0, None).is_empty());
    // A finished shard whose series vanish (its process exited) is not stale.
    assert!(h.update(&BTreeMap::new(), 40.0).is_empty());
    assert_eq!(h.finished(), 1);
}
