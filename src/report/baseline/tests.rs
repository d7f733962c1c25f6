use super::annotate::{annotate, figure};
use super::*;
use crate::report::compare::CellKey;
use crate::report::json::SessionReport;
use crate::report::kind::ExperimentKind;
use crate::report::tests_schema::{assert_valid, full_report};

#[test]
fn percentages_are_signed_and_short() {
    assert_eq!(fmt_pct(3.24), "+3.2%");
    assert_eq!(fmt_pct(-11.4), "-11%");
    assert_eq!(fmt_pct(-9.96), "-10%");
    assert_eq!(fmt_pct(0.04), "0.0%");
    assert_eq!(fmt_pct(-0.04), "0.0%");
    assert_eq!(fmt_pct(250.0), "+250%");
    assert_eq!(fmt_pct(f64::NAN), "—");
}

#[test]
fn the_sign_means_better_or_worse_by_the_figure() {
    let up = delta(Some(100.0), Some(103.2), Better::Higher).unwrap();
    assert_eq!((up.text().as_str(), up.change), ("+3.2%", Change::Better));
    let slower = delta(Some(100.0), Some(89.0), Better::Higher).unwrap();
    assert_eq!((slower.text().as_str(), slower.change), ("-11%", Change::Worse));
    // A higher TTFT is worse, a lower one better.
    assert_eq!(delta(Some(20.0), Some(25.0), Better::Lower).unwrap().change, Change::Worse);
    assert_eq!(delta(Some(20.0), Some(15.0), Better::Lower).unwrap().change, Change::Better);
    assert_eq!(delta(Some(20.0), Some(20.0), Better::Lower).unwrap().change, Change::Same);
    // Nothing to compare: a side without a value, or a base of 0 with a new value.
    assert_eq!(delta(None, Some(1.0), Better::Higher), None);
    assert_eq!(delta(Some(1.0), None, Better::Higher), None);
    assert_eq!(delta(Some(0.0), Some(5.0), Better::Higher), None);
}

/// `full_report` with every measured throughput scaled by `speed` (and TTFT by its inverse).
fn slower(speed: f64) -> SessionReport {
    let mut r = full_report();
    for cell in r.decode.iter_mut().flat_map(|d| &mut d.cells) {
        for a in &mut cell.attempts {
            a.aggregate_tps *= speed;
            a.request_samples.iter_mut().for_each(|s| s.ttft_ms = s.ttft_ms.map(|t| t / speed));
            a.ttft_ms.iter_mut().for_each(|s| s.p50 /= speed);
        }
    }
    for p in &mut r.phases {
        p.output_tokens_per_second *= speed;
    }
    r
}

#[test]
fn the_baseline_finds_cells_as_compare_matches_them() {
    let b = Baseline::of("base.json", full_report());
    let key = CellKey::cell(ExperimentKind::Decode, 16_384, 8);
    let (tps, better) = Baseline::value(b.cell(&key).expect("decode ctx=16k conc=8"), Pick::Throughput).unwrap();
    assert_eq!(better, Better::Higher);
    let d = b.deltas(&key, &[(Pick::Throughput, Some(tps * 0.5)), (Pick::TtftP50, None)]);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].0, d[0].1.text().as_str(), d[0].1.change), (Pick::Throughput, "-50%", Change::Worse));
    assert!(
        b.cell(&CellKey::cell(ExperimentKind::Decode, 16_384, 4)).is_some(),
        "an errored cell's result is its attempt"
    );
    assert!(b.cell(&CellKey::cell(ExperimentKind::Burst, 16_384, 8)).is_none(), "no such cell");
    assert!(b.cell(&CellKey::cell(ExperimentKind::Decode, 0, 1)).is_none());
    let phase = &b.report.phases[0].phase;
    assert!(b.cell(&CellKey::phase(phase)).is_some(), "routing phases by name");
    assert!(b.deltas(&CellKey::cell(ExperimentKind::Decode, 0, 1), &[(Pick::Throughput, Some(1.0))]).is_empty());
}

#[test]
fn a_report_records_the_baseline_and_each_cells_figures() {
    let b = Baseline::of("base.json", full_report());
    let mut r = slower(0.5);
    annotate(&mut r, &b);
    assert_eq!(r.plan.baseline, Some(BaselineInfo { path: "base.json".into(), started_at: full_report().started_at }));
    let cell = &r.decode.as_ref().unwrap().cells[1];
    let tps = figure(&cell.baseline, "aggregate_tok_s").expect("throughput compared");
    assert_eq!((tps.change, tps.better), (Change::Worse, Better::Higher));
    assert!((tps.delta_pct.unwrap() + 50.0).abs() < 1e-9, "{tps:?}");
    assert!(figure(&cell.baseline, TTFT_P50).is_some_and(|f| f.change == Change::Worse), "{:?}", cell.baseline);
    assert!(figure(&cell.baseline, "per_request_tok_s").is_none(), "only the overlay's figures");
    let phase = &r.phases[0].baseline;
    assert!(figure(phase, "output_tok_s").is_some_and(|f| f.change == Change::Worse), "{phase:?}");
    assert!(figure(phase, GOODPUT).is_some_and(|f| f.change == Change::Same), "{phase:?}");
    let json = serde_json::to_value(&r).unwrap();
    assert_valid(&json);
    let back: SessionReport = serde_json::from_value(json).unwrap();
    assert_eq!(back, r, "the recorded figures read back");
}

#[test]
fn cells_of_a_rate_sweep_get_the_deltas_of_their_own_rate() {
    use crate::load::rate::Rate;
    // One ctx x conc cell at two arrival rates, the faster one measured at double throughput.
    let sweep = |fast: f64| {
        let mut r = full_report();
        let d = r.decode.as_mut().unwrap();
        let mut cell = d.cells[1].clone();
        cell.rate = Some(Rate::PerSecond(2.0));
        let mut faster = cell.clone();
        faster.rate = Some(Rate::PerSecond(4.0));
        faster.attempts.iter_mut().for_each(|a| a.aggregate_tps *= fast);
        d.cells = vec![cell, faster];
        r
    };
    let b = Baseline::of("base.json", sweep(2.0));
    let mut r = sweep(1.0);
    annotate(&mut r, &b);
    let cells = &r.decode.as_ref().unwrap().cells;
    let delta = |i: usize| figure(&cells[i].baseline, "aggregate_tok_s").and_then(|f| f.delta_pct);
    assert!(delta(0).is_some_and(|d| d.abs() < 1e-9), "2/s against 2/s: {:?}", cells[0].baseline);
    assert!(delta(1).is_some_and(|d| (d + 50.0).abs() < 1e-9), "4/s against 4/s: {:?}", cells[1].baseline);
}

#[test]
fn the_final_tables_show_deltas_only_with_a_baseline() {
    let plain = crate::report::tables::render_text(&full_report(), true, false);
    assert!(!plain.contains("baseline"), "{plain}");
    let mut r = slower(0.5);
    annotate(&mut r, &Baseline::of("base.json", full_report()));
    let text = crate::report::tables::render_text(&r, true, false);
    for want in [text::DECODE_TITLE, text::BURST_TITLE, text::ROUTING_TITLE, "against base.json"] {
        assert!(text.contains(want), "no {want}:\n{text}");
    }
    let decode = text.split(text::DECODE_TITLE).nth(1).unwrap();
    let row = decode.lines().find(|l| l.starts_with("| 16k")).unwrap();
    assert_eq!(row.matches("-50%").count(), 2, "{row}");
    let plain = crate::report::tables::render_text(&SessionReport { decode: None, ..r.clone() }, true, false);
    assert!(!plain.contains(text::DECODE_TITLE) && plain.contains(text::ROUTING_TITLE), "{plain}");
    let routing = text.split(text::ROUTING_TITLE).nth(1).unwrap();
    assert!(routing.lines().any(|l| l.contains("-50%") && l.contains("0.0%")), "{routing}");
}

#[test]
fn serve_cells_get_the_deltas_of_their_own_rate() {
    let sweep = |inf_tps: f64| {
        let mut r = crate::report::tests_shapes::with_serve();
        let s = r.serve.as_mut().unwrap();
        let mut at4 = s.cells[0].clone();
        at4.request_rate = "4".into();
        s.cells[0].attempts.iter_mut().for_each(|a| a.metrics.output_throughput = inf_tps);
        s.cells[1] = at4;
        r
    };
    let b = Baseline::of("base.json", sweep(100.0));
    let mut r = sweep(50.0);
    annotate(&mut r, &b);
    assert_valid(&serde_json::to_value(&r).unwrap());
    let cells = &r.serve.as_ref().unwrap().cells;
    let delta = |i: usize| figure(&cells[i].baseline, "output_tok_s").and_then(|f| f.delta_pct);
    assert!(delta(0).is_some_and(|d| (d + 50.0).abs() < 1e-9), "inf against inf: {:?}", cells[0].baseline);
    assert!(delta(1).is_some_and(|d| d.abs() < 1e-9), "4/s against 4/s: {:?}", cells[1].baseline);
}

#[test]
fn a_repeated_baseline_calls_a_delta_inside_its_interval_within_noise() {
    let mut saved = full_report();
    let cell = &mut saved.decode.as_mut().unwrap().cells[1];
    cell.attempts = [500.0, 550.0, 600.0]
        .iter()
        .enumerate()
        .map(|(i, t)| crate::report::decode::DecodeAttempt {
            aggregate_tps: *t,
            ..crate::report::tests_schema::full_attempt(i as u32 + 1, crate::report::status::AttemptStatus::Measured)
        })
        .collect();
    crate::report::runs::annotate(&mut saved, 3);
    let b = Baseline::of("base.json", saved.clone());
    // A repeated session against it: its final tables mark the delta within noise.
    let mut this = saved;
    this.decode.as_mut().unwrap().cells[1].attempts.iter_mut().for_each(|a| a.aggregate_tps -= 20.0);
    crate::report::runs::annotate(&mut this, 3);
    annotate(&mut this, &b);
    let text = crate::report::tables::render_text(&this, true, false);
    assert!(text.contains("-3.6% ~") && text.contains("~ = within noise"), "{text}");
    let key = CellKey::cell(ExperimentKind::Decode, 16_384, 8);
    assert_eq!(Baseline::value(b.cell(&key).unwrap(), Pick::Throughput).map(|v| v.0), Some(550.0), "the mean");
    // One run of 530: −3.6%, inside the interval the baseline's spread gives.
    let d = b.deltas(&key, &[(Pick::Throughput, Some(530.0))]);
    assert_eq!(d[0].1.change, Change::WithinNoise, "{d:?}");
    assert_eq!(deltas_text(&d), "tok/s -3.6% (within noise)");
    // 100 tok/s is far outside it: worse.
    assert_eq!(b.deltas(&key, &[(Pick::Throughput, Some(100.0))])[0].1.change, Change::Worse);
    // Without repetitions on either side the sign decides, as before.
    let plain = Baseline::of("base.json", full_report());
    let tps = Baseline::value(plain.cell(&key).unwrap(), Pick::Throughput).unwrap().0;
    assert_eq!(plain.deltas(&key, &[(Pick::Throughput, Some(tps * 0.99))])[0].1.change, Change::Worse);
}
