//! Sending long prompts: 128k-token chat bodies (about 0.5 MB each) at 64 concurrent streams
//! to a loopback server that reads each body whole, then answers one token. Prints the send
//! time per MB (from handing the request to the client until the server has read the last
//! byte), the per-request render cost of the body (the nonce copy), the aggregate MB/s and
//! the process CPU per MB (client and server, both in this process).
//! Run: `cargo bench --bench long_send` (`-- STREAMS ROUNDS TOKENS` to change the shape).

use axum::Router;
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::routing::post;
use bytes::Bytes;
use llm_decode_bench::load::backend::HttpBackend;
use llm_decode_bench::load::filler::filler_text;
use llm_decode_bench::load::live::LiveCounters;
use llm_decode_bench::load::request::{BodyOptions, BodyTemplate, Endpoint};
use llm_decode_bench::load::sample::RequestSample;
use llm_decode_bench::load::stream::{StreamSpec, run_stream};
use llm_decode_bench::stats::Samples;
use reqwest::header::HeaderName;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The origin both sides measure from (one process, one clock).
static ORIGIN: OnceLock<Instant> = OnceLock::new();

const ANSWER: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2}}\n\ndata: [DONE]\n\n";

/// Reads the body whole, then answers one token; `x-read-us` says when the last byte was read.
async fn chat(body: Bytes) -> impl IntoResponse {
    let read_us = ORIGIN.get().expect("set").elapsed().as_micros().to_string();
    let mut h = HeaderMap::new();
    h.insert("content-type", "text/event-stream".parse().expect("valid"));
    h.insert("x-read-us", read_us.parse().expect("digits"));
    h.insert("x-body-len", body.len().to_string().parse().expect("digits"));
    (h, ANSWER)
}

fn cpu_secs() -> f64 {
    llm_decode_bench::bench::sysinfo::process_cpu().as_secs_f64()
}

struct Shape {
    streams: usize,
    rounds: usize,
    tokens: usize,
}

fn shape() -> Shape {
    let arg = |i: usize, d: usize| std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    Shape { streams: arg(1, 64), rounds: arg(2, 10), tokens: arg(3, 131_072) }
}

#[tokio::main]
async fn main() {
    let sh = shape();
    ORIGIN.get_or_init(Instant::now);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/v1/chat/completions", listener.local_addr().expect("addr"));
    let app = Router::new().route("/v1/chat/completions", post(chat)).layer(axum::extract::DefaultBodyLimit::disable());
    tokio::spawn(async move { axum::serve(listener, app).await });
    // About 4 characters a token, as the filler's words are.
    let text = filler_text(7, sh.tokens * 4);
    let opts = BodyOptions { endpoint: Endpoint::Chat, model: "m".into(), max_tokens: 1, ignore_eos: true };
    let template = Arc::new(BodyTemplate::new(&opts, &text));
    let client = llm_decode_bench::net::client_builder().pool_max_idle_per_host(sh.streams).build().expect("client");
    let backend = HttpBackend::shared(client);
    let (send_ms_per_mb, render_us, bytes, wall, cpu) = run(&sh, &url, &template, &backend).await;
    report(&sh, send_ms_per_mb, render_us, bytes, wall, cpu);
}

type Figures = (Samples, Samples, u64, f64, f64);

async fn run(
    sh: &Shape,
    url: &str,
    template: &Arc<BodyTemplate>,
    backend: &llm_decode_bench::load::backend::SharedBackend,
) -> Figures {
    let (mut per_mb, mut render) = (Samples::new(), Samples::new());
    let mut bytes = 0u64;
    let (cpu0, wall0) = (cpu_secs(), std::time::Instant::now());
    // Round 0 opens the connections and is not counted.
    for round in 0..=sh.rounds {
        let mut set = tokio::task::JoinSet::new();
        for w in 0..sh.streams {
            let (url, template, backend) = (url.to_string(), template.clone(), backend.clone());
            set.spawn(async move { one(&url, &template, &*backend, w as u32, round).await });
        }
        while let Some(r) = set.join_next().await {
            let (ms_per_mb, r_us, len) = r.expect("task");
            if round > 0 {
                per_mb.push(ms_per_mb);
                render.push(r_us);
                bytes += len;
            }
        }
    }
    (per_mb, render, bytes, wall0.elapsed().as_secs_f64(), cpu_secs() - cpu0)
}

async fn one(
    url: &str,
    template: &BodyTemplate,
    backend: &dyn llm_decode_bench::load::backend::Backend,
    w: u32,
    round: usize,
) -> (f64, f64, u64) {
    let headers = HeaderMap::new();
    let names = [HeaderName::from_static("x-read-us")];
    let spec = StreamSpec {
        url,
        headers: &headers,
        served_by: &names,
        first_token_timeout: Some(Duration::from_secs(60)),
        queued_waits: false,
        idle_timeout: Duration::from_secs(60),
        expected_chunks: 4,
    };
    let t = std::time::Instant::now();
    let body = template.render(&format!("[{w}.{round}] "));
    let render_us = t.elapsed().as_secs_f64() * 1e6;
    let len = body.len() as u64;
    let live = LiveCounters::default();
    let s =
        run_stream(backend, &spec, body, RequestSample::new(w, Instant::now()), &CancellationToken::new(), &live).await;
    assert!(s.completed(), "request failed: {:?}", s.outcome);
    let read_us: u64 = s.served_by.as_deref().and_then(|v| v.parse().ok()).expect("x-read-us");
    let read_at = *ORIGIN.get().expect("set") + Duration::from_micros(read_us);
    let send_ms = read_at.saturating_duration_since(s.sent_at).as_secs_f64() * 1e3;
    (send_ms / (len as f64 / 1e6), render_us, len)
}

fn report(sh: &Shape, mut per_mb: Samples, mut render: Samples, bytes: u64, wall: f64, cpu: f64) {
    let mb = bytes as f64 / 1e6;
    let n = per_mb.len();
    println!(
        "long_send: {} streams x {} rounds, {} tokens per prompt ({:.3} MB body)",
        sh.streams,
        sh.rounds,
        sh.tokens,
        mb / n.max(1) as f64
    );
    let p = |s: &mut Samples, q| s.percentile(q).unwrap_or(f64::NAN);
    println!(
        "  send time per MB (send -> last byte read by the server): p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
        p(&mut per_mb, 50.0),
        p(&mut per_mb, 99.0),
        per_mb.max().unwrap_or(f64::NAN)
    );
    println!(
        "  body render (nonce + copy) per request: p50 {:.0} us  p99 {:.0} us",
        p(&mut render, 50.0),
        p(&mut render, 99.0)
    );
    println!(
        "  aggregate: {:.0} MB/s over {wall:.2} s wall; process CPU {:.2} ms per MB (client + server)",
        mb / wall,
        cpu * 1e3 / mb
    );
}
