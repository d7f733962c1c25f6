//! A replica taken down mid-session and brought back (the simulator's `set_replica_down`,
//! `sim::faults::Power`), on tokio's paused clock against the gateway of two replicas: the
//! requests routed to it fail with a named kind while the cell measures on, the poller marks it
//! stale and then fresh again, the next cell runs on both replicas, and the report says so.

use crate::common::{config, inproc_cluster, validate};
use llm_decode_bench::cell::control::{Phase, RunnerEvent};
use llm_decode_bench::config::MetricsEndpoint;
use llm_decode_bench::load::sample::ErrorKind;
use llm_decode_bench::metrics::poller::MetricsSnapshot;
use llm_decode_bench::report::status::{AttemptStatus, CellOutcome};
use llm_decode_bench::session::start_with;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// Longest any wait here may take, in virtual time.
const LIMIT: Duration = Duration::from_secs(600);

/// Waits for the runner's event `want`.
async fn event(events: &mut mpsc::UnboundedReceiver<RunnerEvent>, want: RunnerEvent) {
    let wait = async {
        while let Some(ev) = events.recv().await {
            if ev == want {
                return;
            }
        }
        panic!("the session ended before {want:?}");
    };
    tokio::time::timeout(LIMIT, wait).await.unwrap_or_else(|_| panic!("timed out waiting for {want:?}"));
}

/// Waits until replica `name`'s staleness in the polled metrics is `stale`.
async fn staleness(metrics: &mut watch::Receiver<Arc<MetricsSnapshot>>, name: &str, stale: bool) {
    let wait = async {
        while metrics.borrow_and_update().replica(name).is_none_or(|r| r.stale != stale) {
            metrics.changed().await.expect("the poller runs");
        }
    };
    tokio::time::timeout(LIMIT, wait).await.unwrap_or_else(|_| panic!("{name} never had stale = {stale}"));
}

#[tokio::test(start_paused = true)]
async fn a_replica_down_and_back_fails_its_requests_by_name_and_the_session_goes_on() {
    let cluster = inproc_cluster(2, 1.0, |_| {});
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("report.json");
    let (gw, r) = (&cluster.info().gateway, cluster.replicas());
    let mut cfg = config(&gw.url, &r[0].metrics_url, &out, vec![256], vec![4, 6]);
    cfg.metrics = r.iter().map(|r| MetricsEndpoint { name: r.name.clone(), url: r.metrics_url.clone() }).collect();
    cfg.window = Duration::from_secs(10);
    cfg.decode.settle = Duration::from_millis(100);
    let mut h = start_with(cfg, cluster.backend()).await.expect("preflight passes");
    let mut metrics = h.metrics.clone().expect("polling");
    event(&mut h.events, RunnerEvent::Phase { cell: 0, phase: Phase::Measuring }).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(cluster.set_replica_down(1, true));
    staleness(&mut metrics, "sim-b", true).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(cluster.set_replica_down(1, false));
    staleness(&mut metrics, "sim-b", false).await;
    assert_eq!(h.snapshot.borrow().current, Some(0), "back within the first cell's window");
    let report = tokio::time::timeout(LIMIT, h.join).await.expect("the session ends").expect("runner");

    assert!(report.complete, "the session went on to its end");
    assert_eq!(validate(&out), report, "the file holds the final report");
    let cells = &report.decode.as_ref().expect("decode section").cells;
    assert!(cells.iter().all(|c| c.status == CellOutcome::Measured), "{:?}", cells.iter().map(|c| c.status));
    let (hit, after) = (cells[0].attempts.last().unwrap(), cells[1].attempts.last().unwrap());
    assert_eq!((hit.status, after.status), (AttemptStatus::Measured, AttemptStatus::Measured));
    let named = hit.errors.get(&ErrorKind::Overloaded).copied().unwrap_or(0);
    assert!(named > 0, "requests routed to the down replica are `overloaded` (gateway 503): {:?}", hit.errors);
    // Streams cut by the crash end with an error event; later requests get the gateway 503.
    assert!(
        hit.errors.keys().all(|k| matches!(k, ErrorKind::Overloaded | ErrorKind::StreamError)),
        "{:?}",
        hit.error_examples
    );
    assert!(after.errors.is_empty(), "both replicas serve the next cell: {:?}", after.errors);
    assert!(cluster.replica_stats(1).expect("sim-b").generation_tokens > 0, "sim-b serves again after its restart");

    let stale = &report.replica_stale["sim-b"];
    assert_eq!(stale.len(), 1, "one stale stretch: {stale:?}");
    assert!(stale[0].to_s.is_some_and(|to| to > stale[0].from_s), "stale, then fresh: {stale:?}");
    assert!(!report.replica_stale.contains_key("sim-a"), "sim-a always answered");
    assert!(hit.target_lost.iter().any(|l| l.replica == "sim-b" && l.lost_s > 0.0), "{:?}", hit.target_lost);
    assert!(after.target_lost.is_empty(), "{:?}", after.target_lost);
    let said = |needle: &str| report.warnings.iter().any(|w| w.contains(needle) && w.contains("sim-b"));
    assert!(said("target lost") && said("metrics polls failed"), "{:?}", report.warnings);
}
