use super::*;
use crate::config::slo_search::{Resolution, SearchMode};
use crate::experiment::slo_search::search::{Judged, Step};
use crate::report::extension::figure;

fn cfg() -> SloSearchConfig {
    SloSearchConfig {
        mode: SearchMode::Concurrency,
        target: 0.99,
        start: 1.0,
        max: 16.0,
        resolution: Resolution::Absolute(1.0),
        repeats: 3,
    }
}

/// A probe at `load` (repeat `repeat`) where `good` of 100 met the SLO, judged `verdict` on
/// `pooled`; 2 s long, 1000 output tokens.
fn probe(load: f64, repeat: u32, good: u64, pooled: Proportion, verdict: Option<bool>) -> Probe {
    Probe {
        step: Step { load, repeat },
        tally: Proportion::new(good, 100),
        judged: Judged { pooled, interval: (0.9, 1.0), verdict },
        goodput: good as f64 / 2.0,
        duration_s: 2.0,
        ttft_ms: [Some(20.0), Some(40.0)],
        tpot_ms: [Some(5.0), Some(6.0)],
        output_tokens: 1000,
        output_tps: 500.0,
        failed: 100 - good.max(90),
    }
}

#[test]
fn the_found_load_pools_its_probes_and_every_probe_is_a_row() {
    let probes = vec![
        probe(4.0, 1, 100, Proportion::new(100, 100), Some(true)),
        probe(8.0, 1, 99, Proportion::new(99, 100), None),
        probe(8.0, 2, 100, Proportion::new(199, 200), Some(true)),
        probe(16.0, 1, 50, Proportion::new(50, 100), Some(false)),
    ];
    let out = Outcome { cfg: cfg(), slo: "ttft:500".into(), bracket: (Some(8.0), Some(16.0)), ending: None };
    let a = attempt((1, 3.0, 9.0), &probes, Default::default(), Some(21.0), &out);
    assert_eq!(figure(&a, "found_load"), Some(8.0));
    assert_eq!(figure(&a, "first_fail"), Some(16.0));
    assert_eq!(figure(&a, "found_attainment"), Some(199.0 / 200.0), "both probes at 8 pooled");
    assert_eq!(figure(&a, "found_goodput"), Some(199.0 / 4.0), "good requests per second of the two probes");
    assert_eq!(figure(&a, "found_output_tps"), Some(500.0));
    assert_eq!(figure(&a, "probes"), Some(4.0));
    assert_eq!((a.requests, a.output_tokens, a.output_tps), (400, 4000, 500.0));
    assert_eq!(a.status, AttemptStatus::Measured);
    let t = &a.tables["probes"];
    assert_eq!((t.key.as_str(), t.rows.len(), t.columns[0].unit.as_str()), ("probe", 4, "streams"));
    let col = |name: &str| t.columns.iter().position(|c| c.name == name).unwrap();
    assert_eq!(t.rows[1].values[col("pass")], None, "probed again: no verdict yet");
    assert_eq!(t.rows[2].values[col("pass")], Some(1.0));
    assert_eq!(t.rows[3].values[col("pass")], Some(0.0));
    assert_eq!(t.rows[2].values[col("pooled_requests")], Some(200.0));
    assert_eq!(t.rows[2].values[col("repeat")], Some(2.0));
    assert!(t.rows.iter().all(|r| r.values.len() == t.columns.len()));
    assert_eq!(a.labels["outcome"], "stopped before the bracket closed");
    assert_eq!(a.labels["mode"], "concurrency");
    assert_eq!(a.labels["resolution"], "1 stream");
    assert_eq!(a.labels["target"], "99%");
    assert_eq!(a.labels["loads"], "1 to 16 streams");
}

#[test]
fn an_everything_passes_search_has_no_first_fail_and_a_none_passes_one_no_load() {
    let all =
        Outcome { cfg: cfg(), slo: "ttft:500".into(), bracket: (Some(16.0), None), ending: Some(Ending::AllPassed) };
    let probes = vec![probe(16.0, 1, 100, Proportion::new(100, 100), Some(true))];
    let a = attempt((1, 0.0, 1.0), &probes, Default::default(), None, &all);
    assert_eq!((figure(&a, "found_load"), figure(&a, "first_fail")), (Some(16.0), None));
    assert_eq!(a.labels["outcome"], "every load passed up to the highest");
    let none = Outcome { bracket: (None, Some(1.0)), ending: Some(Ending::NonePassed), ..all };
    let probes = vec![probe(1.0, 1, 0, Proportion::new(0, 100), Some(false))];
    let a = attempt((1, 0.0, 1.0), &probes, Default::default(), None, &none);
    assert_eq!((figure(&a, "found_load"), figure(&a, "first_fail")), (None, Some(1.0)));
    assert_eq!((figure(&a, "found_attainment"), figure(&a, "found_goodput")), (None, None));
    assert_eq!(a.labels["outcome"], "even the lowest load failed");
}
