//! Tests of the own reader's heads: the request head written, the response head's limits
//! (bytes and header lines), keep-alive and the body's framing.

use super::*;

#[test]
fn a_request_head_carries_host_length_and_close() {
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.insert(CONTENT_LENGTH, HeaderValue::from_static("999"));
    let out = request_head(&Method::POST, "/v1/completions", "127.0.0.1:8000", &headers, Some(12), true);
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text,
        "POST /v1/completions HTTP/1.1\r\nhost: 127.0.0.1:8000\r\ncontent-type: application/json\r\n\
         connection: close\r\ncontent-length: 12\r\n\r\n"
    );
}

#[test]
fn a_head_is_incomplete_until_its_blank_line() {
    assert!(parse(b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n", 8192).unwrap().is_none());
    let head = parse(b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabc", 8192).unwrap().unwrap();
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(head.len, 38);
    assert!(head.keep_alive);
    assert_eq!(head.frame(&Method::POST), Ok(BodyFrame::Length(3)));
}

#[test]
fn a_head_filling_the_buffer_unfinished_is_too_large() {
    let mut wire = b"HTTP/1.1 200 OK\r\nx-pad: ".to_vec();
    wire.resize(64, b'a');
    assert_eq!(parse(&wire[..63], 64).unwrap().map(|h| h.len), None);
    assert_eq!(parse(&wire, 64).unwrap_err(), HeadError::TooLarge(64));
}

#[test]
fn more_header_lines_than_the_limit_are_too_large() {
    let mut wire = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..MAX_HEADERS {
        wire.extend_from_slice(format!("x-{i}: v\r\n").as_bytes());
    }
    let at_limit = [&wire[..], b"\r\n"].concat();
    assert!(parse(&at_limit, 1 << 20).unwrap().is_some());
    wire.extend_from_slice(b"x-last: v\r\n\r\n");
    assert_eq!(parse(&wire, 1 << 20).unwrap_err(), HeadError::TooLarge(1 << 20));
}

#[test]
fn garbage_is_an_invalid_head() {
    assert!(matches!(parse(b"SSH-2.0-OpenSSH\r\n\r\n", 8192), Err(HeadError::Invalid(_))));
}

#[test]
fn keep_alive_follows_version_and_connection() {
    let close = parse(b"HTTP/1.1 200 OK\r\nConnection: Close\r\n\r\n", 8192).unwrap().unwrap();
    assert!(!close.keep_alive);
    let old = parse(b"HTTP/1.0 200 OK\r\n\r\n", 8192).unwrap().unwrap();
    assert!(!old.keep_alive);
    let old_kept = parse(b"HTTP/1.0 200 OK\r\nconnection: keep-alive\r\n\r\n", 8192).unwrap().unwrap();
    assert!(old_kept.keep_alive);
}

#[test]
fn framing_follows_the_headers() {
    let h = |wire: &[u8]| parse(wire, 8192).unwrap().unwrap();
    let chunked = h(b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\ncontent-length: 5\r\n\r\n");
    assert_eq!(chunked.frame(&Method::POST), Ok(BodyFrame::chunked()));
    assert_eq!(h(b"HTTP/1.1 200 OK\r\n\r\n").frame(&Method::POST), Ok(BodyFrame::Close));
    assert_eq!(h(b"HTTP/1.1 204 No Content\r\n\r\n").frame(&Method::POST), Ok(BodyFrame::Done));
    assert_eq!(h(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").frame(&Method::POST), Ok(BodyFrame::Done));
    assert_eq!(h(b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n").frame(&Method::HEAD), Ok(BodyFrame::Done));
    assert!(h(b"HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n").frame(&Method::POST).is_err());
    assert!(h(b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n").frame(&Method::POST).is_err());
    assert!(h(b"HTTP/1.1 200 OK\r\ncontent-encoding: GZIP\r\n\r\n").gzip());
}
