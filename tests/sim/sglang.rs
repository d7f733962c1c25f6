//! The simulator's SGLang mode answers as SGLang's source does (docs/protocol.md §2.1, §2.4–§2.7):
//! where usage rides in a stream, the capacity routes, `/flush_cache`, the length check,
//! and counters that move when a request ends, a client abort included.

use crate::common;

use common::*;
use futures_util::StreamExt;
use llm_decode_bench::sim::expo::MetricsDialect;
use serde_json::{Value, json};
use std::time::Duration;

async fn sglang() -> llm_decode_bench::sim::Cluster {
    cluster(1, 50.0, |cfg| cfg.dialects = vec![MetricsDialect::Sglang]).await
}

/// The `data:` payloads of a whole SSE body.
async fn events(resp: reqwest::Response) -> Vec<Value> {
    let text = resp.text().await.unwrap();
    text.split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[tokio::test]
async fn usage_rides_apart_from_the_chat_finish() {
    let c = sglang().await;
    let http = client();
    let url = format!("{}/v1/chat/completions", c.info().replicas[0].url);
    let ev = events(http.post(&url).json(&chat_body("hello", 6)).send().await.unwrap()).await;
    let finish = ev.iter().position(|e| e["choices"][0]["finish_reason"].is_string()).unwrap();
    assert_eq!(ev[finish]["choices"][0]["delta"], json!({}), "the finish chunk has an empty delta");
    assert!(ev[finish].get("usage").is_none(), "and no usage, even with continuous usage");
    assert_eq!(ev[finish - 1]["usage"]["completion_tokens"], 6, "content chunks carry cumulative usage");
    let last = ev.last().unwrap();
    assert_eq!((last["choices"].as_array().unwrap().len(), last["usage"]["completion_tokens"].as_u64()), (0, Some(6)));
    // Without include_usage, continuous usage still comes, and no usage chunk.
    let body = json!({"prompt": "hi", "max_tokens": 4, "ignore_eos": true, "stream": true,
                      "stream_options": {"continuous_usage_stats": true}});
    let url = format!("{}/v1/completions", c.info().replicas[0].url);
    let ev = events(http.post(&url).json(&body).send().await.unwrap()).await;
    assert!(ev.iter().all(|e| !e["choices"].as_array().unwrap().is_empty()));
    assert_eq!(ev.last().unwrap()["choices"][0]["finish_reason"], "length");
    assert_eq!(ev.last().unwrap()["usage"]["completion_tokens"], 4, "the finish rides on the last text chunk");
}

#[tokio::test]
async fn capacity_routes_and_the_length_check() {
    let c = sglang().await;
    let http = client();
    let base = &c.info().replicas[0].url;
    let info: Value = http.get(format!("{base}/get_server_info")).send().await.unwrap().json().await.unwrap();
    assert_eq!(info["max_total_num_tokens"], 360_448);
    assert_eq!(info["internal_states"][0]["memory_usage"]["token_capacity"], 360_448);
    assert_eq!((info["max_running_requests"].as_u64(), info["page_size"].as_u64()), (Some(8), Some(16)));
    assert!(info["context_length"].is_null(), "unset unless --context-length is given");
    let models: Value = http.get(format!("{base}/v1/models")).send().await.unwrap().json().await.unwrap();
    assert_eq!(
        (models["data"][0]["max_model_len"].as_u64(), models["data"][0]["owned_by"].as_str()),
        (Some(131_072), Some("sglang"))
    );
    assert_eq!(http.get(format!("{base}/version")).send().await.unwrap().status(), 404);
    let tok = post_json(&http, &format!("{base}/tokenize"), &json!({"prompt": "a b c"})).await;
    assert_eq!(tok["count"], 3);
    // Too long for the context: 400 before any stream starts, in SGLang's flat error shape.
    let body = json!({"prompt": "x", "max_tokens": 131_072, "stream": true});
    let resp = http.post(format!("{base}/v1/completions")).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    let err: Value = resp.json().await.unwrap();
    assert_eq!((err["object"].as_str(), err["code"].as_u64()), (Some("error"), Some(400)));
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .starts_with("Requested token count exceeds the model's maximum context length of 131072 tokens.")
    );
}

#[tokio::test]
async fn flush_cache_refuses_while_a_request_runs() {
    let c = sglang().await;
    let http = client();
    let base = c.info().replicas[0].url.clone();
    let resp = http.post(format!("{base}/v1/completions")).json(&completion_body("long", 2000)).send().await.unwrap();
    let mut body = resp.bytes_stream();
    body.next().await.unwrap().unwrap();
    let busy = http.get(format!("{base}/flush_cache")).send().await.unwrap();
    assert_eq!((busy.status().as_u16(), busy.text().await.unwrap()), (400, "Flush cache failed.\n".to_string()));
    while body.next().await.is_some() {}
    let idle = http.post(format!("{base}/flush_cache")).send().await.unwrap();
    assert_eq!(idle.status(), 200);
    assert!(idle.text().await.unwrap().starts_with("Cache flushed."));
}

#[tokio::test]
async fn a_cut_stream_is_counted_as_aborted_and_finished_with_its_tokens() {
    let c = sglang().await;
    let http = client();
    let r = &c.info().replicas[0];
    let resp =
        http.post(format!("{}/v1/completions", r.url)).json(&completion_body("cut", 100_000)).send().await.unwrap();
    let mut body = resp.bytes_stream();
    body.next().await.unwrap().unwrap();
    drop(body);
    // The abort comes 2 s (modelled; 40 ms at speed 50) after the client left.
    let mut text = String::new();
    for _ in 0..200 {
        text = metrics_text(&http, &r.metrics_url).await;
        if sample_value(&text, "sglang:num_requests_total").is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(sample_value(&text, "sglang:num_aborted_requests_total"), Some(1.0), "{text}");
    assert_eq!(sample_value(&text, "sglang:num_requests_total"), Some(1.0));
    let generated = sample_value(&text, "sglang:generation_tokens_total").unwrap();
    assert!(generated > 1.0, "tokens generated before the abort count: {generated}");
    assert!(sample_value(&text, "sglang:realtime_tokens_total").unwrap() >= generated - 1.0);
}
