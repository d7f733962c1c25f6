//! A replica whose metrics cannot be read at preflight (down, the simulator's
//! `set_replica_down`) and that answers right after, on tokio's paused clock: the poller
//! re-detects its dialect and KV capacity, and a grid cell that turns out not to fit is skipped
//! (decode and burst) with the plan's deficit reason before it starts, instead of run.

use crate::common;

use common::{config, inproc_cluster, validate};
use llm_decode_bench::config::MetricsEndpoint;
use llm_decode_bench::experiment::decode::grid::kv_skip_reason;
use llm_decode_bench::report::status::CellOutcome;
use llm_decode_bench::session::start_with;
use std::time::Duration;

/// Longest the test may run, in virtual time.
const LIMIT: Duration = Duration::from_secs(600);

/// KV blocks per simulated replica: 512 x 16 = 8192 tokens each.
const KV_BLOCKS: usize = 512;

#[tokio::test(start_paused = true)]
async fn a_cell_that_no_longer_fits_once_capacity_is_known_is_skipped() {
    let cluster = inproc_cluster(2, 1.0, |c| c.engine.kv_blocks = KV_BLOCKS);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.json");
    let r = cluster.replicas();
    // The load goes to sim-a; sim-b is only polled.
    let mut cfg = config(&r[0].url, &r[0].metrics_url, &out, vec![256], vec![1, 128]);
    cfg.metrics = r.iter().map(|r| MetricsEndpoint { name: r.name.clone(), url: r.metrics_url.clone() }).collect();
    cfg.decode.kv_oversubscribe = 1.0;
    cfg.window = Duration::from_secs(2);
    cfg.decode.run_burst = true;
    assert!(cluster.set_replica_down(1, true));
    let h = start_with(cfg, cluster.backend()).await.expect("preflight passes without sim-b's metrics");
    assert!(cluster.set_replica_down(1, false));
    let report = tokio::time::timeout(LIMIT, h.join).await.expect("the session ends").expect("runner");
    let file = validate(&out);

    let capacity = 2 * KV_BLOCKS as u64 * 16;
    let want = kv_skip_reason(256, 128, Some(capacity), 1.0).expect("256 x 128 does not fit in 16384").reason;
    let cells = &file.decode.as_ref().expect("decode section").cells;
    assert_eq!(cells[0].status, CellOutcome::Measured, "256 x 1 fits and runs while sim-b is re-detected");
    assert_eq!(cells[1].status, CellOutcome::Skipped, "{:?}", cells[1].attempts.first().map(|a| a.status));
    assert_eq!(cells[1].timeout_reason.as_deref(), Some(want.as_str()));
    assert_eq!(cells[1].skip, Some(llm_decode_bench::report::skip::SkipKind::KvCache), "the report says which skip");
    assert!(want.contains("deficit 16384 tokens"), "{want}");
    assert!(cells[1].attempts.is_empty(), "never started");
    let burst = &file.burst.as_ref().expect("burst section").cells;
    assert_eq!(burst[0].status, CellOutcome::Measured);
    assert_eq!((burst[1].status, burst[1].timeout_reason.as_deref()), (CellOutcome::Skipped, Some(want.as_str())));
    assert!(burst[1].attempts.is_empty(), "never started");

    let b = file.target.replica_info.iter().find(|i| i.name == "sim-b").expect("sim-b listed");
    assert_ne!(b.dialect, "unknown", "re-detected: {b:?}");
    assert_eq!(b.kv_capacity_tokens, Some(capacity / 2));
    assert_eq!(file.target.kv_capacity_tokens, Some(capacity));
    assert_eq!(report.decode, file.decode);
}
