//! The bench server's HTTP frames and vLLM's chunk shape (`--events-per-frame`,
//! `--chunk-shape vllm`), and a `bench` row run against them.

use crate::common;

use futures_util::StreamExt;
use llm_decode_bench::bench::child::ServerProcess;
use llm_decode_bench::load::chunk::parse_chunk;
use std::path::Path;
use std::time::Duration;

fn server(args: &[&str]) -> ServerProcess {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    ServerProcess::spawn(Path::new(env!("CARGO_BIN_EXE_llm-decode-bench")), &args).expect("bench server starts")
}

/// The body pieces of one streamed chat answer, as the HTTP client hands them over (never
/// more than one chunk of the chunked body each).
async fn pieces(url: &str, tokens: u64) -> Vec<Vec<u8>> {
    let body = common::chat_body("hello bench", tokens as u32);
    let resp = common::client().post(format!("{url}/v1/chat/completions")).json(&body).send().await.expect("answers");
    assert_eq!(resp.status(), 200);
    let mut body = resp.bytes_stream();
    let mut out = Vec::new();
    while let Some(piece) = tokio::time::timeout(Duration::from_secs(10), body.next()).await.expect("not stalled") {
        out.push(piece.expect("body").to_vec());
    }
    out
}

fn events_in(piece: &[u8]) -> usize {
    piece.windows(6).filter(|w| w == b"data: ").count()
}

/// The data of every event of a whole body, in order.
fn data_events(body: &[u8]) -> Vec<String> {
    let text = String::from_utf8(body.to_vec()).expect("UTF-8");
    text.split_terminator("\n\n").map(|e| e.strip_prefix("data: ").expect("a data line").to_string()).collect()
}

#[tokio::test]
async fn vllm_chunks_go_out_one_or_sixteen_events_per_frame() {
    for (per_frame, tokens) in [(1usize, 40u64), (16, 300)] {
        let n = per_frame.to_string();
        let srv = server(&["--mode", "firehose", "--chunk-shape", "vllm", "--events-per-frame", &n]);
        let got = pieces(&srv.url, tokens).await;
        let most = got.iter().map(|p| events_in(p)).max().unwrap();
        assert!(most <= per_frame, "{per_frame} per frame: a piece held {most} events");
        let events = data_events(&got.concat());
        assert_eq!(events.len() as u64, tokens + 3, "role, tokens, usage, [DONE]");
        assert!(events[0].contains("\"delta\":{\"role\":\"assistant\",\"content\":\"\"}"), "{}", events[0]);
        assert!(events[tokens as usize].contains("\"finish_reason\":\"length\",\"stop_reason\":null"));
        assert!(events.iter().all(|e| !e.contains("bench_sent_unix_ns")), "no send time in vLLM's shape");
        let usage: Vec<Option<u64>> =
            events[..events.len() - 1].iter().map(|e| parse_chunk(e.as_bytes()).unwrap().completion_tokens).collect();
        let want: Vec<Option<u64>> = (0..=tokens).chain([tokens]).map(Some).collect();
        assert_eq!(usage, want, "usage on every event");
        assert_eq!(events.last().unwrap(), "[DONE]");
        let stats = srv.stats(&common::client()).await.expect("stats");
        assert_eq!((stats.requests, stats.tokens, stats.events), (1, tokens, tokens + 3), "the role chunk is no token");
    }
}

/// `bench` with vLLM's chunks one event per frame runs a tiny firehose row and prints figures.
#[tokio::test]
async fn bench_runs_a_row_against_one_vllm_event_per_frame() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let mut cmd = common::bin();
    cmd.args(["bench", "--streams", "4", "--modes", "firehose", "--window", "1s", "--monitor", "off"]);
    cmd.args(["--long-tokens", "0", "--tokens", "256", "--chunk-shape", "vllm", "--events-per-frame", "1", "--json"]);
    cmd.arg(&json);
    let out = common::output(cmd).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "bench failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("server: vllm chunks, firehose 1 event per frame"), "{stdout}");
    let table: Vec<&str> = stdout.lines().filter(|l| l.contains("firehose") && l.contains(" 4 ")).collect();
    assert_eq!(table.len(), 2, "a raw and a tool line: {stdout}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).expect("JSON written")).unwrap();
    assert_eq!((&v["settings"]["chunk_shape"], &v["settings"]["events_per_frame"]), (&"vllm".into(), &1.into()));
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2, "raw and tool");
    for r in rows {
        assert!(r["tokens"].as_u64().unwrap() > 0 && r["cpu_us_per_token"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["server_cpu_us_per_token"].as_f64().unwrap() > 0.0 && r["errors"] == 0, "{r}");
    }
}

#[tokio::test]
async fn bad_frame_and_shape_flags_are_refused_before_any_load() {
    for bad in [&["--events-per-frame", "0"][..], &["--chunk-shape", "openai"]] {
        let mut cmd = common::bin();
        cmd.args(["bench", "--streams", "4", "--json", "/nonexistent/x.json"]).args(bad);
        let out = common::output(cmd).await;
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(out.stdout.is_empty(), "nothing ran: {bad:?}");
    }
}
