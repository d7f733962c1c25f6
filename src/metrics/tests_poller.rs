//! Tests of the poller task against loopback axum servers serving canned `/metrics` pages.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::super::dialect::EngineDialect;
use super::super::engine::EngineSample;
use super::super::gateway::{self, GatewayDialect};
use super::super::prom::Scrape;
use super::{MetricsSnapshot, MetricsTarget, Poller, PollerConfig, PollerHandle, redact_url};

const SGLANG: &str = include_str!("../../tests/fixtures/sglang.txt");
const LLAMACPP: &str = include_str!("../../tests/fixtures/llamacpp.txt");
const VLLM_ROUTER: &str = include_str!("../../tests/fixtures/vllm_router.txt");

/// Knobs the tests turn between scrapes.
#[derive(Default)]
struct Fake {
    /// `vllm:generation_tokens_total` on `/metrics`.
    generation: AtomicU64,
    /// `/flaky` answers 500 while set.
    failing: AtomicBool,
    /// `/switch`: 0 = unrecognised page, 1 = vLLM, 2 = SGLang fixture.
    mode: AtomicU64,
    /// Added to every counter of the router fixture on `/gateway`.
    routed: AtomicU64,
}

fn vllm_page(generation: u64) -> String {
    let l = r#"{engine="0",model_name="m"}"#;
    format!(
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{l} 3\n\
         # TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{l} 1\n\
         # TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{l} 0.25\n\
         # TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total{l} {generation}\n"
    )
}

async fn metrics(State(f): State<Arc<Fake>>) -> String {
    vllm_page(f.generation.load(Ordering::SeqCst))
}

async fn flaky(State(f): State<Arc<Fake>>) -> (StatusCode, String) {
    match f.failing.load(Ordering::SeqCst) {
        true => (StatusCode::INTERNAL_SERVER_ERROR, "boom".into()),
        false => (StatusCode::OK, vllm_page(f.generation.load(Ordering::SeqCst))),
    }
}

async fn switch(State(f): State<Arc<Fake>>) -> String {
    match f.mode.load(Ordering::SeqCst) {
        0 => "# TYPE up gauge\nup 1\n".into(),
        1 => vllm_page(7),
        _ => SGLANG.into(),
    }
}

async fn fixture(Path(name): Path<String>) -> (StatusCode, &'static str) {
    match name.as_str() {
        "sglang" => (StatusCode::OK, SGLANG),
        "llamacpp" => (StatusCode::OK, LLAMACPP),
        _ => (StatusCode::NOT_FOUND, "no such fixture"),
    }
}

async fn router(State(f): State<Arc<Fake>>) -> String {
    router_page(f.routed.load(Ordering::SeqCst))
}

async fn slow() -> String {
    tokio::time::sleep(Duration::from_secs(5)).await;
    vllm_page(0)
}

async fn serve(fake: Arc<Fake>) -> SocketAddr {
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/flaky", get(flaky))
        .route("/switch", get(switch))
        .route("/fixture/{name}", get(fixture))
        .route("/gateway", get(router))
        .route("/slow", get(slow))
        .route("/fail", get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "internal error") }))
        .route("/garbage", get(|| async { "<html><body>not metrics</body></html>" }))
        .with_state(fake);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.ok() });
    addr
}

/// An address nothing listens on.
async fn refused_addr() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap()
}

fn client() -> crate::load::backend::SharedBackend {
    crate::load::backend::HttpBackend::shared(crate::net::client_builder().no_proxy().build().unwrap())
}

fn target(name: &str, addr: SocketAddr, path: &str) -> MetricsTarget {
    MetricsTarget::new(name, format!("http://{addr}{path}"))
}

fn config(replicas: Vec<MetricsTarget>, interval_ms: u64, timeout_ms: u64) -> PollerConfig {
    PollerConfig::new(replicas, None).with_timing(Duration::from_millis(interval_ms), Duration::from_millis(timeout_ms))
}

fn spawn(cfg: PollerConfig) -> PollerHandle {
    Poller::spawn(client(), cfg, CancellationToken::new())
}

/// The first published snapshot that satisfies `pred`, waiting at most `within`.
async fn wait_for(
    rx: &mut watch::Receiver<Arc<MetricsSnapshot>>,
    within: Duration,
    pred: impl Fn(&MetricsSnapshot) -> bool,
) -> Arc<MetricsSnapshot> {
    let wait = async {
        loop {
            let snap = Arc::clone(&rx.borrow_and_update());
            if pred(&snap) {
                return snap;
            }
            rx.changed().await.expect("poller alive");
        }
    };
    tokio::time::timeout(within, wait).await.expect("condition reached in time")
}

fn generation(snap: &MetricsSnapshot, replica: &str) -> Option<f64> {
    snap.replica(replica)?.sample.as_ref()?.generation_tokens
}

#[tokio::test]
async fn slow_failing_and_refused_replicas_do_not_hold_back_the_snapshot() {
    let addr = serve(Arc::default()).await;
    let replicas = vec![
        target("good", addr, "/metrics"),
        target("slow", addr, "/slow"),
        target("fail", addr, "/fail"),
        target("refused", refused_addr().await, "/metrics"),
        target("garbage", addr, "/garbage"),
    ];
    let start = Instant::now();
    let poller = spawn(config(replicas, 100, 400));
    let mut rx = poller.subscribe();
    let first = wait_for(&mut rx, Duration::from_secs(1), |s| s.seq >= 1).await;
    assert!(first.at - start < Duration::from_millis(250), "first round took {:?}", first.at - start);
    let good = first.replica("good").unwrap();
    assert!(!good.stale && good.last_error.is_none() && good.scrape_latency.is_some());
    assert_eq!(good.dialect, EngineDialect::VllmV1);
    assert_eq!(first.running_total(), Some(3.0));
    let fail = first.replica("fail").unwrap();
    assert_eq!(fail.last_error.as_deref(), Some("HTTP 500 Internal Server Error"));
    assert!(fail.consecutive_failures >= 1 && fail.stale && fail.sample.is_none());
    assert!(first.replica("refused").unwrap().last_error.is_some());
    let garbage = first.replica("garbage").unwrap();
    assert_eq!(garbage.unusable.as_deref(), Some("not a metrics page (HTML)"), "answered, not lost");
    assert!(garbage.last_error.is_none() && !garbage.stale && garbage.sample.is_none());
    assert!(first.replica("slow").unwrap().last_error.is_none(), "still in flight");

    // Rounds keep coming every interval while the slow scrape hangs, and it times out on its own.
    let timed_out = |s: &MetricsSnapshot| s.replica("slow").unwrap().last_error.is_some();
    let late = wait_for(&mut rx, Duration::from_secs(1), timed_out).await;
    assert!(late.seq >= first.seq + 3, "only {} rounds in {:?}", late.seq - first.seq, late.at - first.at);
    assert_eq!(late.replica("slow").unwrap().last_error.as_deref(), Some("timed out after 400 ms"));
    let good = late.replica("good").unwrap();
    assert!(!good.stale && late.at - good.last_ok.unwrap() < Duration::from_millis(200));
    assert!(late.replica("fail").unwrap().consecutive_failures >= 3);
}

#[tokio::test]
async fn dialects_are_detected_from_fixtures_and_kept() {
    let fake = Arc::new(Fake::default());
    let addr = serve(Arc::clone(&fake)).await;
    let replicas = vec![
        target("sg", addr, "/fixture/sglang"),
        target("ll", addr, "/fixture/llamacpp"),
        target("sw", addr, "/switch"),
    ];
    let mut cfg = config(replicas, 10_000, 1_000);
    cfg.gateway = Some(target("gw", addr, "/gateway"));
    let poller = spawn(cfg);
    let snap = poller.scrape_now().await;
    let sg = snap.replica("sg").unwrap();
    assert_eq!(sg.dialect, EngineDialect::Sglang);
    assert_eq!(sg.sample.as_ref(), Some(&EngineSample::detect(&Scrape::parse(SGLANG).unwrap())));
    assert_eq!(sg.sample.as_ref().unwrap().running, Some(7.0));
    assert_eq!(snap.replica("ll").unwrap().dialect, EngineDialect::LlamaCpp);
    assert_eq!(snap.replica("sw").unwrap().dialect, EngineDialect::Unknown);
    let gw = snap.gateway.as_ref().unwrap();
    assert_eq!(gw.dialect, GatewayDialect::VllmRouter);
    assert_eq!(gw.series, gateway::counter_series(&Scrape::parse(&router_page(0)).unwrap()));

    // An unrecognised page leaves the dialect open; the first recognised one fixes it.
    fake.mode.store(1, Ordering::SeqCst);
    let snap = poller.scrape_now().await;
    assert_eq!(snap.replica("sw").unwrap().dialect, EngineDialect::VllmV1);
    fake.mode.store(2, Ordering::SeqCst);
    let sw = poller.scrape_now().await.replica("sw").unwrap().clone();
    assert_eq!(sw.dialect, EngineDialect::VllmV1);
    let sample = sw.sample.unwrap();
    assert_eq!((sample.dialect, sample.running), (EngineDialect::VllmV1, None));
}

fn router_page(bump: u64) -> String {
    VLLM_ROUTER.replace("} 65\n", &format!("}} {}\n", 65 + bump))
}

#[tokio::test]
async fn scrape_now_includes_a_bump_made_just_before_the_call() {
    let fake = Arc::new(Fake::default());
    let addr = serve(Arc::clone(&fake)).await;
    let mut cfg = config(vec![target("a", addr, "/metrics"), target("b", addr, "/metrics")], 10_000, 1_000);
    cfg.gateway = Some(target("gw", addr, "/gateway"));
    let poller = spawn(cfg);
    let mut rx = poller.subscribe();
    let first = wait_for(&mut rx, Duration::from_secs(1), |s| s.seq >= 1).await;
    assert_eq!(generation(&first, "a"), Some(0.0));

    fake.generation.store(42, Ordering::SeqCst);
    fake.routed.store(5, Ordering::SeqCst);
    let called = Instant::now();
    let snap = poller.scrape_now().await;
    assert!(snap.seq > first.seq && snap.at >= called);
    for name in ["a", "b"] {
        assert_eq!(generation(&snap, name), Some(42.0));
        assert!(snap.replica(name).unwrap().last_ok.unwrap() >= called);
    }
    assert_eq!(poller.latest().seq, snap.seq);
    let (before, after) = (first.gateway.as_ref().unwrap(), snap.gateway.as_ref().unwrap());
    let routed = gateway::deltas(&before.series, &after.series);
    let series = |bump| gateway::counter_series(&Scrape::parse(&router_page(bump)).unwrap());
    assert_eq!(routed, gateway::deltas(&series(0), &series(5)));
    assert!(!routed.is_empty() && routed.iter().all(|d| d.delta == 5.0 && !d.reset), "{routed:?}");
    // Unchanged gateway rounds are not stored again.
    poller.scrape_now().await;
    assert_eq!(poller.history().gateway.len(), 2);
}

#[tokio::test]
async fn a_failing_replica_keeps_its_sample_and_turns_stale_after_stale_after() {
    let fake = Arc::new(Fake::default());
    let addr = serve(Arc::clone(&fake)).await;
    let mut cfg = config(vec![target("r", addr, "/flaky")], 20, 50);
    cfg.stale_after = Duration::from_millis(150);
    let poller = spawn(cfg);
    let mut rx = poller.subscribe();
    wait_for(&mut rx, Duration::from_secs(1), |s| s.replica("r").unwrap().last_ok.is_some()).await;

    fake.failing.store(true, Ordering::SeqCst);
    let failing = |s: &MetricsSnapshot| s.replica("r").unwrap().consecutive_failures > 0;
    let first_failure = wait_for(&mut rx, Duration::from_secs(1), failing).await;
    let last_ok = first_failure.replica("r").unwrap().last_ok.unwrap();
    let ff_stale = first_failure.replica("r").unwrap().stale;
    assert_eq!(ff_stale, first_failure.at - last_ok > Duration::from_millis(150));
    let stale = wait_for(&mut rx, Duration::from_secs(1), |s| s.replica("r").unwrap().stale).await;
    let r = stale.replica("r").unwrap();
    assert!(stale.at - last_ok > Duration::from_millis(150));
    assert!(stale.at - last_ok < Duration::from_millis(600), "flipped late: {:?}", stale.at - last_ok);
    assert_eq!((r.last_ok, r.last_error.as_deref()), (Some(last_ok), Some("HTTP 500 Internal Server Error")));
    assert_eq!(r.sample.as_ref().unwrap().running, Some(3.0), "last good sample kept");
    assert!(r.consecutive_failures >= 2);
    assert_eq!((stale.running_total(), stale.kv_usage_max()), (None, None), "stale replicas are left out");

    fake.failing.store(false, Ordering::SeqCst);
    let back = wait_for(&mut rx, Duration::from_secs(1), |s| !s.replica("r").unwrap().stale).await;
    let r = back.replica("r").unwrap();
    assert_eq!((r.consecutive_failures, r.last_error.as_ref()), (0, None));
}

#[tokio::test]
async fn history_is_bounded_and_in_time_order() {
    let fake = Arc::new(Fake::default());
    let addr = serve(Arc::clone(&fake)).await;
    let mut cfg = config(vec![target("a", addr, "/metrics")], 10, 500);
    cfg.history_max_points = 5;
    let poller = spawn(cfg);
    for i in 1..=9 {
        fake.generation.store(i, Ordering::SeqCst);
        poller.scrape_now().await;
    }
    let history = poller.history();
    let a = history.replica("a").unwrap();
    assert_eq!(a.points.len(), 5);
    assert!(a.dropped >= 4, "{}", a.dropped);
    assert!(a.points.iter().zip(a.points.iter().skip(1)).all(|(x, y)| x.at <= y.at));
    assert_eq!(a.points.back().unwrap().generation_tokens, Some(9.0));
    assert_eq!(
        history.hold_max,
        Some(PollerConfig::default_stale_after(Duration::from_millis(10), Duration::from_millis(500)))
    );
}

#[tokio::test]
async fn userinfo_never_shows_in_views_or_errors() {
    let addr = serve(Arc::default()).await;
    let refused = refused_addr().await;
    let replicas = vec![
        MetricsTarget::new("fail", format!("http://admin:hunter2@{addr}/fail")),
        MetricsTarget::new("refused", format!("http://admin:hunter2@{refused}/metrics")),
    ];
    let poller = spawn(config(replicas, 10_000, 1_000));
    let snap = poller.scrape_now().await;
    for r in &snap.replicas {
        let error = r.last_error.as_deref().unwrap();
        assert!(!r.url.contains("hunter2") && !r.url.contains("admin"), "{}", r.url);
        assert!(!error.contains("hunter2") && !error.contains('\n'), "{error}");
    }
    assert_eq!(snap.replicas[0].url, format!("http://{addr}/fail"));
    assert_eq!(redact_url("https://u:p@h:1/m?x=@y"), "https://h:1/m?x=@y");
    assert_eq!(redact_url("http://h/m@x"), "http://h/m@x");
    assert_eq!(redact_url("no scheme"), "no scheme");
}

#[tokio::test]
async fn stopping_or_cancelling_ends_the_task() {
    let addr = serve(Arc::default()).await;
    let poller = spawn(config(vec![target("a", addr, "/metrics")], 10, 500));
    let mut rx = poller.subscribe();
    poller.stop();
    let closed = async { while rx.changed().await.is_ok() {} };
    tokio::time::timeout(Duration::from_secs(1), closed).await.expect("channel closes");

    let cancel = CancellationToken::new();
    let poller = Poller::spawn(client(), config(vec![target("a", addr, "/metrics")], 10, 500), cancel.clone());
    let mut rx = poller.subscribe();
    cancel.cancel();
    let closed = async { while rx.changed().await.is_ok() {} };
    tokio::time::timeout(Duration::from_secs(1), closed).await.expect("channel closes");
    let before = poller.latest();
    assert_eq!(poller.scrape_now().await.seq, before.seq, "a stopped poller returns the latest snapshot");
}

#[tokio::test]
async fn no_targets_still_publishes_rounds() {
    let poller = spawn(config(Vec::new(), 10_000, 1_000));
    let snap = poller.scrape_now().await;
    assert_eq!((snap.seq >= 1, snap.replicas.len(), snap.running_total()), (true, 0, None));
}

#[test]
fn nan_and_inf_engine_values_are_named_once_per_poll() {
    let page = "vllm:num_requests_running{engine=\"0\"} NaN\nvllm:num_requests_running{engine=\"1\"} 2\n\
        vllm:kv_cache_usage_perc{engine=\"0\"} +Inf\nvllm:prompt_tokens_created 1.7e9\nother_metric NaN\n";
    let scrape = Scrape::parse(page).unwrap();
    let names = super::nonfinite_metrics(&scrape, EngineDialect::VllmV1);
    assert_eq!(names, ["vllm:num_requests_running", "vllm:kv_cache_usage_perc"]);
    assert!(super::nonfinite_metrics(&scrape, EngineDialect::Unknown).is_empty());
    let mut h = super::History::new(10, None);
    h.note_nonfinite("a", &names);
    h.note_nonfinite("a", &names[..1]);
    assert_eq!(h.nonfinite["a"]["vllm:num_requests_running"], 2);
    assert_eq!(h.nonfinite["a"]["vllm:kv_cache_usage_perc"], 1);
    let notes = crate::session::series::nonfinite_notes(&h);
    assert_eq!(notes.len(), 2, "one note per replica and metric: {notes:?}");
    assert!(notes[1].contains("`vllm:num_requests_running` was NaN or Inf in 2 poll(s)"), "{notes:?}");
}

#[test]
fn outages_open_on_failure_and_close_on_the_next_good_poll() {
    let t0 = Instant::now();
    let mut h = super::History::new(10, None);
    h.poll_ok("a", t0);
    h.poll_failed("a", t0 + Duration::from_secs(1), "refused");
    h.poll_failed("a", t0 + Duration::from_secs(2), "later error");
    assert_eq!(h.outages["a"].len(), 1);
    h.poll_ok("a", t0 + Duration::from_secs(5));
    let o = &h.outages["a"][0];
    assert_eq!(
        (o.from, o.to, o.error.as_str()),
        (t0 + Duration::from_secs(1), Some(t0 + Duration::from_secs(5)), "refused")
    );
    h.poll_failed("a", t0 + Duration::from_secs(6), "again");
    assert_eq!(h.outages["a"].len(), 2);
    let stale = crate::session::series::replica_stale(&h, t0);
    assert_eq!((stale["a"][0].from_s, stale["a"][0].to_s, stale["a"][1].to_s), (1.0, Some(5.0), None));
}
