//! Tests of the arrival stamps: the pure times, and the bench server on loopback.

use super::*;
use crate::bench::server::{ARRIVED_HEADER, BenchServer, Mode, READ_HEADER, ServerOptions};
use crate::bench::sysinfo::unix_ns;

#[test]
fn times_count_from_the_arrival_and_drop_one_after_the_handler() {
    let t = RequestTimes::new(Some(1_000), 1_300);
    assert_eq!((t.start_ns(), t.wake_ns()), (1_000, Some(300)));
    let none = RequestTimes::new(None, 1_300);
    assert_eq!((none.start_ns(), none.wake_ns()), (1_300, None), "no stamp: from the handler");
    let stepped = RequestTimes::new(Some(1_301), 1_300);
    assert_eq!((stepped.start_ns(), stepped.wake_ns()), (1_300, None), "a stamp after the handler is dropped");
    let a = Arrival::default();
    assert_eq!(a.last_read_ns(), None);
    a.set(Some(Duration::from_nanos(42)));
    assert_eq!(a.clone().last_read_ns(), Some(42), "clones share the cell");
    a.set(None);
    assert_eq!(a.last_read_ns(), None, "a read without a stamp clears it");
}

fn options() -> ServerOptions {
    ServerOptions {
        addr: "127.0.0.1:0".parse().unwrap(),
        mode: Mode::Paced,
        interval: Duration::from_millis(1),
        tokens: 3,
        model: "bench".into(),
        max_model_len: 4096,
        batch_bytes: 64 << 10,
        events_per_frame: usize::MAX,
        shape: crate::bench::shape::ChunkShape::Bench,
    }
}

/// A header's value as unix ns.
fn header_ns(resp: &reqwest::Response, name: &str) -> Option<u64> {
    resp.headers().get(name)?.to_str().ok()?.parse().ok()
}

#[tokio::test]
async fn each_request_s_arrival_falls_between_its_send_and_its_handler() {
    let server = BenchServer::start(options()).await.unwrap();
    let url = format!("http://{}", server.addr);
    let http = crate::net::client_builder().no_proxy().build().unwrap();
    let body = serde_json::json!({"model": "bench", "messages": [{"role": "user", "content": "hi"}], "stream": true});
    // When no socket of the machine had stamps on, Linux turns them on from a work queue after
    // the listener asks (`net_enable_timestamp`): the first requests may carry none.
    for _ in 0..1_000 {
        let resp = http.post(format!("{url}/v1/chat/completions")).json(&body).send().await.unwrap();
        let stamped = resp.headers().contains_key(ARRIVED_HEADER);
        resp.bytes().await.unwrap();
        if stamped || cfg!(not(target_os = "linux")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    http.post(format!("{url}/bench/mark")).send().await.unwrap().error_for_status().unwrap();
    let mut wakes = Vec::new();
    // Two requests, the second on the pooled connection: its stamp is its own, not the first's.
    for _ in 0..2 {
        let before = unix_ns();
        let resp = http.post(format!("{url}/v1/chat/completions")).json(&body).send().await.unwrap();
        let after = unix_ns();
        let read = header_ns(&resp, READ_HEADER).expect("the handler's time");
        let arrived = header_ns(&resp, ARRIVED_HEADER);
        resp.bytes().await.unwrap();
        if cfg!(not(target_os = "linux")) {
            assert_eq!(arrived, None);
            continue;
        }
        let arrived = arrived.expect("a kernel stamp on Linux");
        // Causal order on one clock (CLOCK_REALTIME): sent, arrived, handled, answered.
        assert!(before <= arrived && arrived <= read && read <= after, "{before} {arrived} {read} {after}");
        wakes.push(read - arrived);
    }
    let w: super::super::marks::WindowFigures =
        http.get(format!("{url}/bench/window")).send().await.unwrap().json().await.unwrap();
    server.shutdown();
    assert_eq!(w.firsts.len(), 2, "{w:?}");
    if cfg!(target_os = "linux") {
        let got: Vec<u64> = w.firsts.iter().map(|f| f.wake_ns.expect("stamped")).collect();
        assert_eq!(got, wakes, "the window's wake-ups are the headers' (handler minus arrival)");
    }
}
