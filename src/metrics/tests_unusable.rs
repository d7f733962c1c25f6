//! Pages that answer but hold nothing to read (HTML, no engine series, over the size cap):
//! named, not a lost target, and polled less and less often, on tokio's paused clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use tokio_util::sync::CancellationToken;

use super::{MetricsTarget, Poller, PollerConfig, UNUSABLE_BACKOFF_MAX};
use crate::sim::inproc::InProcBackend;

/// What `/metrics` serves: 0 HTML, 1 a page without engine series, 2 a vLLM page, 3 a page
/// over the size cap, 4 a 404, 5 a redirect, 6 a 503, 7 llama-server's 501 without `--metrics`.
#[derive(Default)]
struct Page {
    mode: AtomicU64,
    hits: AtomicU64,
}

fn backend(page: Arc<Page>) -> Arc<InProcBackend> {
    let serve = move || {
        let page = Arc::clone(&page);
        async move {
            page.hits.fetch_add(1, Ordering::SeqCst);
            match page.mode.load(Ordering::SeqCst) {
                0 => ([(header::CONTENT_TYPE, "text/html")], "<html>login</html>".to_string()).into_response(),
                1 => "# TYPE up gauge\nup 1\n".repeat(3).into_response(),
                2 => "vllm:num_requests_running{engine=\"0\"} 3\n".into_response(),
                4 => (axum::http::StatusCode::NOT_FOUND, "404 page not found").into_response(),
                5 => (axum::http::StatusCode::FOUND, [(header::LOCATION, "/login")], "").into_response(),
                6 => (axum::http::StatusCode::SERVICE_UNAVAILABLE, "busy").into_response(),
                7 => (
                    axum::http::StatusCode::NOT_IMPLEMENTED,
                    r#"{"error":{"code":501,"message":"This server does not support metrics endpoint. Start it with `--metrics`","type":"not_supported_error"}}"#,
                )
                    .into_response(),
                _ => "x".repeat(crate::metrics::page::MAX_PAGE_BYTES + 1).into_response(),
            }
        }
    };
    let mut b = InProcBackend::default();
    b.serve("replica.inproc", Router::new().route("/metrics", get(serve)));
    Arc::new(b)
}

/// Polls for `span` of virtual time; the hits it made.
async fn hits_over(page: &Arc<Page>, poller: &super::PollerHandle, span: Duration) -> u64 {
    let before = page.hits.load(Ordering::SeqCst);
    tokio::time::sleep(span).await;
    let _ = poller.latest();
    page.hits.load(Ordering::SeqCst) - before
}

fn spawn(page: &Arc<Page>) -> super::PollerHandle {
    let target = MetricsTarget::new("r", "http://replica.inproc/metrics");
    let cfg = PollerConfig::new(vec![target], None);
    Poller::spawn(backend(Arc::clone(page)), cfg, CancellationToken::new())
}

#[tokio::test(start_paused = true)]
async fn an_html_page_is_named_backed_off_and_never_a_lost_target() {
    let page = Arc::new(Page::default());
    let poller = spawn(&page);
    // 60 s at 250 ms would be 240 scrapes; backing off (0.5, 1, 2, 4, then every 8 s) makes 12.
    let hits = hits_over(&page, &poller, Duration::from_secs(60)).await;
    assert!((8..=14).contains(&hits), "{hits} scrapes of an HTML page in 60 s");
    let view = poller.latest().replicas[0].clone();
    assert_eq!(view.unusable.as_deref(), Some("not a metrics page (HTML; content-type text/html)"));
    assert!(!view.stale && view.last_error.is_none(), "{view:?}");
    let h = poller.history();
    assert!(h.outages.is_empty(), "an answered page is no outage: {:?}", h.outages);
    assert_eq!(h.unusable["r"].0, hits);
    let notes = crate::session::series::unusable_notes(&h, PollerConfig::DEFAULT_INTERVAL);
    assert_eq!(
        notes,
        ["replica r: its metrics page is unusable (not a metrics page (HTML; content-type text/html)); its engine \
          figures are missing, and it is polled at most every 8s instead of every 250ms while so"]
    );

    // Once the page is a real one, it is read at the next backed-off scrape, then every 250 ms.
    page.mode.store(2, Ordering::SeqCst);
    tokio::time::sleep(UNUSABLE_BACKOFF_MAX).await;
    let view = poller.latest().replicas[0].clone();
    assert_eq!((view.unusable, view.sample.and_then(|s| s.running)), (None, Some(3.0)));
    let hits = hits_over(&page, &poller, Duration::from_secs(10)).await;
    assert!((39..=41).contains(&hits), "{hits} scrapes of a good page in 10 s");
}

#[tokio::test(start_paused = true)]
async fn a_page_without_engine_series_or_over_the_cap_is_unusable_too() {
    let page = Arc::new(Page { mode: AtomicU64::new(1), ..Page::default() });
    let poller = spawn(&page);
    let hits = hits_over(&page, &poller, Duration::from_secs(30)).await;
    assert!(hits <= 9, "{hits} scrapes of a page without engine series in 30 s");
    let why = poller.latest().replicas[0].unusable.clone();
    assert_eq!(why.as_deref(), Some("no engine series (3 samples, none named vllm:*, sglang:* or llamacpp:*)"));
    page.mode.store(3, Ordering::SeqCst);
    let snap = poller.scrape_now().await;
    assert_eq!(snap.replicas[0].unusable.as_deref(), Some("a page over 4 MiB (read no further)"));
    assert!(poller.history().outages.is_empty());
}

#[tokio::test(start_paused = true)]
async fn no_page_at_the_url_is_unusable_but_a_failing_server_is_lost() {
    let page = Arc::new(Page { mode: AtomicU64::new(4), ..Page::default() });
    let poller = spawn(&page);
    let hits = hits_over(&page, &poller, Duration::from_secs(30)).await;
    assert!(hits <= 9, "{hits} scrapes of a 404 in 30 s");
    let view = poller.latest().replicas[0].clone();
    assert_eq!(view.unusable.as_deref(), Some("no metrics page: HTTP 404 Not Found (404 page not found)"));
    assert!(!view.stale, "{view:?}");
    page.mode.store(5, Ordering::SeqCst);
    let snap = poller.scrape_now().await;
    let why = snap.replicas[0].unusable.clone();
    assert_eq!(why.as_deref(), Some("no metrics page: HTTP 302 Found, a redirect to /login, not followed"));
    page.mode.store(7, Ordering::SeqCst);
    let snap = poller.scrape_now().await;
    let why = snap.replicas[0].unusable.clone();
    let want = "no metrics page: HTTP 501 Not Implemented (This server does not support metrics endpoint. Start it with `--metrics`)";
    assert_eq!(why.as_deref(), Some(want));
    assert!(poller.history().outages.is_empty(), "answered pages are no outage");
    // A 503 is a server failing now, not a missing page: it still counts toward a lost target.
    page.mode.store(6, Ordering::SeqCst);
    let snap = poller.scrape_now().await;
    let r = &snap.replicas[0];
    assert_eq!((r.last_error.as_deref(), r.consecutive_failures), (Some("HTTP 503 Service Unavailable"), 1), "{r:?}");
}
