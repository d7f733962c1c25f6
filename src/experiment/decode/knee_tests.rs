//! The decode matrix's knees: rows by ctx (closed loop) or ctx and conc (open loop), the
//! knee cell's index, and the `--stop-at-knee` reason.

use super::*;
use crate::config::Rate;
use crate::report::json::DecodeAttempt;
use crate::report::kind::ExperimentKind;
use crate::stats::Summary;
use crate::stats::saturation::SaturationVerdict;
use crate::tui::fixtures::decode_attempt;

fn ttft(p50: f64) -> Summary {
    Summary { count: 8, mean: p50, min: p50, max: p50, p50, p90: p50, p95: p50, p99: p50 }
}

fn attempt(tps: f64, ttft_ms: f64, waiting: f64) -> DecodeAttempt {
    let base = decode_attempt(AttemptStatus::Measured, tps, None, 1, 0);
    DecodeAttempt { ttft_ms: Some(ttft(ttft_ms)), waiting_avg: Some(waiting), saturation: None, ..base }
}

/// ctx 0 saturates at conc 8; ctx 1k keeps rising; one errored cell is left out.
fn matrix() -> (Vec<CellSpec>, Vec<Option<DecodeAttempt>>) {
    let mut specs = Vec::new();
    let mut attempts = Vec::new();
    let rows = [
        (0, [(100.0, 10.0, 0.0), (190.0, 11.0, 0.0), (370.0, 12.0, 0.0), (372.0, 60.0, 4.0), (371.0, 200.0, 12.0)]),
        (1024, [(90.0, 20.0, 0.0), (170.0, 21.0, 0.0), (300.0, 22.0, 0.0), (450.0, 30.0, 0.0), (600.0, 35.0, 0.0)]),
    ];
    for (ctx, row) in rows {
        for (conc, (tps, t, w)) in [1, 2, 4, 8, 16].into_iter().zip(row) {
            specs.push(CellSpec::grid(ExperimentKind::Decode, ctx, conc));
            attempts.push(Some(attempt(tps, t, w)));
        }
    }
    attempts[7] = Some(DecodeAttempt { status: AttemptStatus::Errored, ..attempts[7].clone().unwrap() });
    (specs, attempts)
}

#[test]
fn a_closed_loop_row_has_its_knee_at_the_flat_cell() {
    let (specs, attempts) = matrix();
    let knees = row_knees(specs.iter().zip(&attempts).enumerate().map(|(i, (s, a))| (i, s, a.as_ref(), None)));
    assert_eq!(knees.len(), 1, "{knees:?}");
    let k = &knees[0];
    assert_eq!((k.id, k.row.ctx, k.row.axis.as_str(), k.row.at_conc), (3, 0, "conc", Some(8)));
    assert_eq!(
        k.row.footnote(),
        "knee at conc 8 (ctx 0): tok/s +0.5% (noise n/a), TTFT p50 +400%, TTFT p90 +400%, queue 0.0→4.0"
    );
    let spec_of = |i: usize| specs.get(i).cloned();
    let past = past_knee(&knees, spec_of, &specs[4]).expect("conc 16 is past it");
    assert_eq!(past.kind, crate::report::skip::SkipKind::PastKnee);
    assert_eq!(past.reason, "past the knee at conc 8 (ctx 0) (--stop-at-knee)");
    assert_eq!(past_knee(&knees, spec_of, &specs[2]), None, "below the knee");
    assert_eq!(past_knee(&knees, spec_of, &specs[9]), None, "another row");
}

#[test]
fn open_loop_rows_go_by_rate_with_inf_last() {
    let rates = [Rate::Inf, Rate::PerSecond(1.0), Rate::PerSecond(4.0)];
    let figures = [(400.0, 900.0, 20.0), (100.0, 10.0, 0.0), (395.0, 15.0, 0.0)];
    let specs: Vec<CellSpec> =
        rates.iter().map(|r| CellSpec::grid_at(ExperimentKind::Decode, 0, 8, Some(*r))).collect();
    let attempts: Vec<DecodeAttempt> = figures.iter().map(|(tps, t, w)| attempt(*tps, *t, *w)).collect();
    let knees = row_knees(specs.iter().zip(&attempts).enumerate().map(|(i, (s, a))| (i, s, Some(a), None)));
    assert_eq!(knees.len(), 1);
    assert_eq!((knees[0].id, knees[0].row.at_rate.as_deref(), knees[0].row.axis.as_str()), (0, Some("inf"), "rate"));
    assert!(knees[0].row.footnote().starts_with("knee at rate inf (ctx 0, conc 8): tok/s +1.3%"));
}

/// A row of two cells of 3 runs each: conc 4 at 100 ± `spread` tok/s, conc 8 at 108 with TTFT
/// five times higher; the cells as the session holds them.
fn repeated_row(spread: f64) -> Vec<crate::experiment::CellEntry> {
    use crate::experiment::record::Attempt;
    use std::sync::Arc;
    let cell = |conc: u32, tps: f64, ttft_ms: f64| {
        let runs = [tps - spread, tps, tps + spread].into_iter().enumerate().map(|(i, t)| {
            let a = DecodeAttempt { attempt: i as u32 + 1, ..attempt(t, ttft_ms, 0.0) };
            Arc::new(Attempt::Decode(Box::new(a)))
        });
        crate::experiment::CellEntry {
            spec: CellSpec::grid(ExperimentKind::Decode, 0, conc),
            label: format!("conc={conc}"),
            status: crate::cell::spec::CellStatus::Measured,
            attempts: runs.collect(),
            runs: 3,
        }
    };
    vec![cell(4, 100.0, 20.0), cell(8, 108.0, 100.0)]
}

#[test]
fn with_repetitions_the_knee_reads_the_means_and_a_step_within_noise_is_no_gain() {
    let knees_of = |cells: &[crate::experiment::CellEntry]| {
        let views: Vec<_> = cells.iter().map(|c| c.shown_with_stats()).collect();
        let rows = cells.iter().zip(&views).enumerate().map(|(i, (c, (a, st)))| {
            (i, &c.spec, a.as_deref().and_then(crate::experiment::Attempt::as_decode), st.get("aggregate_tok_s"))
        });
        row_knees(rows)
    };
    // ±10 tok/s between runs: +8% is inside the interval of the difference, no gain: a knee.
    let noisy = knees_of(&repeated_row(10.0));
    assert_eq!(noisy.len(), 1, "{noisy:?}");
    assert!(noisy[0].row.knee.within_noise && noisy[0].row.knee.tps_gain > 0.079, "{noisy:?}");
    assert!(noisy[0].row.footnote().contains("within noise ±"), "{}", noisy[0].row.footnote());
    // ±0.2 tok/s: +8% is a real gain, and no knee.
    assert!(knees_of(&repeated_row(0.2)).is_empty());
}

#[test]
fn without_a_poller_ttft_and_the_stream_spread_decide() {
    let w = Window { start: Instant::now(), end: Instant::now() + Duration::from_secs(10) };
    let rec = |worker: u32, sent_s: f64, ttft: f64| RequestRecord {
        worker,
        sent_ms: sent_s * 1e3,
        ttft_ms: Some(ttft),
        e2e_ms: 1e3,
        output_tokens: 100,
        input_tokens: None,
        window_tokens: 100 + u64::from(worker),
        itl_ms: None,
        outcome: crate::load::sample::RecordedOutcome::Completed,
        status: Some(200),
        served_by: None,
        good: None,
        schedule_lag_ms: None,
    };
    let growing: Vec<_> = (0..20).map(|i| rec(i % 4, f64::from(i) * 0.5, 50.0 + 40.0 * f64::from(i))).collect();
    let s = attempt_saturation(None, Some(w), Duration::from_millis(250), &growing, &[]).unwrap();
    assert_eq!(s.verdict, SaturationVerdict::OverSaturated, "{s:?}");
    assert_eq!(s.tps_noise.as_ref().map(|n| (n.source.as_str(), n.n)), Some(("stream_spread", 4)));
    let steady: Vec<_> = (0..20).map(|i| rec(i % 4, f64::from(i) * 0.5, 50.0 + f64::from(i % 3))).collect();
    let s = attempt_saturation(None, Some(w), Duration::from_millis(250), &steady, &[]).unwrap();
    assert_eq!(s.verdict, SaturationVerdict::Steady);
    assert!(attempt_saturation(None, None, Duration::from_millis(250), &steady, &[]).is_none(), "no window");
}

/// Two replicas polled every 100 ms for 5 s, 500 tok/s each; replica `a` queues `wait(t)`.
fn history(start: Instant, wait: impl Fn(f64) -> f64) -> History {
    history_at(start, wait, 500.0)
}

/// [`history`] with `rate` tok/s per replica as the engine's live counter shows it.
fn history_at(start: Instant, wait: impl Fn(f64) -> f64, rate: f64) -> History {
    let mut h = History::new(1000, None);
    for name in ["a", "b"] {
        let points = (0..=50)
            .map(|i| {
                let t = f64::from(i) * 0.1;
                Point {
                    at: start + Duration::from_secs_f64(t),
                    running: Some(4.0),
                    waiting: Some(if name == "a" { wait(t) } else { 0.0 }),
                    kv_usage: Some(0.5),
                    generation_tokens: Some(1e4 + rate * t),
                    prompt_tokens: None,
                    prefix_queries_tokens: None,
                    prefix_hits_tokens: None,
                    preemptions: None,
                    requests_finished: None,
                }
            })
            .collect();
        h.replicas.push(crate::metrics::window::ReplicaHistory { name: name.into(), points, dropped: 0 });
    }
    h
}

#[test]
fn a_queue_growing_at_flat_throughput_is_over_saturated() {
    let start = Instant::now();
    let w = Window { start, end: start + Duration::from_secs(5) };
    let step = Duration::from_millis(100);
    let s = attempt_saturation(Some(&history(start, |t| (2.0 * t).floor())), Some(w), step, &[], &[]).unwrap();
    assert_eq!(s.verdict, SaturationVerdict::OverSaturated, "{s:?}");
    let wait = s.waiting.unwrap();
    assert!((wait.slope - 2.0).abs() < 0.2 && wait.rising(), "{wait:?}");
    let noise = s.tps_noise.unwrap();
    assert_eq!(noise.source, "per_second");
    assert!((noise.mean_tps - 1000.0).abs() < 1.0 && noise.se_tps < 1.0, "{noise:?}");
    assert!(!s.tps.unwrap().rising());
    let steady = attempt_saturation(Some(&history(start, |_| 4.0)), Some(w), step, &[], &[]).unwrap();
    assert_eq!(steady.verdict, SaturationVerdict::Steady, "{steady:?}");
}

#[test]
fn a_flat_server_series_gives_way_to_the_client_series() {
    // llama.cpp-like: the engine's counter does not move during the window (all zeros), so
    // the noise comes from the client's own per-500 ms tok/s, not a meaningless ±0.
    let start = Instant::now();
    let w = Window { start, end: start + Duration::from_secs(5) };
    let step = Duration::from_millis(250);
    let client: Vec<(f64, f64)> =
        (1..=10).map(|i| (i as f64 * 0.5, 1000.0 + if i % 2 == 0 { 40.0 } else { -40.0 })).collect();
    let s = attempt_saturation(Some(&history_at(start, |_| 0.0, 0.0)), Some(w), step, &[], &client).unwrap();
    let noise = s.tps_noise.unwrap();
    assert_eq!(noise.source, "client_per_second");
    assert!((noise.mean_tps - 1000.0).abs() < 1e-9 && noise.se_tps > 5.0, "{noise:?}");
    // An informative server series is kept.
    let kept = attempt_saturation(Some(&history(start, |_| 4.0)), Some(w), step, &[], &client).unwrap();
    assert_eq!(kept.tps_noise.unwrap().source, "per_second");
}
