//! A llama.cpp-mode replica in process, on tokio's paused clock: its metrics, discovery,
//! tokenizer, streams, slot limits and errors, against what the real llama-server does.

use crate::load::backend::{BackendResponse, Exchange};
use crate::sim::inproc::InProcCluster;
use crate::sim::tokenizer::tokenize;
use crate::sim::{EngineMode, SimConfig};
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::Duration;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/llamacpp_7e4c0a9");

/// One llama.cpp replica (4 slots of 1024 tokens unless `tweak` says otherwise).
fn llama(tweak: impl FnOnce(&mut SimConfig)) -> InProcCluster {
    let mut cfg =
        SimConfig { replicas: 1, engine_mode: EngineMode::Llamacpp, slot_ctx: Some(1024), ..SimConfig::default() };
    cfg.engine.max_num_seqs = 4;
    tweak(&mut cfg);
    InProcCluster::start(cfg).expect("cluster starts")
}

fn url(c: &InProcCluster, path: &str) -> String {
    format!("{}{path}", c.replicas()[0].url)
}

async fn get(c: &InProcCluster, path: &str) -> (u16, HeaderMap, String) {
    let (h, u) = (HeaderMap::new(), url(c, path));
    let resp = c.backend().send(Exchange::get(&u, &h)).await.unwrap();
    let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
    (status, headers, String::from_utf8(resp.bytes(1 << 20).await.unwrap().to_vec()).unwrap())
}

async fn post(c: &InProcCluster, path: &str, body: &Value) -> BackendResponse {
    let (h, u) = (HeaderMap::new(), url(c, path));
    c.backend().send(Exchange::post(&u, &h, Some(body.to_string().into()))).await.unwrap()
}

async fn post_text(c: &InProcCluster, path: &str, body: &Value) -> (u16, HeaderMap, String) {
    let resp = post(c, path, body).await;
    let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
    (status, headers, String::from_utf8(resp.bytes(1 << 20).await.unwrap().to_vec()).unwrap())
}

/// Every sample of one `/metrics` read (which resets the throughput gauges).
async fn metrics(c: &InProcCluster) -> HashMap<String, f64> {
    let (_, _, text) = get(c, "/metrics").await;
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.trim_start_matches("llamacpp:").to_string(), v.parse().unwrap()))
        .collect()
}

/// Reads SSE events (the text after `data: `, or a whole `error:` line) one at a time.
struct Events(BackendResponse, String);

impl Events {
    async fn next(&mut self) -> Option<String> {
        loop {
            if let Some(i) = self.1.find("\n\n") {
                let ev: String = self.1.drain(..i + 2).collect();
                return Some(ev.trim_end().strip_prefix("data: ").unwrap_or(ev.trim_end()).to_string());
            }
            let chunk = self.0.chunk().await.unwrap()?;
            self.1.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }

    async fn rest(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(e) = self.next().await {
            out.push(e);
        }
        out
    }
}

async fn stream(c: &InProcCluster, path: &str, body: &Value) -> Events {
    let resp = post(c, path, body).await;
    assert_eq!(resp.status(), 200);
    Events(resp, String::new())
}

fn completion(prompt: &str, max_tokens: i64) -> Value {
    json!({"prompt": prompt, "max_tokens": max_tokens, "ignore_eos": true, "stream": true,
           "stream_options": {"include_usage": true, "continuous_usage_stats": true}})
}

fn chat(content: &str, max_tokens: i64) -> Value {
    json!({"messages": [{"role": "user", "content": content}], "max_tokens": max_tokens, "ignore_eos": true,
           "stream": true, "stream_options": {"include_usage": true, "continuous_usage_stats": true}})
}

fn parsed(events: &[String]) -> Vec<Value> {
    events.iter().filter(|e| *e != "[DONE]").map(|e| serde_json::from_str(e).unwrap()).collect()
}

#[tokio::test(start_paused = true)]
async fn token_counters_move_per_request_and_only_decode_calls_move_live() {
    let c = llama(|_| {});
    let prompt = "count these words please";
    let p = tokenize(prompt).len() as f64;
    let mut ev = stream(&c, "/v1/completions", &completion(prompt, 40)).await;
    for _ in 0..10 {
        ev.next().await.unwrap();
    }
    let live = metrics(&c).await;
    assert_eq!((live["tokens_predicted_total"], live["tokens_predicted_seconds_total"]), (0.0, 0.0));
    assert_eq!(live["prompt_tokens_total"], p, "the prompt counts once it is evaluated");
    assert!(live["prompt_seconds_total"] > 0.0 && live["prompt_tokens_seconds"] > 0.0);
    assert!((10.0..40.0).contains(&live["n_decode_total"]), "{live:?}");
    assert_eq!((live["requests_processing"], live["n_busy_slots_per_decode"]), (1.0, 1.0));
    ev.rest().await;
    let end = metrics(&c).await;
    assert_eq!(end["tokens_predicted_total"], 40.0);
    assert_eq!(end["n_decode_total"], 40.0, "one prefill call, then one per token but the last");
    assert_eq!(end["n_tokens_max"], p + 39.0, "the last token is sampled, never decoded");
    assert_eq!(end["prompt_tokens_seconds"], 0.0, "the previous read took it");
    assert!(end["predicted_tokens_seconds"] > 0.0 && end["tokens_predicted_seconds_total"] > 0.0);
    assert_eq!((end["requests_processing"], end["spec_decode_num_drafts_total"]), (0.0, 0.0));
    assert_eq!(metrics(&c).await["predicted_tokens_seconds"], 0.0, "every read resets it");
    stream(&c, "/v1/completions", &completion(prompt, 3)).await.rest().await;
    let again = metrics(&c).await;
    assert_eq!(again["prompt_tokens_cached_total"], p - 1.0, "a repeated prompt re-evaluates its last token");
    assert_eq!(again["prompt_tokens_total"], p + 1.0);
}

#[tokio::test(start_paused = true)]
async fn requests_beyond_the_slots_are_deferred_and_busy_slots_average_per_call() {
    let c = llama(|cfg| cfg.engine.max_num_seqs = 2);
    let mut streams = Vec::new();
    for i in 0..3 {
        streams.push(stream(&c, "/v1/completions", &completion(&format!("request {i}"), 30)).await);
    }
    streams[0].next().await.unwrap();
    let live = metrics(&c).await;
    assert_eq!((live["requests_processing"], live["requests_deferred"]), (2.0, 1.0));
    let (_, _, slots) = get(&c, "/slots").await;
    let slots: Value = serde_json::from_str(&slots).unwrap();
    let busy: Vec<bool> = slots.as_array().unwrap().iter().map(|s| s["is_processing"].as_bool().unwrap()).collect();
    assert_eq!(busy, [true, true]);
    for s in &mut streams {
        s.rest().await;
    }
    let end = metrics(&c).await;
    let busy = end["n_busy_slots_per_decode"];
    assert!(busy > 1.0 && busy < 2.0, "two slots busy, then one: {busy}");
    assert_eq!((end["tokens_predicted_total"], end["requests_deferred"]), (90.0, 0.0));
}

#[tokio::test(start_paused = true)]
async fn a_stream_cut_by_its_client_counts_what_it_generated() {
    let c = llama(|_| {});
    let mut ev = stream(&c, "/v1/chat/completions", &chat("cut me short", 200)).await;
    for _ in 0..6 {
        ev.next().await.unwrap();
    }
    drop(ev);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let m = metrics(&c).await;
    assert!((5.0..=7.0).contains(&m["tokens_predicted_total"]), "{m:?}");
    assert!(m["tokens_predicted_seconds_total"] > 0.0);
    assert_eq!(m["requests_processing"], 0.0);
}

/// The keys of a JSON object, sorted.
fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

fn fixture(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(format!("{FIXTURES}/{name}")).unwrap()).unwrap()
}

#[tokio::test(start_paused = true)]
async fn discovery_answers_like_llama_server() {
    let c = llama(|cfg| cfg.engine.max_model_len = 32_768);
    let (status, _, models) = get(&c, "/v1/models").await;
    let (models, real) = (serde_json::from_str::<Value>(&models).unwrap(), fixture("v1_models.json"));
    assert_eq!(status, 200);
    assert_eq!(keys(&models), keys(&real));
    assert_eq!(keys(&models["data"][0]), keys(&real["data"][0]));
    assert_eq!(keys(&models["data"][0]["meta"]), keys(&real["data"][0]["meta"]));
    assert_eq!(keys(&models["models"][0]), keys(&real["models"][0]));
    let meta = &models["data"][0]["meta"];
    assert_eq!((meta["n_ctx"].as_u64(), meta["n_ctx_train"].as_u64()), (Some(1024), Some(32_768)));
    assert_eq!(
        (models["data"][0]["owned_by"].as_str(), models["data"][0].get("max_model_len")),
        (Some("llamacpp"), None)
    );
    let props: Value = serde_json::from_str(&get(&c, "/props").await.2).unwrap();
    let real = fixture("props.json");
    for k in keys(&real) {
        assert!(props.get(&k).is_some(), "/props lacks {k}");
    }
    assert_eq!(
        (props["total_slots"].as_u64(), props["default_generation_settings"]["n_ctx"].as_u64()),
        (Some(4), Some(1024))
    );
    assert_eq!(props["build_info"], "b1-7e4c0a9");
    let slots: Value = serde_json::from_str(&get(&c, "/slots").await.2).unwrap();
    let ids: Vec<(u64, u64, bool)> = slots
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["id"].as_u64().unwrap(), s["n_ctx"].as_u64().unwrap(), s["is_processing"].as_bool().unwrap()))
        .collect();
    assert_eq!(ids, [(0, 1024, false), (1, 1024, false), (2, 1024, false), (3, 1024, false)]);
    assert_eq!(get(&c, "/health").await.2, r#"{"status":"ok"}"#);
    let (status, headers, body) = get(&c, "/version").await;
    assert_eq!((status, headers["connection"].to_str().unwrap()), (404, "close"));
    assert_eq!(body, r#"{"error":{"message":"File Not Found","type":"not_found_error","code":404}}"#);
    assert_eq!(get(&c, "/v1/completions").await.0, 404, "a wrong method is not found either");
    let any_model = json!({"model": "not-served", "prompt": "hi", "max_tokens": 2});
    assert_eq!(post_text(&c, "/v1/completions", &any_model).await.0, 200, "the model field is not checked");
}

#[tokio::test(start_paused = true)]
async fn tokenize_takes_content_and_answers_tokens_only() {
    let c = llama(|_| {});
    let (status, _, body) = post_text(&c, "/tokenize", &json!({"content": "hello world"})).await;
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!((status, keys(&v)), (200, vec!["tokens".to_string()]));
    assert_eq!(v["tokens"].as_array().unwrap().len(), tokenize("hello world").len());
    let (status, _, body) = post_text(&c, "/tokenize", &json!({"prompt": "hello world"})).await;
    assert_eq!((status, body.as_str()), (200, r#"{"tokens":[]}"#), "a vLLM-style body is no error");
}

#[tokio::test(start_paused = true)]
async fn completions_put_usage_on_the_finish_chunk_and_never_per_token() {
    let c = llama(|_| {});
    let events = stream(&c, "/v1/completions", &completion("shape of a stream", 5)).await.rest().await;
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    let chunks = parsed(&events);
    assert_eq!(chunks.len(), 6, "one chunk per token, then the finish chunk: {events:?}");
    for c in &chunks[..5] {
        assert!(c.get("usage").is_none() && c["choices"][0]["finish_reason"].is_null());
        assert!(!c["choices"][0]["text"].as_str().unwrap().is_empty());
    }
    let fin = &chunks[5];
    assert_eq!(
        (fin["choices"][0]["text"].as_str(), fin["choices"][0]["finish_reason"].as_str()),
        (Some(""), Some("length"))
    );
    assert_eq!(fin["usage"]["completion_tokens"], 5);
    assert!(fin["timings"]["predicted_n"] == 5 && fin["id"].as_str().unwrap().starts_with("chatcmpl-"));
}

#[tokio::test(start_paused = true)]
async fn chat_streams_send_role_content_finish_then_a_separate_usage_chunk() {
    let c = llama(|_| {});
    let events = stream(&c, "/v1/chat/completions", &chat("shape of a chat", 4)).await.rest().await;
    let chunks = parsed(&events);
    assert_eq!((chunks.len(), events.last().map(String::as_str)), (7, Some("[DONE]")));
    assert_eq!(chunks[0]["choices"][0]["delta"], json!({"role": "assistant", "content": null}));
    assert!(chunks[1..5].iter().all(|c| c["choices"][0]["delta"]["content"].is_string() && c.get("usage").is_none()));
    assert_eq!((&chunks[5]["choices"][0]["delta"], chunks[5].get("usage")), (&json!({}), None));
    assert_eq!(chunks[5]["choices"][0]["finish_reason"], "length");
    assert_eq!(
        (chunks[6]["choices"].as_array().map(Vec::len), &chunks[6]["usage"]["completion_tokens"]),
        (Some(0), &json!(4))
    );
    let natural = json!({"messages": [{"role": "user", "content": "stop by yourself"}], "stream": true});
    let chunks = parsed(&stream(&c, "/v1/chat/completions", &natural).await.rest().await);
    let fin = &chunks[chunks.len() - 1];
    assert_eq!(fin["choices"][0]["finish_reason"], "stop", "without ignore_eos a request ends on its own");
    assert!(fin["timings"]["predicted_n"].as_u64().unwrap() >= 16, "no usage asked: timings on the finish chunk");
}

#[tokio::test(start_paused = true)]
async fn a_prompt_over_the_slot_is_a_400_before_any_event_and_a_full_slot_stops_the_stream() {
    let c = llama(|cfg| cfg.slot_ctx = Some(8192));
    let over = json!({"prompt": vec![5; 27_001], "stream": true, "max_tokens": 4});
    let (status, headers, body) = post_text(&c, "/v1/completions", &over).await;
    assert_eq!((status, headers["connection"].to_str().unwrap()), (400, "close"));
    let captured = std::fs::read_to_string(format!("{FIXTURES}/over_context_400.json")).unwrap();
    assert_eq!(body, captured.trim_end());
    let c = llama(|cfg| cfg.slot_ctx = Some(64));
    let p = tokenize("fill the slot").len();
    let chunks = parsed(&stream(&c, "/v1/completions", &completion("fill the slot", 10_000)).await.rest().await);
    let fin = chunks.last().unwrap();
    assert_eq!(fin["choices"][0]["finish_reason"], "length");
    assert_eq!(fin["usage"]["total_tokens"].as_u64(), Some(64), "generation stops when the slot is full");
    assert_eq!(fin["usage"]["completion_tokens"].as_u64(), Some(64 - p as u64));
}

#[tokio::test(start_paused = true)]
async fn other_errors_have_llama_cpp_s_shape() {
    let c = llama(|_| {});
    let (h, u) = (HeaderMap::new(), url(&c, "/v1/completions"));
    let resp = c.backend().send(Exchange::post(&u, &h, Some("{not json".into()))).await.unwrap();
    assert_eq!(resp.status(), 500);
    let v: Value = serde_json::from_slice(&resp.bytes(1 << 20).await.unwrap()).unwrap();
    assert_eq!(v["error"]["type"], "server_error");
    let (status, _, body) = post_text(&c, "/v1/chat/completions", &json!({"max_tokens": 2})).await;
    assert_eq!(status, 400);
    assert_eq!(body, r#"{"error":{"code":400,"message":"'messages' is required","type":"invalid_request_error"}}"#);
    let whole = json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "ignore_eos": true});
    let (status, headers, body) = post_text(&c, "/v1/chat/completions", &whole).await;
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (status, v["object"].as_str(), v["usage"]["completion_tokens"].as_u64()),
        (200, Some("chat.completion"), Some(3))
    );
    assert_eq!(headers["keep-alive"], "timeout=5, max=100");
    assert!(headers.get("connection").is_none());
}
