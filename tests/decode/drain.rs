//! `--drain` end to end on the paused clock: at the window's end every stream finishes its
//! request instead of being cut, so the report's requests and output tokens equal the
//! simulator's own counts exactly; without it the cut streams leave generated tokens the client
//! never received (the contrast that shows the check can fail).

use crate::common;
use common::config;
use llm_decode_bench::load::sample::RecordedOutcome;
use llm_decode_bench::report::json::SessionReport;
use std::time::Duration;

/// Requests and output tokens recorded by `r`'s decode attempts.
fn recorded(r: &SessionReport) -> (u64, u64, u64) {
    let attempts: Vec<_> = r.decode.iter().flat_map(|d| &d.cells).flat_map(|c| &c.attempts).collect();
    let requests = attempts.iter().flat_map(|a| a.request_outcomes.values()).sum();
    let cut = attempts.iter().filter_map(|a| a.request_outcomes.get(&RecordedOutcome::Cut)).sum();
    let tokens = attempts.iter().flat_map(|a| &a.request_samples).map(|s| s.output_tokens).sum();
    (requests, cut, tokens)
}

/// A decode session at conc 2 and 3 (`max_tokens`-token requests, 1 s windows) with `--drain`
/// or not; the report and the simulator's (requests finished, tokens generated).
async fn session(drain: bool, max_tokens: u64) -> (SessionReport, (u64, u64)) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("drain.json");
    common::paused(move || async move {
        let c = common::inproc_cluster(1, 25.0, |_| {});
        let r = &c.info().replicas[0];
        let mut cfg = config(&r.url, &r.metrics_url, &out, vec![0], vec![2, 3]);
        cfg.window = Duration::from_secs(1);
        cfg.decode.max_tokens = Some(max_tokens);
        cfg.decode.drain = drain;
        let report = common::run_inproc(cfg, &c).await;
        let s = c.replica_stats(0).unwrap();
        (report, (s.finished_stop + s.finished_length + s.finished_abort, s.generation_tokens))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drained_window_counts_exactly_what_the_server_generated() {
    let (report, (finished, generated)) = session(true, 200).await;
    assert!(report.complete);
    let (requests, cut, tokens) = recorded(&report);
    assert_eq!(cut, 0, "no request is cut when the window drains");
    assert_eq!((requests, tokens), (finished, generated), "report vs simulator");
    assert_eq!(report.plan.settings.get("drain").map(String::as_str), Some("true"));

    let (report, (finished, generated)) = session(false, 200).await;
    let (requests, cut, tokens) = recorded(&report);
    assert!(cut > 0, "streams are cut at the window's end");
    assert_eq!(requests, finished, "every request is counted either way");
    assert!(tokens < generated, "cut streams leave generated tokens unread: {tokens} vs {generated}");
}

/// Requests too long to end within the drain's 8 s are cut once it is over: the session ends,
/// with every request counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_that_cannot_finish_cuts_after_its_wait() {
    let (report, (finished, _)) = session(true, 1_000_000).await;
    assert!(report.complete);
    let (requests, cut, _) = recorded(&report);
    assert_eq!((requests, cut), (finished, requests), "every request outlasts the drain and is cut");
}
