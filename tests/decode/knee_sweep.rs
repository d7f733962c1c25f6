//! End-to-end: a concurrency sweep against a simulated engine that runs at most 4 requests at
//! once (in process, on tokio's paused clock, so the machine's load cannot move its capacity).
//! Throughput stops rising at conc 8 while the engine queue grows: the report marks the knee
//! there, with its evidence, and `--stop-at-knee` skips the cell past it.

use crate::common;

use common::{config, inproc_cluster, validate};
use llm_decode_bench::report::json::{DecodeCell, SessionReport};
use llm_decode_bench::report::status::CellOutcome;
use llm_decode_bench::session::start_with;
use llm_decode_bench::stats::saturation::SaturationVerdict;
use std::time::Duration;

fn cell(r: &SessionReport, conc: u32) -> &DecodeCell {
    r.decode.as_ref().unwrap().cells.iter().find(|c| c.conc == conc).unwrap()
}

#[tokio::test(start_paused = true)]
async fn the_knee_is_found_and_the_row_stops_there() {
    let c = inproc_cluster(1, 1.0, |cfg| cfg.engine.max_num_seqs = 4);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("knee.json");
    let r = &c.info().replicas[0];
    let mut cfg = config(&r.url, &r.metrics_url, &out, vec![0], vec![1, 2, 4, 8, 16]);
    cfg.decode.stop_at_knee = true;
    cfg.window = Duration::from_secs(3);
    let h = start_with(cfg, c.backend()).await.expect("preflight passes");
    let report = tokio::time::timeout(Duration::from_secs(900), h.join).await.expect("the session ends").unwrap();
    let file = validate(&out);
    assert!(file == report, "the file holds the final report");

    let decode = report.decode.as_ref().unwrap();
    let tps: Vec<f64> = [1, 2, 4, 8].iter().map(|&n| cell(&report, n).attempts[0].aggregate_tps).collect();
    assert_eq!(decode.knees.len(), 1, "tok/s {tps:?}: {:#?}", decode.knees);
    let k = &decode.knees[0];
    assert_eq!((k.ctx, k.axis.as_str(), k.at_conc), (0, "conc", Some(8)), "tok/s {tps:?}: {k:#?}");
    assert_eq!(k.knee.previous, "4");
    assert!(k.knee.tps_gain.abs() < 0.05 && k.knee.tps_noise.is_some(), "{k:#?}");
    let queue = k.knee.rising.iter().find(|r| r.metric == "waiting").expect("the queue rose");
    assert!(queue.before < 0.5 && (3.0..=5.0).contains(&queue.after), "{queue:?}");

    for conc in [1, 2, 4, 8] {
        let a = &cell(&report, conc).attempts[0];
        let s = a.saturation.as_ref().expect("a saturation test per attempt");
        assert!(s.waiting.is_some() && s.tps_noise.is_some(), "conc {conc}: {s:?}");
        // A closed loop's queue is bounded by its streams: it does not grow over the window.
        assert_ne!(s.verdict, SaturationVerdict::OverSaturated, "conc {conc}: {s:?}");
    }
    let past = cell(&report, 16);
    assert_eq!(past.status, CellOutcome::Skipped);
    assert!(past.attempts.is_empty());
    let reason = past.timeout_reason.as_deref().unwrap();
    assert_eq!(reason, "past the knee at conc 8 (ctx 0) (--stop-at-knee)");

    let text = llm_decode_bench::report::tables::render_text(&report, false, false);
    assert!(text.contains("K: knee at conc 8 (ctx 0): tok/s "), "{text}");
    assert!(text.contains("queue 0.0→4.0") || text.contains("queue 0.0→"), "{text}");
    let marked = text.lines().filter(|l| l.starts_with("│ 0 ") && l.contains(" K │")).count();
    assert_eq!(marked, 2, "the aggregate and summary matrices mark the cell:\n{text}");
}
