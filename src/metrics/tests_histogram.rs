//! Tests of histogram assembly, sums across label sets, quantiles and deltas.

use super::histogram::{Histogram, HistogramError};
use super::prom::Scrape;
use super::tests_prom::{close, fixture};

fn h(buckets: &[(f64, f64)], sum: Option<f64>, count: f64) -> Histogram {
    Histogram { buckets: buckets.to_vec(), sum, count }
}

#[test]
fn v1_ttft_is_summed_over_engines() {
    let s = fixture("vllm_v1");
    let t = s.histogram("vllm:time_to_first_token_seconds").unwrap();
    assert_eq!(t.buckets.len(), 23);
    assert_eq!(t.buckets.last().unwrap(), &(f64::INFINITY, 20.0));
    let at = |le: f64| t.buckets.iter().find(|b| b.0 == le).unwrap().1;
    assert_eq!((at(0.04), at(0.06), at(0.08), at(0.1), at(0.25)), (2.0, 5.0, 12.0, 16.0, 20.0));
    assert_eq!(t.count, 20.0);
    assert!(close(t.sum.unwrap(), 1.75));
    assert!(close(t.quantile(0.5).unwrap(), 0.06 + 0.02 * 5.0 / 7.0));
    assert!(close(t.quantile(0.9).unwrap(), 0.175));
    assert!(close(t.quantile(1.0).unwrap(), 0.25));
    assert_eq!(t.quantile(0.0), Some(0.0));
    assert!(close(t.mean().unwrap(), 1.75 / 20.0));
}

#[test]
fn v1_itl_quantiles() {
    let t = fixture("vllm_v1").histogram("vllm:inter_token_latency_seconds").unwrap();
    assert_eq!(t.count, 300.0);
    assert!(close(t.sum.unwrap(), 9.5));
    assert!(close(t.quantile(0.5).unwrap(), 0.025));
    assert!(close(t.quantile(0.99).unwrap(), 0.085));
}

#[test]
fn histogram_named_total_is_a_histogram() {
    let s = fixture("vllm_v1");
    let it = s.histogram("vllm:iteration_tokens_total").unwrap();
    assert_eq!(it.count, 315.0);
    assert_eq!(it.sum, Some(4600.0));
    assert!(!s.is_counter_value("vllm:iteration_tokens_total_bucket"));
}

#[test]
fn v0_excerpt_without_inf_or_count_or_with_unsorted_le() {
    let t = fixture("vllm_v0").histogram("vllm:iteration_tokens_total").unwrap();
    assert_eq!(t.buckets, vec![(1.0, 994.0), (2.0, 994.0), (32.0, 994.0), (40.0, 998.0)]);
    assert_eq!(t.sum, Some(1103.0));
    assert_eq!(t.count, 998.0, "falls back to the highest bucket");
    assert!(close(t.quantile(0.5).unwrap(), 499.0 / 994.0));
    assert!(close(t.quantile(1.0).unwrap(), 40.0));
}

#[test]
fn docs_excerpt_has_count_but_no_sum_or_inf() {
    let t = fixture("vllm_v1_docs_hist").histogram("vllm:time_to_first_token_seconds").unwrap();
    assert_eq!(t.count, 140.0);
    assert_eq!(t.sum, None);
    assert_eq!(t.mean(), None);
    assert!(close(t.quantile(0.5).unwrap(), 0.02 + 0.02 * 57.0 / 84.0));
}

#[test]
fn different_bounds_are_never_merged() {
    let text = "x_bucket{e=\"0\",le=\"1\"} 1\nx_bucket{e=\"0\",le=\"+Inf\"} 2\n\
                x_bucket{e=\"1\",le=\"2\"} 1\nx_bucket{e=\"1\",le=\"+Inf\"} 3\n";
    let s = Scrape::parse_strict(text).unwrap();
    assert_eq!(s.histogram("x"), None);
    assert!(matches!(s.try_histogram("x"), Err(HistogramError::MixedBounds { .. })));
    let one = s.try_histogram_where("x", |l| l["e"] == "1").unwrap();
    assert_eq!(one.buckets, vec![(2.0, 1.0), (f64::INFINITY, 3.0)]);
    assert_eq!(one.count, 3.0, "falls back to the +Inf bucket");
}

#[test]
fn missing_and_bad_bounds() {
    let s = Scrape::parse_strict("y_bucket{le=\"abc\"} 1\nz_bucket 1\n").unwrap();
    assert!(matches!(s.try_histogram("nope"), Err(HistogramError::NotFound { .. })));
    assert!(matches!(s.try_histogram("y"), Err(HistogramError::BadBound { .. })));
    assert!(matches!(s.try_histogram("z"), Err(HistogramError::BadBound { .. })));
}

#[test]
fn quantile_edges() {
    assert_eq!(h(&[], None, 0.0).quantile(0.5), None);
    assert_eq!(h(&[(1.0, 0.0), (f64::INFINITY, 0.0)], None, 0.0).quantile(0.5), None);
    let only_inf = h(&[(f64::INFINITY, 4.0)], None, 4.0);
    assert_eq!(only_inf.quantile(0.5), None);
    let tail = h(&[(1.0, 1.0), (2.0, 2.0), (f64::INFINITY, 10.0)], None, 10.0);
    assert_eq!(tail.quantile(0.9), Some(2.0), "rank in +Inf → highest finite bound");
    assert_eq!(tail.quantile(-0.1), None);
    assert_eq!(tail.quantile(1.1), None);
    assert_eq!(tail.quantile(f64::NAN), None);
    let negative = h(&[(-1.0, 2.0), (0.0, 4.0)], None, 4.0);
    assert_eq!(negative.quantile(0.25), Some(-1.0));
    // Non-monotonic buckets (scrape races) are made monotonic first.
    let jagged = h(&[(1.0, 5.0), (2.0, 4.0), (3.0, 10.0)], None, 10.0);
    assert!(close(jagged.quantile(0.5).unwrap(), 1.0));
    // More observations than the highest bucket and no +Inf: the top is the last bound.
    let over = h(&[(1.0, 5.0), (2.0, 6.0)], None, 10.0);
    assert_eq!(over.quantile(0.9), Some(2.0));
    // Rounding never pushes an estimate past its bucket (found by proptest).
    let one = h(&[(13.21, 5.0), (f64::INFINITY, 5.0)], None, 5.0);
    assert_eq!(one.quantile(1.0), Some(13.21));
}

#[test]
fn delta_add_and_reset() {
    let a = h(&[(1.0, 2.0), (f64::INFINITY, 4.0)], Some(3.0), 4.0);
    let b = h(&[(1.0, 5.0), (f64::INFINITY, 9.0)], Some(8.0), 9.0);
    let d = b.delta(&a).unwrap();
    assert_eq!(d, h(&[(1.0, 3.0), (f64::INFINITY, 5.0)], Some(5.0), 5.0));
    assert!(!b.is_reset_since(&a));
    assert!(a.is_reset_since(&b));
    assert_eq!(a.delta(&b).unwrap(), a, "after a restart the later value is the delta");
    let other = h(&[(2.0, 5.0), (f64::INFINITY, 9.0)], Some(8.0), 9.0);
    assert_eq!(other.delta(&a), None);
    assert_eq!(other.add(&a), None);
    assert_eq!(a.add(&b).unwrap().count, 13.0);
    assert_eq!(a.add(&h(&[(1.0, 0.0), (f64::INFINITY, 0.0)], None, 0.0)).unwrap().sum, None);
}

#[test]
fn serde_keeps_inf_bounds() {
    let a = h(&[(0.5, 2.0), (f64::INFINITY, 4.0)], Some(3.0), 4.0);
    let json = serde_json::to_string(&a).unwrap();
    assert!(json.contains(r#"{"le":"+Inf","count":4.0}"#), "{json}");
    assert!(json.contains(r#"{"le":"0.5","count":2.0}"#), "{json}");
    let back: Histogram = serde_json::from_str(&json).unwrap();
    assert_eq!(back, a);
}
