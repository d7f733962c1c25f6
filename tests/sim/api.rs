//! End-to-end tests of one simulated replica's OpenAI API, on loopback (the scheduler's queue
//! in process, on the paused clock).

use crate::common;

use common::*;
use serde_json::{Value, json};
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

#[tokio::test]
async fn streaming_with_continuous_usage_counts_exact_tokens() {
    let c = cluster(1, 50.0, |_| {}).await;
    let url = format!("{}/v1/chat/completions", c.info().replicas[0].url);
    let s = stream(&client(), &url, &[], &chat_body("hello there", 32), T).await;
    assert_eq!(s.status, 200);
    assert!(s.done, "ends with [DONE]");
    assert_eq!(s.completion_tokens(), Some(32));
    // Role chunk, one chunk per token (stream interval 1), then the usage-only chunk.
    let content: Vec<_> = s.chunks.iter().filter(|c| c.content_bytes > 0).collect();
    assert_eq!(content.len(), 32);
    let last = s.chunks.last().unwrap();
    assert!(!last.has_choices && last.completion_tokens == Some(32));
    // Usage advances by exactly one token per content chunk.
    let counts: Vec<u64> = content.iter().filter_map(|c| c.completion_tokens).collect();
    assert_eq!(counts, (1..=32).collect::<Vec<_>>());
}

#[tokio::test]
async fn stream_interval_sends_k_tokens_per_chunk() {
    let c = cluster(1, 50.0, |cfg| cfg.stream_interval = 4).await;
    let url = format!("{}/v1/completions", c.info().replicas[0].url);
    let s = stream(&client(), &url, &[], &completion_body("count me", 21), T).await;
    let counts: Vec<u64> =
        s.chunks.iter().filter(|c| c.content_bytes > 0).filter_map(|c| c.completion_tokens).collect();
    // First token alone, then 4 at a time, the remainder with the finish chunk.
    assert_eq!(counts, vec![1, 5, 9, 13, 17, 21]);
    assert!(s.done);
}

#[tokio::test]
async fn include_usage_without_continuous_reports_usage_once() {
    let c = cluster(1, 50.0, |_| {}).await;
    let url = format!("{}/v1/completions", c.info().replicas[0].url);
    let body = json!({"prompt": "x", "max_tokens": 5, "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}});
    let s = stream(&client(), &url, &[], &body, T).await;
    let with_usage: Vec<_> = s.chunks.iter().filter(|c| c.completion_tokens.is_some()).collect();
    assert_eq!(with_usage.len(), 1);
    assert_eq!(with_usage[0].completion_tokens, Some(5));
}

#[tokio::test]
async fn repeated_prefix_raises_prefix_cache_hits() {
    let c = cluster(1, 50.0, |cfg| cfg.dev_mode = true).await;
    let r = &c.info().replicas[0];
    let http = client();
    let prompt = family_text(1, 400);
    for _ in 0..2 {
        let s = stream(&http, &format!("{}/v1/completions", r.url), &[], &completion_body(&prompt, 4), T).await;
        assert_eq!(s.completion_tokens(), Some(4));
    }
    let m = metrics_text(&http, &r.metrics_url).await;
    let hits = sample_value(&m, "vllm:prefix_cache_hits_total").unwrap();
    let queries = sample_value(&m, "vllm:prefix_cache_queries_total").unwrap();
    assert!(hits >= 384.0, "second request reuses the full blocks: hits={hits}");
    assert!(queries >= 800.0);
    // After a reset the same prompt misses again.
    let reset = http.post(format!("{}/reset_prefix_cache", r.url)).send().await.unwrap();
    assert!(reset.status().is_success(), "mounted in dev mode");
    stream(&http, &format!("{}/v1/completions", r.url), &[], &completion_body(&prompt, 4), T).await;
    let after = sample_value(&metrics_text(&http, &r.metrics_url).await, "vllm:prefix_cache_hits_total").unwrap();
    assert_eq!(after, hits);
}

#[tokio::test]
async fn prompt_over_max_model_len_is_a_400_naming_the_context_length() {
    let c = cluster(1, 50.0, |cfg| cfg.engine.max_model_len = 1000).await;
    let url = format!("{}/v1/completions", c.info().replicas[0].url);
    let s = stream(&client(), &url, &[], &completion_body(&family_text(0, 990), 20), T).await;
    assert_eq!(s.status, 400);
    let v: Value = serde_json::from_str(&s.error_body).unwrap();
    assert_eq!(v["error"]["code"], 400);
    assert_eq!(v["error"]["param"], "input_tokens");
    assert!(v["error"]["message"].as_str().unwrap().contains("maximum context length is 1000 tokens"));
}

#[tokio::test]
async fn exhausting_kv_causes_preemptions() {
    // 64 blocks of 16 = 1024 tokens; four 300-token prompts decoding 200 tokens need 2000.
    let c = cluster(1, 50.0, |cfg| cfg.engine.kv_blocks = 64).await;
    let r = c.info().replicas[0].clone();
    let http = client();
    let tasks: Vec<_> = (0..4)
        .map(|i| {
            let (http, url) = (http.clone(), format!("{}/v1/completions", r.url));
            tokio::spawn(
                async move { stream(&http, &url, &[], &completion_body(&family_text(10 + i, 300), 200), T).await },
            )
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap().completion_tokens(), Some(200), "preempted requests still finish");
    }
    let m = metrics_text(&http, &r.metrics_url).await;
    assert!(sample_value(&m, "vllm:num_preemptions_total").unwrap() > 0.0);
}

/// `vllm:num_requests_running` and `vllm:num_requests_waiting` from a replica's page.
async fn queue_gauges(backend: &dyn llm_decode_bench::load::backend::Backend, url: &str) -> (f64, f64) {
    let (status, m) = get_via(backend, url).await;
    assert_eq!(status, 200);
    let value = |name| sample_value(&m, name).unwrap_or_else(|| panic!("{name} in {m}"));
    (value("vllm:num_requests_running"), value("vllm:num_requests_waiting"))
}

/// In process on the paused clock: all five requests reach the engine before any modelled time
/// passes, so what `/metrics` shows then does not depend on how fast the machine sent them.
#[tokio::test(start_paused = true)]
async fn concurrency_above_max_num_seqs_waits() {
    let c = inproc_cluster(1, 5.0, |cfg| cfg.engine.max_num_seqs = 2);
    let (backend, r) = (c.backend(), c.info().replicas[0].clone());
    let tasks: Vec<_> = (0..5)
        .map(|i| {
            let (backend, url) = (backend.clone(), format!("{}/v1/completions", r.url));
            tokio::spawn(
                async move { stream_via(&*backend, &url, &completion_body(&format!("req {i}"), 400), T).await },
            )
        })
        .collect();
    let mut seen = queue_gauges(&*backend, &r.metrics_url).await;
    for _ in 0..100 {
        if seen.0 + seen.1 >= 5.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
        seen = queue_gauges(&*backend, &r.metrics_url).await;
    }
    assert_eq!(seen, (2.0, 3.0), "two running, three waiting");
    for t in tasks {
        assert_eq!(t.await.unwrap().completion_tokens(), Some(400), "the waiting ones run in turn");
    }
}

#[tokio::test]
async fn other_endpoints_answer_like_vllm() {
    let c = cluster(1, 50.0, |_| {}).await;
    let r = &c.info().replicas[0];
    let http = client();
    let models: Value = http.get(format!("{}/v1/models", r.url)).send().await.unwrap().json().await.unwrap();
    assert_eq!(models["data"][0]["max_model_len"], 131072);
    let tok = post_json(&http, &format!("{}/tokenize", r.url), &json!({"prompt": " hello world"})).await;
    assert_eq!(tok["count"], 2);
    assert!(http.get(format!("{}/health", r.url)).send().await.unwrap().status().is_success());
    let v: Value = http.get(format!("{}/version", r.url)).send().await.unwrap().json().await.unwrap();
    assert!(v["version"].as_str().unwrap().ends_with("+sim"));
    let body = json!({"prompt": "hi", "max_tokens": 7, "ignore_eos": true});
    let full = post_json(&http, &format!("{}/v1/completions", r.url), &body).await;
    assert_eq!(full["usage"]["completion_tokens"], 7);
    assert_eq!(full["choices"][0]["finish_reason"], "length");
    let missing = http
        .post(format!("{}/v1/completions", r.url))
        .json(&json!({"prompt": "x", "model": "nope"}))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status().as_u16(), 404);
}

#[tokio::test]
async fn without_ignore_eos_requests_stop_on_their_own() {
    let c = cluster(1, 50.0, |_| {}).await;
    let url = format!("{}/v1/completions", c.info().replicas[0].url);
    let body = json!({"prompt": "tell me", "max_tokens": 5000, "min_tokens": 20, "stream": true, "stream_options": {"include_usage": true}});
    let s = stream(&client(), &url, &[], &body, T).await;
    let n = s.completion_tokens().unwrap();
    assert!((20..5000).contains(&n), "{n}");
    assert_eq!(s.chunks.iter().find_map(|c| c.finish_reason).map(|f| f.as_str()), Some("stop"));
}

#[tokio::test]
async fn without_dev_mode_there_is_no_cache_reset_route() {
    // docs/protocol.md §8.7: stock vLLM mounts /reset_prefix_cache only in dev mode.
    let c = cluster(1, 50.0, |_| {}).await;
    let http = client();
    for path in ["/reset_prefix_cache", "/flush_cache"] {
        let resp = http.post(format!("{}{path}", c.info().replicas[0].url)).send().await.unwrap();
        assert_eq!(resp.status(), 404, "{path}");
    }
}

/// On a kept-alive connection the first token reaches the client when the engine says it
/// was sent, as from a real vLLM (Nagle off). With Nagle on, the first token waits for the
/// client's delayed ACK: 39 of 40 requests (all but the one on a fresh connection) came about
/// 35 ms late. Each request is compared with its own engine-side TTFT (the engine's histogram
/// sum before and after it), and a few late ones are allowed: a loaded machine delays the odd
/// request, not most of them.
#[tokio::test]
async fn first_tokens_arrive_when_the_engine_sends_them_on_a_reused_connection() {
    use futures_util::StreamExt;
    const N: usize = 40;
    const LATE_MS: f64 = 20.0;
    let c = cluster(1, 1.0, |_| {}).await;
    let engine_ttft_sum = || c.replica_stats(0).expect("replica 0").ttft.sum;
    let http = client();
    let url = format!("{}/v1/chat/completions", c.info().replicas[0].url);
    let mut late_ms = Vec::with_capacity(N);
    for i in 0..N {
        let body = chat_body(&format!("[r{i}] "), 4);
        let before = engine_ttft_sum();
        let sent = std::time::Instant::now();
        let resp = http.post(&url).json(&body).send().await.unwrap();
        let mut bytes = resp.bytes_stream();
        let mut seen = Vec::new();
        let mut first = None;
        while let Some(chunk) = bytes.next().await {
            seen.extend_from_slice(&chunk.unwrap());
            if first.is_none() && String::from_utf8_lossy(&seen).contains("\"completion_tokens\":1") {
                first = Some(sent.elapsed().as_secs_f64());
            }
        }
        // The engine records a first token's TTFT before it hands the token on.
        let engine = engine_ttft_sum() - before;
        late_ms.push((first.expect("a first token") - engine) * 1e3);
    }
    assert_eq!(c.replica_stats(0).unwrap().ttft.count, N as u64, "one first token per request");
    let late = late_ms.iter().filter(|&&ms| ms >= LATE_MS).count();
    assert!(late <= N / 8, "{late} of {N} first tokens {LATE_MS} ms or more after the engine sent them: {late_ms:.1?}");
}

/// An HTTP/1.1 request as a client on a kept-alive connection writes it.
fn raw_request(method: &str, path: &str, body: &str) -> Vec<u8> {
    let head = format!("{method} {path} HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\n");
    format!("{head}Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

/// Reads one response with a `Content-Length` body; returns its head (lower case) and body.
async fn read_response(s: &mut tokio::net::TcpStream) -> (String, String) {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    loop {
        let text = String::from_utf8_lossy(&buf).to_string();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let head = head.to_ascii_lowercase();
            let len = head.lines().find_map(|l| l.strip_prefix("content-length: ")).map(|v| v.parse().unwrap());
            if body.len() >= len.expect("a sized answer") {
                return (head, body.to_string());
            }
        }
        let mut chunk = [0u8; 4096];
        let n = s.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the connection closed after {:?}", String::from_utf8_lossy(&buf));
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// llama-server closes the connection after a streamed answer although it advertised
/// keep-alive (and sends no `Connection: close`); other answers keep the connection open.
#[tokio::test]
async fn llamacpp_closes_the_connection_after_a_stream_and_keeps_it_otherwise() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let c = llamacpp_cluster(1, 50.0, |_| {}).await;
    let addr = c.info().replicas[0].url.trim_start_matches("http://").to_string();
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let body = completion_body("close after me", 8).to_string();
    s.write_all(&raw_request("POST", "/v1/completions", &body)).await.unwrap();
    let mut all = Vec::new();
    let read = tokio::time::timeout(T, s.read_to_end(&mut all)).await;
    read.expect("the server closes the connection after the stream").unwrap();
    let text = String::from_utf8(all).unwrap();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap();
    let head = head.to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200") && head.contains("content-type: text/event-stream"), "{head}");
    assert!(head.contains("keep-alive: timeout=5, max=100") && head.contains("server: llama.cpp"), "{head}");
    assert!(!head.contains("connection:"), "no Connection header: {head}");
    assert!(rest.contains("\"finish_reason\":\"length\"") && rest.ends_with("data: [DONE]\n\n\r\n0\r\n\r\n"), "{rest}");
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let whole = json!({"prompt": "keep me", "max_tokens": 3}).to_string();
    for (method, path, body) in [("GET", "/health", ""), ("POST", "/v1/completions", &whole), ("GET", "/metrics", "")] {
        s.write_all(&raw_request(method, path, body)).await.unwrap();
        let (head, _) = read_response(&mut s).await;
        assert!(head.starts_with("http/1.1 200") && head.contains("keep-alive: timeout=5, max=100"), "{head}");
    }
}

#[tokio::test]
async fn llamacpp_refuses_a_prompt_over_its_slot_with_the_captured_400() {
    let c = llamacpp_cluster(1, 50.0, |cfg| cfg.slot_ctx = Some(8192)).await;
    let url = format!("{}/v1/completions", c.info().replicas[0].url);
    let body = json!({"prompt": vec![7; 27_001], "max_tokens": 4, "stream": true});
    let resp = client().post(&url).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(resp.headers()["connection"], "close");
    let captured = include_str!("../fixtures/llamacpp_7e4c0a9/over_context_400.json");
    assert_eq!(resp.text().await.unwrap(), captured.trim_end());
}

/// The gateway keeps no idle connection to llama.cpp replicas, so back-to-back streams
/// through it all succeed although each replica closes after every stream.
#[tokio::test]
async fn llamacpp_replicas_behind_the_gateway_serve_streams_back_to_back() {
    let c = llamacpp_cluster(2, 50.0, |_| {}).await;
    let url = format!("{}/v1/chat/completions", c.info().gateway.url);
    let http = client();
    for i in 0..6 {
        let s =
            stream(&http, &url, &[("routing-strategy", "least-request")], &chat_body(&format!("turn {i}"), 6), T).await;
        assert_eq!((s.status, s.done, s.completion_tokens()), (200, true, Some(6)), "turn {i}: {}", s.error_body);
    }
    let m = metrics_text(&http, &c.info().replicas[0].metrics_url).await;
    let served = sample_value(&m, "llamacpp:tokens_predicted_total").unwrap();
    let other =
        sample_value(&metrics_text(&http, &c.info().replicas[1].metrics_url).await, "llamacpp:tokens_predicted_total");
    assert_eq!(served + other.unwrap(), 36.0);
}
