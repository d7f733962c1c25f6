//! End-to-end decode verdicts against the simulator in process, on tokio's paused clock: when
//! the window opens at long context, when a cell is capacity-limited and by what, turnover
//! kept apart from a limit, and a cell whose every request failed (docs/protocol.md §8.6).

use crate::common;

use common::{config, inproc_cluster, validate};
use llm_decode_bench::config::RunConfig;
use llm_decode_bench::report::json::{DecodeAttempt, SessionReport};
use llm_decode_bench::report::status::{AttemptStatus, CapacityLimit, CellOutcome};
use llm_decode_bench::session::start_with;
use llm_decode_bench::sim::SimConfig;
use std::time::Duration;

/// Longest a session may run, in virtual time.
const LIMIT: Duration = Duration::from_secs(900);

/// Runs a decode session of `ctx x conc` over one in-process replica; `tweak` sets the sim,
/// `adjust` the run.
async fn run(
    ctx: u64,
    conc: u32,
    tweak: impl FnOnce(&mut SimConfig),
    adjust: impl FnOnce(&mut RunConfig),
) -> SessionReport {
    let cluster = inproc_cluster(1, 1.0, tweak);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.json");
    let r = &cluster.info().replicas[0];
    let mut cfg = config(&r.url, &r.metrics_url, &out, vec![ctx], vec![conc]);
    cfg.window = Duration::from_secs(3);
    adjust(&mut cfg);
    let h = start_with(cfg, cluster.backend()).await.expect("preflight passes");
    let report = tokio::time::timeout(LIMIT, h.join).await.expect("the session ends").unwrap();
    let file = validate(&out);
    assert!(file == report, "the file holds the final report");
    report
}

fn only(r: &SessionReport) -> (CellOutcome, &DecodeAttempt) {
    let cell = &r.decode.as_ref().expect("decode section").cells[0];
    (cell.status, cell.attempts.last().expect("an attempt"))
}

fn text(r: &SessionReport) -> String {
    llm_decode_bench::report::tables::render_text(r, false, false)
}

#[tokio::test(start_paused = true)]
async fn at_long_context_the_window_opens_once_every_stream_decodes() {
    // A slow prefill (2 ms a token: 8 s for 4k, in two 2048-token chunks of 4 s) admitted one
    // prompt at a time. While the first chunk of the next prompt runs, the gauge still shows
    // only the streams that decode, with the rest waiting: 40 polls of a flat running count.
    let report = run(
        4096,
        4,
        |c| c.engine.step_per_prefill_token = Duration::from_millis(2),
        |cfg| cfg.decode.warmup_timeout = Duration::from_secs(120),
    )
    .await;
    let (status, a) = only(&report);
    assert_eq!(status, CellOutcome::Measured);
    assert_eq!(a.streaming_at_start, 4, "every stream decodes when the window opens");
    assert!(a.warmup_s >= 30.0, "four 8 s prefills one after another: warmup {} s", a.warmup_s);
    assert!(!a.warmup_timed_out);
    assert!(!a.capacity_limited && a.capacity_limit.is_none(), "{:?}", a.capacity_limit);
    let ttft = a.ttft_ms.expect("TTFT");
    assert!(ttft.max >= 30_000.0, "the last stream waited for three prefills: {ttft:?}");
    assert!(!text(&report).contains('*'), "{}", text(&report));
}

#[tokio::test(start_paused = true)]
async fn short_requests_turning_over_are_not_a_limit() {
    // 256-token prompts and 128 output tokens at conc 8 on max_num_seqs 8; each request spends
    // 400 ms in the API server before the engine sees it, so slots sit empty between requests.
    let report = run(
        256,
        8,
        |c| c.engine.frontend_delay = Duration::from_millis(400),
        |cfg| {
            cfg.decode.max_tokens = Some(128);
            cfg.window = Duration::from_secs(10);
        },
    )
    .await;
    let (status, a) = only(&report);
    assert_eq!(status, CellOutcome::Measured);
    let running = a.running_avg.expect("running average");
    assert!(running < 7.4, "turnover lowers the running average: {running}");
    assert!(a.waiting_avg.unwrap_or(0.0) < 0.5, "nothing waits: {:?}", a.waiting_avg);
    assert!(!a.capacity_limited && a.capacity_limit.is_none(), "{:?}", a.capacity_limit);
    assert!(a.turnover, "the deficit is turnover");
    let t = text(&report);
    assert!(t.contains("/8)") && !t.contains("/8)*"), "(X/8) without a star:\n{t}");
}

#[tokio::test(start_paused = true)]
async fn more_streams_than_max_num_seqs_is_limited_by_the_sequence_cap() {
    let report = run(256, 12, |c| c.engine.max_num_seqs = 4, |_| {}).await;
    let (status, a) = only(&report);
    assert_eq!(status, CellOutcome::Measured);
    assert!(a.capacity_limited && !a.turnover);
    assert_eq!(a.capacity_limit, Some(CapacityLimit::MaxNumSeqs));
    assert!(!a.prometheus.as_ref().expect("validation").counts_disagree);
    assert!(text(&report).contains("(4/12)*"), "{}", text(&report));
}

#[tokio::test(start_paused = true)]
async fn a_cell_whose_every_request_fails_is_errored() {
    let report = run(
        0,
        2,
        |c| c.faults = "http500=1".parse().expect("fault spec"),
        |cfg| cfg.decode.warmup_timeout = Duration::from_secs(5),
    )
    .await;
    let (status, a) = only(&report);
    assert_eq!((status, a.status), (CellOutcome::Errored, AttemptStatus::Errored));
    assert!(a.error_count > 0 && a.window_tokens == 0);
}
