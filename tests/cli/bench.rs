//! The bench instrument: its server (`bench-server`, a child process) streams what the tool
//! reads, paced on schedule with a send time on every event, and a `run` session starts on it.

use crate::common;

use futures_util::StreamExt;
use llm_decode_bench::bench::child::ServerProcess;
use llm_decode_bench::bench::template::stamp_of;
use llm_decode_bench::load::chunk::parse_chunk;
use llm_decode_bench::load::sse::{SseDecoder, SseEvent};
use std::path::Path;
use std::time::Duration;

fn server(args: &[&str]) -> ServerProcess {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    ServerProcess::spawn(Path::new(env!("CARGO_BIN_EXE_llm-decode-bench")), &args).expect("bench server starts")
}

/// Streams one request; the data events' (completion_tokens, stamp) in order, and `[DONE]` seen.
async fn stream(url: &str, path: &str, body: serde_json::Value) -> (Vec<(Option<u64>, bool, u64)>, bool) {
    let resp = common::client().post(format!("{url}{path}")).json(&body).send().await.expect("answers");
    assert_eq!(resp.status(), 200);
    let mut body = resp.bytes_stream();
    let (mut dec, mut events, mut done) = (SseDecoder::new(), Vec::new(), false);
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(10), body.next()).await.expect("not stalled") {
        dec.feed(&chunk.expect("body"), |ev| match ev {
            SseEvent::Data(d) => {
                let info = parse_chunk(d).expect("a chunk the tool parses");
                events.push((info.completion_tokens, info.has_choices, stamp_of(d).expect("stamped")));
            }
            SseEvent::Done => done = true,
            SseEvent::Error(e) => panic!("error event {e:?}"),
        })
        .expect("valid SSE");
    }
    (events, done)
}

#[tokio::test]
async fn paced_events_follow_the_schedule_with_usage_and_send_times() {
    let srv = server(&["--mode", "paced", "--interval-us", "5000"]);
    let unix_ns = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    let sent = unix_ns();
    let (events, done) = stream(&srv.url, "/v1/chat/completions", common::chat_body("hello bench", 20)).await;
    assert!(done, "[DONE] last");
    assert_eq!(events.len(), 21, "20 tokens, then the final usage chunk");
    for (k, (tokens, choices, _)) in events.iter().take(20).enumerate() {
        assert_eq!((*tokens, *choices), (Some(k as u64 + 1), true), "usage on every event");
    }
    assert_eq!((events[20].0, events[20].1), (Some(20), false), "final usage chunk");
    assert!(events.windows(2).all(|w| w[1].2 >= w[0].2), "send times never go back");
    // The schedule is absolute from the request's arrival: token k goes out no earlier than
    // k intervals after it, however late the first one was (so no bound between the first and
    // the last, which a busy machine shortens). The stamps are the server's wall clock.
    let after_send_ms = events[19].2.saturating_sub(sent) as f64 / 1e6;
    assert!(after_send_ms >= 95.0, "token 20 went out {after_send_ms} ms after the send, before 19 intervals of 5 ms");
    let stats = srv.stats(&common::client()).await.expect("stats");
    assert_eq!((stats.requests, stats.tokens, stats.events), (1, 20, 22));
    assert!(stats.cpu_ns > 0);
}

#[tokio::test]
async fn firehose_serves_both_endpoints_and_a_run_session_starts() {
    let srv = server(&["--mode", "firehose", "--tokens", "300"]);
    let body = serde_json::json!({"model": "bench", "prompt": "x", "stream": true});
    let (events, done) = stream(&srv.url, "/v1/completions", body).await;
    assert!(done);
    assert_eq!(events.len(), 301, "--tokens when the request names no max_tokens");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut cfg = common::config(&srv.url, &format!("{}/metrics", srv.url), &out, vec![0], vec![4]);
    (cfg.decode.max_tokens, cfg.window) = (Some(256), Duration::from_millis(800));
    let handles = llm_decode_bench::session::start(cfg).await.expect("preflight passes");
    let report = tokio::time::timeout(Duration::from_secs(60), handles.join).await.expect("bounded").expect("runner");
    let cell = &report.decode.as_ref().expect("a decode section").cells[0];
    let attempt = cell.attempts.last().expect("an attempt");
    assert!(attempt.request_samples.iter().any(|r| r.output_tokens == 256), "whole answers measured");
    common::validate(&out);
}

#[tokio::test]
async fn bench_server_takes_bodies_over_axums_default_limit_and_stamps_their_read() {
    let srv = server(&["--mode", "firehose"]);
    let before = llm_decode_bench::bench::sysinfo::unix_ns();
    let body = common::chat_body(&"x".repeat(3 << 20), 1);
    let resp = common::client().post(format!("{}/v1/chat/completions", srv.url)).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 200, "a 3 MB prompt is read, not refused");
    let read: u64 = resp.headers()["x-bench-read-unix-ns"].to_str().unwrap().parse().unwrap();
    assert!(read >= before && read <= llm_decode_bench::bench::sysinfo::unix_ns(), "the read time is when it was read");
}

/// The CI smoke of the bench instrument: 64 streams, both modes, with and without the monitor,
/// a 2 s window each, each row in its own process; a small long-context row (8k-token prompts,
/// 2 rounds); every figure is in the JSON with sane values.
#[tokio::test]
async fn bench_at_64_streams_writes_every_figure() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let mut cmd = common::bin();
    cmd.args(["bench", "--streams", "64", "--window", "2s", "--long-tokens", "8192", "--long-rounds", "2", "--json"]);
    cmd.arg(&json);
    let out = common::output(cmd).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "bench failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("tool+monitor") && stdout.contains("long context: 64 streams"), "the table: {stdout}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).expect("JSON written")).unwrap();
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 6, "2 modes x (raw, tool, tool+monitor)");
    let tool_rss = rows.iter().filter(|r| r["client"] != "raw").map(|r| r["rss_kib"].as_u64().unwrap()).min().unwrap();
    for r in rows {
        let what = format!("{} {}", r["mode"], r["client"]);
        assert_eq!(r["streams"], 64);
        assert!(r["tokens"].as_u64().unwrap() > 0, "{what}: tokens");
        assert!(r["tokens_per_s"].as_f64().unwrap() > 0.0, "{what}");
        assert!(r["cpu_us_per_token"].as_f64().unwrap() > 0.0, "{what}");
        assert!(r["server_cpu_us_per_token"].as_f64().unwrap() > 0.0, "{what}");
        assert!(r["rss_kib"].as_u64().unwrap() > 0 && r["hwm_kib"].as_u64() >= r["rss_kib"].as_u64(), "{what}");
        // Each row in a fresh process: its idle baseline is not an earlier row's heap.
        let (rss, idle) = (r["rss_kib"].as_u64().unwrap(), r["idle_rss_kib"].as_u64().unwrap());
        assert!(idle > 0 && idle < tool_rss, "{what}: idle {idle} KiB, a tool row's RSS {tool_rss} KiB");
        let per = r["rss_kib_per_stream"].as_f64().unwrap();
        assert!((per - rss.saturating_sub(idle) as f64 / 64.0).abs() < 1e-6, "{what}: {per} KiB/stream");
        assert_eq!(r["errors"], 0, "{what}: no client errors");
        if r["mode"] == "paced" {
            let lag = &r["lag"];
            assert!(lag["count"].as_u64().unwrap() > 0, "{what}: lags counted");
            let (p50, p99, max) =
                (lag["p50_ms"].as_f64().unwrap(), lag["p99_ms"].as_f64().unwrap(), lag["max_ms"].as_f64().unwrap());
            assert!(p50 <= p99 && p99 <= max && max < 5000.0, "{what}: lag {lag}");
        } else {
            assert!(r.get("lag").is_none(), "{what}: firehose stamps whole writes, no lag");
        }
        if r["client"] == "raw" {
            assert!(r.get("vs_raw").is_none());
        } else {
            let x = &r["vs_raw"];
            assert!(x["cpu_us_per_token"].as_f64().unwrap() > 0.0, "{what}: {x}");
            assert!(x["tokens_per_s"].as_f64().unwrap() > 0.0, "{what}: {x}");
        }
        if r["client"] == "tool-monitor" {
            let k = &r["key_to_screen"];
            assert!(k["count"].as_u64().unwrap() > 0 && k["frames"].as_u64().unwrap() > 10, "{what}: {k}");
        }
    }
    let long = &v["long_context"];
    assert_eq!((long["requests"].as_u64(), long["errors"].as_u64()), (Some(128), Some(0)), "{long}");
    assert!((32_000..40_000).contains(&long["body_bytes"].as_u64().unwrap()), "8k tokens: about 32 KB: {long}");
    let send = &long["send_ms_per_mb"];
    let (p50, p99, max) = (send["p50"].as_f64().unwrap(), send["p99"].as_f64().unwrap(), send["max"].as_f64().unwrap());
    assert!(0.0 < p50 && p50 <= p99 && p99 <= max, "{send}");
    for k in ["mb_per_s", "client_cpu_ms_per_mb", "server_cpu_ms_per_mb"] {
        assert!(long[k].as_f64().unwrap() > 0.0, "{k}: {long}");
    }
}

#[tokio::test]
async fn bench_refuses_more_streams_than_open_files_before_any_load() {
    let mut cmd = common::bin();
    cmd.args(["bench", "--streams", "64,100000000", "--json", "/nonexistent/x.json"]);
    let out = common::output(cmd).await;
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs more open files") && err.lines().count() == 1, "{err}");
    assert!(out.stdout.is_empty(), "nothing ran");
}
