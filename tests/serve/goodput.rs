//! End-to-end goodput: a headless decode session on the simulator under `--goodput ttft:MS`,
//! where long prompts miss the TTFT bound and short ones meet it; every cell's good count is
//! checked against its per-request records, and the SLO is recorded and printed. In process on
//! the paused clock: a busy machine cannot push a short prompt's first token past the bound.

use crate::common;

use common::{config, inproc_cluster, validate};
use llm_decode_bench::config::SloSource;
use llm_decode_bench::report::json::{DecodeAttempt, SessionReport};
use llm_decode_bench::session::start_with;
use llm_decode_bench::stats::Slo;
use std::time::Duration;

const TTFT_BOUND_MS: f64 = 250.0;

fn last<'a>(r: &'a SessionReport, ctx: &str) -> &'a DecodeAttempt {
    let cell = r.decode.as_ref().unwrap().cells.iter().find(|c| c.ctx_label == ctx).expect("cell");
    cell.attempts.last().expect("an attempt")
}

#[tokio::test(start_paused = true)]
async fn decode_goodput_matches_the_request_records() {
    // At 2x, a 6k prompt takes about 0.5 s to prefill; an empty one a few ms.
    let c = inproc_cluster(1, 2.0, |_| {});
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("goodput.json");
    let r = &c.info().replicas[0];
    let mut cfg = config(&r.url, &r.metrics_url, &out, vec![0, 6144], vec![2]);
    cfg.slo = Slo::from_goodput(&[format!("ttft:{TTFT_BOUND_MS}")]).unwrap();
    cfg.slo_source = SloSource::Goodput;
    let h = start_with(cfg, c.backend()).await.expect("preflight passes");
    let report = tokio::time::timeout(Duration::from_secs(600), h.join).await.expect("the session ends").unwrap();
    assert!(validate(&out) == report, "the file holds the final report and passes the schema");

    let slo = report.plan.slo.expect("plan.slo recorded");
    assert_eq!(
        (slo.ttft_ms, slo.tpot_ms, slo.e2el_ms, slo.source),
        (Some(TTFT_BOUND_MS), None, None, SloSource::Goodput)
    );
    assert_eq!(report.plan.settings.get("goodput").map(String::as_str), Some("ttft:250"));

    for ctx in ["0", "6k"] {
        let a = last(&report, ctx);
        let g = a.goodput.expect("every decode attempt has goodput");
        let total: u64 = a.request_outcomes.values().sum();
        assert_eq!(a.request_samples.len() as u64, total, "{ctx}: every record is kept");
        let judged: Vec<_> = a.request_samples.iter().filter(|r| r.good.is_some()).collect();
        assert_eq!(g.judged, judged.len() as u64, "{ctx}: judged = records with a verdict");
        assert_eq!(g.good, judged.iter().filter(|r| r.good == Some(true)).count() as u64, "{ctx}");
        for rec in &judged {
            // A TTFT-only SLO: good exactly when the first token came within the bound.
            let met = rec.ttft_ms.is_some_and(|t| t <= TTFT_BOUND_MS);
            assert_eq!(rec.good, Some(met), "{ctx}: {rec:?}");
        }
        assert!(g.judged >= 2, "{ctx}: both streams ran through the window: {g:?}");
        assert!((g.rps - g.good as f64 / a.window_s).abs() < 1e-9, "{ctx}: rps is good per window second");
    }
    let short = last(&report, "0").goodput.unwrap();
    assert_eq!(short.good, short.judged, "short prompts meet {TTFT_BOUND_MS} ms: {short:?}");
    let long = last(&report, "6k").goodput.unwrap();
    assert!(long.good < long.judged, "6k prompts miss {TTFT_BOUND_MS} ms: {long:?}");
    assert_eq!(long.fraction, Some(long.good as f64 / long.judged as f64));

    let text = llm_decode_bench::report::tables::render_text(&report, true, false);
    for needle in ["goodput SLO: TTFT ≤ 250 ms", "Decode goodput", &format!("{}/{}", long.good, long.judged)] {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }
    let csv = llm_decode_bench::report::csv::render(&report);
    assert!(csv.lines().next().unwrap().ends_with(",judged,goodput_rps,rate,figures,tables"), "{csv}");
}
