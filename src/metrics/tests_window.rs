//! Tests of the history bound and of window statistics against hand-computed numbers.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;

use super::super::engine::EngineSample;
use super::super::gateway::CounterSeries;
use super::{History, Point, window_stats};

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

/// `base + secs`.
fn t(base: Instant, secs: f64) -> Instant {
    base + Duration::from_secs_f64(secs)
}

fn point(at: Instant, running: f64, waiting: Option<f64>) -> Point {
    let sample = EngineSample { running: Some(running), waiting, ..EngineSample::default() };
    Point::from_sample(at, &sample)
}

/// A: running 2 @0, 4 @1, 0 @3.  B: running 1 @0.5, 3 @2.
fn two_replicas(base: Instant, hold: Option<Duration>) -> History {
    let mut h = History::new(100, hold);
    for (secs, running) in [(0.0, 2.0), (1.0, 4.0), (3.0, 0.0)] {
        assert!(h.push("a", point(t(base, secs), running, Some(running * 10.0))));
    }
    for (secs, running) in [(0.5, 1.0), (2.0, 3.0)] {
        assert!(h.push("b", point(t(base, secs), running, None)));
    }
    h
}

#[test]
fn time_weighted_averages_and_peaks_over_a_window() {
    let base = Instant::now();
    let stats = window_stats(&two_replicas(base, None), base, t(base, 4.0));
    let (a, b) = (&stats.replicas[0], &stats.replicas[1]);
    // A: 2 for 1 s, 4 for 2 s, 0 for 1 s → 10 / 4.
    assert!(close(a.running_avg, 2.5) && close(a.running_peak, 4.0), "{a:?}");
    assert!(close(a.waiting_avg, 25.0) && close(a.waiting_peak, 40.0));
    assert_eq!((a.points, a.kv_usage_avg, a.kv_usage_peak), (3, None, None));
    // B covers 3.5 s: 1 for 1.5 s, 3 for 2 s → 7.5 / 3.5.
    assert!(close(b.running_avg, 7.5 / 3.5) && close(b.running_peak, 3.0), "{b:?}");
    assert_eq!((b.waiting_avg, b.waiting_peak, b.points), (None, None, 2));
    // Sum: 2 (0.5 s) + 3 (0.5 s) + 5 (1 s) + 7 (1 s) + 3 (1 s) = 17.5 over 4 s.
    assert!(close(stats.running_avg_total, 4.375), "{stats:?}");
    // Only A reports waiting: 25.
    assert!(close(stats.waiting_avg_total, 25.0));
}

#[test]
fn the_point_in_effect_at_the_window_start_is_carried_in() {
    let base = Instant::now();
    let stats = window_stats(&two_replicas(base, None), t(base, 1.5), t(base, 3.5));
    let a = &stats.replicas[0];
    // A: 4 (carried in) for 1.5 s, then 0 for 0.5 s.
    assert!(close(a.running_avg, 3.0) && close(a.running_peak, 4.0), "{a:?}");
    assert_eq!(a.points, 1);
    // B: 1 for 0.5 s, 3 for 1.5 s → 5 / 2; the sum: 5, 7, 3 for 0.5, 1, 0.5 s → 11 / 2.
    assert!(close(stats.replicas[1].running_avg, 2.5));
    assert!(close(stats.running_avg_total, 5.5), "{stats:?}");
}

#[test]
fn a_point_holds_at_most_hold_max_and_gaps_are_left_out() {
    let base = Instant::now();
    let mut h = History::new(100, Some(Duration::from_secs(1)));
    h.push("a", point(base, 10.0, None));
    h.push("a", point(t(base, 5.0), 0.0, None));
    h.push("b", point(t(base, 2.0), 4.0, None));
    let stats = window_stats(&h, base, t(base, 6.0));
    // A covers [0, 1) at 10 and [5, 6) at 0; B covers [2, 3) at 4.
    assert!(close(stats.replicas[0].running_avg, 5.0));
    assert!(close(stats.running_avg_total, 14.0 / 3.0), "{stats:?}");
    // A point that expired before the window starts is not carried in.
    let later = window_stats(&h, t(base, 3.5), t(base, 4.5));
    assert_eq!((later.replicas[0].running_avg, later.replicas[0].running_peak), (None, None));
    assert_eq!(later.running_avg_total, None);
}

#[test]
fn empty_and_inverted_windows_have_no_data() {
    let base = Instant::now();
    let h = two_replicas(base, None);
    for (from, to) in [(t(base, 2.0), t(base, 2.0)), (t(base, 3.0), t(base, 1.0))] {
        let stats = window_stats(&h, from, to);
        assert_eq!((stats.running_avg_total, stats.replicas[0].running_peak), (None, None));
    }
    let before_b = window_stats(&h, base, t(base, 0.4));
    assert_eq!((before_b.replicas[1].points, before_b.replicas[1].running_avg), (0, None));
    assert_eq!(window_stats(&History::new(10, None), base, t(base, 1.0)).running_avg_total, None);
}

#[test]
fn history_drops_the_oldest_points_beyond_the_bound() {
    let base = Instant::now();
    let mut h = History::new(5, None);
    for i in 0..8 {
        assert!(h.push("a", point(t(base, f64::from(i)), f64::from(i), None)));
    }
    let a = h.replica("a").unwrap();
    assert_eq!((a.points.len(), a.dropped), (5, 3));
    assert_eq!(a.points.front().unwrap().running, Some(3.0));
    assert!(!h.push("a", point(t(base, 1.0), 0.0, None)), "out-of-order point refused");
    assert_eq!(History::new(0, None).max_points, 1);
}

fn series(name: &str, worker: &str, value: f64) -> CounterSeries {
    let labels = BTreeMap::from([("worker".to_string(), worker.to_string())]);
    CounterSeries { name: name.into(), labels, value }
}

#[test]
fn gateway_history_keeps_only_changes_and_is_bounded() {
    let base = Instant::now();
    let mut h = History::new(2, None);
    let one = vec![series("x_total", "w1", 1.0), series("x_total", "w2", f64::NAN)];
    assert!(h.push_gateway(base, &one));
    assert!(!h.push_gateway(t(base, 1.0), &one), "unchanged (NaN equals NaN)");
    let two = vec![series("x_total", "w1", 2.0), series("x_total", "w2", f64::NAN)];
    assert!(h.push_gateway(t(base, 2.0), &two));
    assert!(h.push_gateway(t(base, 3.0), &one));
    assert_eq!((h.gateway.len(), h.gateway_dropped), (2, 1));
    assert_eq!(h.gateway[0].at, t(base, 2.0));
}
