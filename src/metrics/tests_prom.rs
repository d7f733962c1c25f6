//! Tests of the exposition parser, the scrape queries, and the prometheus-parse quirks.

use std::collections::BTreeMap;
use std::io::BufRead;

use super::prom::{MetricType, PromError, SampleRole, Scrape};

pub(super) const FIXTURES: &[(&str, &str)] = &[
    ("vllm_v1", include_str!("../../tests/fixtures/vllm_v1.txt")),
    ("vllm_v0", include_str!("../../tests/fixtures/vllm_v0.txt")),
    ("vllm_v1_docs_hist", include_str!("../../tests/fixtures/vllm_v1_docs_hist.txt")),
    ("sglang", include_str!("../../tests/fixtures/sglang.txt")),
    ("sglang_observability", include_str!("../../tests/fixtures/sglang_observability.txt")),
    ("llamacpp", include_str!("../../tests/fixtures/llamacpp.txt")),
    ("aibrix_gateway", include_str!("../../tests/fixtures/aibrix_gateway.txt")),
    ("vllm_router", include_str!("../../tests/fixtures/vllm_router.txt")),
    ("smg_router", include_str!("../../tests/fixtures/smg_router.txt")),
    ("sgl_router_legacy", include_str!("../../tests/fixtures/sgl_router_legacy.txt")),
];

pub(super) fn fixture(name: &str) -> Scrape {
    let text = FIXTURES.iter().find(|f| f.0 == name).unwrap().1;
    Scrape::parse_strict(text).unwrap()
}

pub(super) fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn crate_parse(text: &str) -> prometheus_parse::Scrape {
    prometheus_parse::Scrape::parse(text.as_bytes().lines()).unwrap()
}

#[test]
fn every_fixture_parses_strictly_and_leniently_without_issues() {
    for (name, text) in FIXTURES {
        let strict = Scrape::parse_strict(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let lenient = Scrape::parse(text).unwrap();
        assert!(!strict.all().is_empty(), "{name}");
        assert_eq!(lenient.all(), strict.all(), "{name}");
        assert_eq!(lenient.skipped_lines(), 0, "{name}: {:?}", lenient.issues());
    }
}

#[test]
fn prometheus_parse_drops_every_name_with_a_colon() {
    let text = include_str!("../../tests/fixtures/vllm_v0.txt");
    assert!(crate_parse(text).samples.is_empty());
    assert_eq!(fixture("vllm_v0").all().len(), 18);
}

#[test]
fn prometheus_parse_mangles_quoted_commas_equals_and_escapes() {
    let text = "# TYPE t_total counter\nt_total{a=\"x,y\",b=\"q\\\"u\",c=\"k=v\"} 5\n";
    let theirs = crate_parse(text);
    assert_eq!(theirs.samples[0].labels.get("a"), Some("x"));
    assert_eq!(theirs.samples[0].labels.get("b"), Some("q\\\"u"));
    assert_eq!(theirs.samples[0].labels.get("c"), None);
    let ours = Scrape::parse_strict(text).unwrap();
    let want = labels(&[("a", "x,y"), ("b", "q\"u"), ("c", "k=v")]);
    assert_eq!(ours.all()[0].labels, want);
}

#[test]
fn prometheus_parse_drops_empty_braces_and_braces_in_values() {
    let text = "a{} 1\nb{x=\"}\"} 2\n";
    assert!(crate_parse(text).samples.is_empty());
    let ours = Scrape::parse_strict(text).unwrap();
    assert_eq!(ours.sum("a"), Some(1.0));
    assert_eq!(ours.all()[1].labels, labels(&[("x", "}")]));
}

#[test]
fn prometheus_parse_leaves_histogram_sum_and_count_untyped() {
    let text = "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 3\nh_sum 4.5\nh_count 3\n";
    let theirs = crate_parse(text);
    let sum = theirs.samples.iter().find(|s| s.metric == "h_sum").unwrap();
    assert_eq!(sum.value, prometheus_parse::Value::Untyped(4.5));
    let ours = Scrape::parse_strict(text).unwrap();
    assert_eq!(ours.resolve("h_sum"), (MetricType::Histogram, SampleRole::Sum));
    assert_eq!(ours.resolve("h_bucket"), (MetricType::Histogram, SampleRole::Bucket));
    assert_eq!(ours.resolve("h_count"), (MetricType::Histogram, SampleRole::Count));
}

#[test]
fn values_nan_inf_negative_and_exponents() {
    let text = "a NaN\nb +Inf\nc -Inf\nd -1.0\ne 9.75010481363281e-06\nf 1.7382173358407154e+09\ng 1E3\n";
    let s = Scrape::parse_strict(text).unwrap();
    assert!(s.all()[0].value.is_nan());
    assert_eq!(s.sum("b"), Some(f64::INFINITY));
    assert_eq!(s.sum("c"), Some(f64::NEG_INFINITY));
    assert_eq!(s.sum("d"), Some(-1.0));
    assert_eq!(s.sum("e"), Some(9.75010481363281e-06));
    assert_eq!(s.sum("f"), Some(1.7382173358407154e9));
    assert_eq!(s.sum("g"), Some(1000.0));
    assert_eq!(s.sum("a"), None, "NaN is skipped by sum");
    assert_eq!(s.avg("a"), None);
    assert!(s.has("a"));
}

#[test]
fn crlf_blank_lines_bom_and_surrounding_whitespace() {
    let text = "\u{feff}# TYPE a gauge\r\n\r\n  a{x=\"1\"}   3  \r\n\n\ta 4\r\n";
    let s = Scrape::parse_strict(text).unwrap();
    assert_eq!(s.sum("a"), Some(7.0));
    assert_eq!(s.sample_type("a"), MetricType::Gauge);
}

#[test]
fn type_without_help_unknown_types_and_untyped_lines() {
    let text = "# TYPE a gauge\na 1\n# TYPE b unknown\nb 2\n# TYPE c weird\nc 3\nd_total 4\n# some comment\n# EOF\n";
    let s = Scrape::parse_strict(text).unwrap();
    assert_eq!(s.sample_type("a"), MetricType::Gauge);
    assert_eq!(s.help("a"), None);
    assert_eq!(s.sample_type("b"), MetricType::Untyped);
    assert_eq!(s.sample_type("c"), MetricType::Untyped);
    assert_eq!(s.sample_type("d_total"), MetricType::Untyped);
    assert!(s.is_counter_value("d_total"));
    assert!(!s.is_counter_value("a"));
}

#[test]
fn help_is_unescaped_and_may_be_empty() {
    let s = Scrape::parse_strict("# HELP a line\\none \\\\ two\n# HELP b\na 1\n").unwrap();
    assert_eq!(s.help("a"), Some("line\none \\ two"));
    assert_eq!(s.help("b"), Some(""));
}

#[test]
fn created_gauge_families_are_not_counters() {
    let s = fixture("vllm_v1");
    let name = "vllm:prefix_cache_queries_created";
    assert_eq!(s.sample_type(name), MetricType::Gauge);
    assert!(!s.is_counter_value(name));
    assert!(s.is_counter_value("vllm:prefix_cache_queries_total"));
    // OpenMetrics style: the family is declared without the suffixes.
    let om = Scrape::parse_strict("# TYPE x counter\nx_total 3\nx_created 1.7e9\n").unwrap();
    assert_eq!(om.resolve("x_total"), (MetricType::Counter, SampleRole::Value));
    assert_eq!(om.resolve("x_created"), (MetricType::Counter, SampleRole::Created));
    assert!(om.is_counter_value("x_total"));
    assert!(!om.is_counter_value("x_created"));
}

#[test]
fn timestamps_exemplars_and_utf8_quoted_names() {
    let text = "a 1 1395066363000\nb{x=\"y\"} 2 # {trace_id=\"abc\"} 1.0 1.5\n{\"my.metric\",k=\"v\"} 3\n";
    let s = Scrape::parse_strict(text).unwrap();
    assert_eq!(s.sum("a"), Some(1.0));
    assert_eq!(s.sum("b"), Some(2.0));
    assert_eq!(s.samples("my.metric").next().unwrap().labels, labels(&[("k", "v")]));
}

#[test]
fn escapes_in_label_values() {
    let text = r#"m{path="C:\\DIR\\FILE.TXT",error="Cannot find file:\n\"FILE.TXT\"",odd="a\tb"} 1"#;
    let s = Scrape::parse_strict(text).unwrap();
    let l = &s.all()[0].labels;
    assert_eq!(l["path"], "C:\\DIR\\FILE.TXT");
    assert_eq!(l["error"], "Cannot find file:\n\"FILE.TXT\"");
    assert_eq!(l["odd"], "a\\tb", "unknown escapes are kept verbatim");
}

#[test]
fn malformed_lines_are_skipped_leniently_and_fail_strictly() {
    let text = "good 1\nbad{x=\"unterminated} 2\nnovalue\nalso_good{a=\"b\",} 3\n9starts_with_digit 4\n";
    let s = Scrape::parse(text).unwrap();
    assert_eq!(s.sum("good"), Some(1.0));
    assert_eq!(s.sum("also_good"), Some(3.0));
    assert_eq!(s.skipped_lines(), 3);
    assert_eq!(s.issues()[0].line, 2);
    match Scrape::parse_strict(text) {
        Err(PromError::Malformed { line, .. }) => assert_eq!(line, 2),
        other => panic!("{other:?}"),
    }
}

#[test]
fn html_and_json_are_not_expositions_but_empty_text_is() {
    let html = "<html>\n<body>502 Bad Gateway</body>\n</html>\n";
    assert!(matches!(Scrape::parse(html), Err(PromError::NotExposition { lines: 4, .. })));
    assert!(Scrape::parse("{\"error\": \"nope\"}").is_err());
    assert!(Scrape::parse("").unwrap().all().is_empty());
    assert!(Scrape::parse("\n\r\n  \n").unwrap().all().is_empty());
}

#[test]
fn sum_avg_where_by_and_label_values() {
    let s = fixture("vllm_v1");
    assert_eq!(s.sum("vllm:num_requests_running"), Some(5.0));
    assert_eq!(s.avg("vllm:num_requests_running"), Some(2.5));
    assert_eq!(s.sum("vllm:num_requests"), None, "no prefix matching");
    let success = "vllm:request_success_total";
    assert_eq!(s.sum_where(success, "finished_reason", "stop"), Some(16.0));
    assert_eq!(s.sum_where(success, "finished_reason", "nope"), None);
    let by = s.sum_by(success, "finished_reason");
    assert_eq!(by["abort"], 1.0);
    assert_eq!(by["length"], 6.0);
    assert_eq!(s.label_values("vllm:num_requests_running", "engine"), ["0", "1"]);
    let lora = s.samples("vllm:lora_requests_info").next().unwrap();
    assert_eq!(lora.labels["running_lora_adapters"], "sql-lora,chat-lora");
    assert_eq!(lora.labels["waiting_lora_adapters"], "");
}

#[test]
fn our_parser_agrees_with_prometheus_parse_where_it_is_right() {
    for name in ["aibrix_gateway", "vllm_router", "smg_router", "sgl_router_legacy"] {
        let text = FIXTURES.iter().find(|f| f.0 == name).unwrap().1;
        let ours = Scrape::parse_strict(text).unwrap();
        for theirs in crate_parse(text).samples {
            let v = match theirs.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => continue,
            };
            let l: BTreeMap<String, String> = theirs.labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            let mine = ours.samples(&theirs.metric).find(|s| s.labels == l).unwrap();
            assert_eq!(mine.value, v, "{name} {}", theirs.metric);
        }
    }
}
