//! Tests of the transport seam: local answers, body limits, send errors.

use super::*;

#[tokio::test]
async fn a_local_answer_reads_chunk_by_chunk_and_whole() {
    let parts = futures_util::stream::iter([Ok::<_, std::io::Error>(Bytes::from("ab")), Ok(Bytes::from("c"))]);
    let resp = axum::response::Response::new(axum::body::Body::from_stream(parts));
    let mut r = BackendResponse::from_local(resp);
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.chunk().await.unwrap().as_deref(), Some(&b"ab"[..]));
    assert_eq!(r.bytes(1).await.unwrap(), "c");
}

/// A local answer whose body is `parts`, then (when `endless`) nothing, ever.
fn answer(parts: &[&'static str], endless: bool) -> BackendResponse {
    let parts = parts.iter().map(|p| Ok::<_, std::io::Error>(Bytes::from_static(p.as_bytes())));
    let body = futures_util::stream::iter(parts.collect::<Vec<_>>());
    let body = match endless {
        true => axum::body::Body::from_stream(body.chain(futures_util::stream::pending())),
        false => axum::body::Body::from_stream(body),
    };
    BackendResponse::from_local(axum::response::Response::new(body))
}

#[tokio::test]
async fn a_body_over_its_limit_is_a_too_large_error() {
    assert_eq!(answer(&["ab", "cd"], false).bytes(4).await.unwrap(), "abcd");
    let e = answer(&["ab", "cd", "e"], false).bytes(4).await.unwrap_err();
    assert_eq!((e.stage(), e.too_large()), (Stage::Body, Some(TooLarge { limit: 4 })));
    assert_eq!(e.describe(), "an answer over 4 bytes (read no further)");
}

#[tokio::test(start_paused = true)]
async fn the_head_of_a_body_is_cut_at_its_size_and_its_wait() {
    let wait = Duration::from_secs(5);
    assert_eq!(answer(&["ab", "cd"], false).head_of_body(8, wait).await, (Bytes::from("abcd"), false));
    assert_eq!(answer(&["abc", "def"], false).head_of_body(4, wait).await, (Bytes::from("abcd"), true));
    let t0 = tokio::time::Instant::now();
    let (head, cut) = answer(&["ab"], true).head_of_body(8, wait).await;
    assert_eq!((head, cut, t0.elapsed()), (Bytes::from("ab"), true, wait), "a body that never ends");
}

#[tokio::test]
async fn a_broken_local_body_is_a_body_error_with_its_cause() {
    let parts = futures_util::stream::iter([
        Ok(Bytes::from("x")),
        Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "peer reset")),
    ]);
    let resp = axum::response::Response::new(axum::body::Body::from_stream(parts));
    let mut r = BackendResponse::from_local(resp);
    assert!(r.chunk().await.unwrap().is_some());
    let e = r.chunk().await.unwrap_err();
    assert_eq!(e.stage(), Stage::Body);
    assert!(e.describe().contains("peer reset"), "{}", e.describe());
}

#[tokio::test]
async fn an_unreachable_target_is_a_send_error_without_the_url() {
    let (_held, port) = crate::net::refused_port();
    let backend = HttpBackend::new(crate::net::client_builder().no_proxy().build().unwrap());
    let url = format!("http://user:secret@127.0.0.1:{port}/v1/models");
    let headers = HeaderMap::new();
    let e = backend.send(Exchange::get(&url, &headers)).await.unwrap_err();
    assert_eq!(e.stage(), Stage::Send);
    let text = e.describe();
    assert!(!text.contains("secret") && !text.contains("/v1/models"), "{text}");
    assert!(text.contains("error sending request"), "{text}");
}
