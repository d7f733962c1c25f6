//! The knee test: examples (the seed's rows among them) and properties.

use super::*;
use proptest::prelude::*;

fn point(label: &str, tps: f64, ttft: f64, waiting: f64) -> LoadPoint {
    LoadPoint {
        label: label.into(),
        tps,
        tps_se: Some(tps * 0.01),
        tps_runs: None,
        ttft_p50_ms: Some(ttft),
        ttft_p90_ms: Some(ttft * 1.5),
        waiting: Some(waiting),
    }
}

#[test]
fn flat_throughput_with_rising_ttft_is_the_knee() {
    let row = [
        point("1", 100.0, 20.0, 0.0),
        point("2", 195.0, 21.0, 0.0),
        point("4", 380.0, 22.0, 0.0),
        point("8", 386.0, 75.0, 4.0),
        point("16", 388.0, 300.0, 12.0),
    ];
    let k = find_knee(&row, &KneeRules::default()).expect("a knee");
    assert_eq!((k.at.as_str(), k.index, k.previous.as_str()), ("8", 3, "4"));
    assert!((k.tps_gain - 6.0 / 380.0).abs() < 1e-12);
    let metrics: Vec<&str> = k.rising.iter().map(|r| r.metric.as_str()).collect();
    assert_eq!(metrics, ["ttft_p50_ms", "ttft_p90_ms", "waiting"]);
    assert_eq!(k.evidence(), "tok/s +1.6% (noise ±2.9%), TTFT p50 +241%, TTFT p90 +241%, queue 0.0→4.0");
}

#[test]
fn flat_throughput_alone_or_noisy_gains_are_no_knee() {
    let calm = [point("1", 100.0, 20.0, 0.0), point("2", 101.0, 20.5, 0.0)];
    assert!(find_knee(&calm, &KneeRules::default()).is_none(), "nothing rose");
    // A 3% gain whose noise band (2 x 2.8%) reaches past 5%: the gain may be large, no knee.
    let mut unsure = [point("1", 100.0, 20.0, 0.0), point("2", 103.0, 80.0, 0.0)];
    unsure[0].tps_se = Some(2.0);
    unsure[1].tps_se = Some(2.0);
    assert!(find_knee(&unsure, &KneeRules::default()).is_none());
    // The same 3% measured to ±1.4%: surely under 5%, so flat while TTFT grows: the knee.
    unsure[0].tps_se = Some(0.5);
    unsure[1].tps_se = Some(0.5);
    assert!(find_knee(&unsure, &KneeRules::default()).is_some(), "a precise small gain is flat");
    unsure[0].tps_se = None;
    assert!(find_knee(&unsure, &KneeRules::default()).is_some(), "noise unknown: the threshold decides");
}

/// Runs of a cell: `mean` ± `sd` over `n` runs.
fn runs(mean: f64, sd: f64, n: u32) -> Option<crate::stats::RunStats> {
    let values: Vec<f64> = (0..n).map(|i| mean + if i % 2 == 0 { sd } else { -sd }).collect();
    let mut s = crate::stats::RunStats::of(&values, 0.95)?;
    s.mean = mean;
    Some(s)
}

#[test]
fn with_repeated_runs_a_step_within_noise_is_no_gain() {
    // +8%: a gain by the 5% rule, but the runs spread ±10% (sd 10 of 3): inside the interval
    // of the difference, so no gain; TTFT rose: the knee, marked within noise.
    let mut row = [point("4", 100.0, 20.0, 0.0), point("8", 108.0, 80.0, 0.0)];
    (row[0].tps_runs, row[1].tps_runs) = (runs(100.0, 10.0, 3), runs(108.0, 10.0, 3));
    let k = find_knee(&row, &KneeRules::default()).expect("a step within noise is flat");
    assert!(k.within_noise, "{k:?}");
    assert!(k.evidence().starts_with("tok/s +8.0% (within noise ±"), "{}", k.evidence());
    assert!(k.evidence().contains("95% CI of 3 runs each"), "{}", k.evidence());
    assert!(k.test.contains("a step inside it is no gain"), "{}", k.test);
    // The same +8% measured tightly (sd 0.5): outside the interval and over 5%: a gain.
    (row[0].tps_runs, row[1].tps_runs) = (runs(100.0, 0.5, 3), runs(108.0, 0.5, 3));
    assert!(find_knee(&row, &KneeRules::default()).is_none(), "a real gain is no knee");
    // Without runs the 5% rule alone: +8% is a gain.
    (row[0].tps_runs, row[1].tps_runs) = (None, None);
    assert!(find_knee(&row, &KneeRules::default()).is_none());
}

#[test]
fn with_repeated_runs_a_small_precise_gain_is_still_flat() {
    // +2% outside a ±1% interval: a real gain, but under 5% with its band: flat, not "noise".
    let mut row = [point("4", 100.0, 20.0, 0.0), point("8", 102.0, 80.0, 0.0)];
    (row[0].tps_runs, row[1].tps_runs) = (runs(100.0, 0.3, 5), runs(102.0, 0.3, 5));
    let k = find_knee(&row, &KneeRules::default()).expect("flat by the threshold");
    assert!(!k.within_noise && k.tps_noise.is_some_and(|n| n < 0.02), "{k:?}");
}

#[test]
fn the_seed_rows_have_knees() {
    // tests/fixtures/seed_000.txt, ctx 0 and 16k: tok/s and TTFT p50 per conc 1..16.
    let row = |tps: [f64; 5], ttft: [f64; 5]| -> Vec<LoadPoint> {
        let conc = ["1", "2", "4", "8", "16"];
        (0..5)
            .map(|i| LoadPoint {
                label: conc[i].into(),
                tps: tps[i],
                ttft_p50_ms: Some(ttft[i]),
                ..LoadPoint::default()
            })
            .collect()
    };
    let ctx0 = row([146.7, 258.2, 393.9, 564.8, 563.1], [76.0, 119.0, 7e3, 481.0, 27e3]);
    let k = find_knee(&ctx0, &KneeRules::default()).unwrap();
    assert_eq!(k.at, "16");
    assert_eq!(k.evidence(), "tok/s -0.3% (noise n/a), TTFT p50 +5513%");
    let ctx16k = row([143.1, 260.3, 395.0, 315.3, 360.9], [3e3, 4e3, 7e3, 11e3, 10.4e3]);
    assert_eq!(find_knee(&ctx16k, &KneeRules::default()).unwrap().at, "8", "a fall is not a rise");
}

/// Rows of `n` points whose throughput rises by at least `min_gain` per step.
fn rising_row(n: usize, min_gain: f64) -> impl Strategy<Value = Vec<LoadPoint>> {
    let steps = prop::collection::vec((min_gain..1.0f64, 0.0..5.0f64, 0.0..3.0f64), n);
    (10.0..1e4f64, steps).prop_map(|(start, steps)| {
        let (mut tps, mut ttft, mut wait) = (start, 10.0, 0.0);
        let mut out = Vec::new();
        for (i, (gain, ttft_mult, more)) in steps.into_iter().enumerate() {
            out.push(point(&i.to_string(), tps, ttft, wait));
            tps *= 1.0 + gain;
            ttft *= 1.0 + ttft_mult;
            wait += more;
        }
        out
    })
}

proptest! {
    #[test]
    fn a_monotone_rising_curve_has_no_knee(row in rising_row(6, 0.06)) {
        prop_assert!(find_knee(&row, &KneeRules::default()).is_none());
    }

    #[test]
    fn flat_after_k_with_rising_ttft_has_its_knee_at_k(
        row in rising_row(5, 0.1), k in 1usize..5, flat in prop::collection::vec(-0.01..0.01f64, 4)
    ) {
        let mut row = row;
        let level = row[k - 1].tps;
        for (j, p) in row.iter_mut().enumerate().skip(k) {
            p.tps = level * (1.0 + flat[j - 1]);
            p.tps_se = Some(p.tps * 0.005);
            p.ttft_p50_ms = Some(1e3 * 2f64.powi(j as i32));
        }
        let knee = find_knee(&row, &KneeRules::default());
        prop_assert_eq!(knee.map(|k| k.index), Some(k));
    }

    #[test]
    fn noise_within_the_threshold_does_not_make_one(
        level in 10.0..1e4f64, noise in prop::collection::vec((-0.02..0.02f64, -0.1..0.1f64), 6)
    ) {
        // Flat throughput, TTFT and queue jittering below their rise thresholds.
        let row: Vec<LoadPoint> = noise
            .iter()
            .enumerate()
            .map(|(i, (dt, dl))| point(&i.to_string(), level * (1.0 + dt), 100.0 * (1.0 + dl), 5.0 * (1.0 + dl)))
            .collect();
        prop_assert!(find_knee(&row, &KneeRules::default()).is_none());
    }
}
