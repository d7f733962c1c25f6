//! Shared helpers of the integration tests: a simulated cluster (on loopback or in process)
//! and a small streaming client built on the crate's own SSE decoder and chunk parser.
#![allow(dead_code)]

use futures_util::StreamExt;
use llm_decode_bench::config::MetricsEndpoint;
use llm_decode_bench::config::RunConfig;
use llm_decode_bench::load::backend::{Backend, Exchange};
use llm_decode_bench::load::chunk::{ChunkInfo, parse_chunk};
use llm_decode_bench::load::sse::{SseDecoder, SseEvent};
use llm_decode_bench::sim::inproc::InProcCluster;
use llm_decode_bench::sim::params::EngineParams;
use llm_decode_bench::sim::{Cluster, EngineMode, SimConfig};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

/// A cluster on free loopback ports, running modelled time `speed` times faster.
pub async fn cluster(replicas: usize, speed: f64, tweak: impl FnOnce(&mut SimConfig)) -> Cluster {
    let mut cfg =
        SimConfig { replicas, engine: EngineParams { speed, ..EngineParams::default() }, ..SimConfig::default() };
    tweak(&mut cfg);
    Cluster::start(cfg).await.expect("cluster starts")
}

/// The same cluster in process (no socket; engines on tokio time), for the paused clock.
pub fn inproc_cluster(replicas: usize, speed: f64, tweak: impl FnOnce(&mut SimConfig)) -> InProcCluster {
    let mut cfg =
        SimConfig { replicas, engine: EngineParams { speed, ..EngineParams::default() }, ..SimConfig::default() };
    tweak(&mut cfg);
    InProcCluster::start(cfg).expect("cluster starts")
}

/// A cluster on loopback whose replicas answer like llama.cpp's llama-server (`--engine
/// llamacpp`): slots, `llamacpp:*` metrics, its streams, the connection closed after a stream.
pub async fn llamacpp_cluster(replicas: usize, speed: f64, tweak: impl FnOnce(&mut SimConfig)) -> Cluster {
    cluster(replicas, speed, |cfg| {
        cfg.engine_mode = EngineMode::Llamacpp;
        tweak(cfg);
    })
    .await
}

/// The same llama.cpp-mode cluster in process, for the paused clock.
pub fn llamacpp_inproc(replicas: usize, speed: f64, tweak: impl FnOnce(&mut SimConfig)) -> InProcCluster {
    inproc_cluster(replicas, speed, |cfg| {
        cfg.engine_mode = EngineMode::Llamacpp;
        tweak(cfg);
    })
}

/// Runs `test` on a paused clock of its own (a current-thread runtime on a blocking thread), so
/// the in-process cluster it builds keeps modelled time however busy the machine is.
pub async fn paused<F, Fut, T>(test: F) -> T
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = T>,
    T: Send + 'static,
{
    let run = move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build();
        rt.expect("a runtime").block_on(test())
    };
    tokio::task::spawn_blocking(run).await.expect("the paused test ran")
}

/// Runs `cfg` against `cluster` to its end (at most 600 s of paused time).
pub async fn run_inproc(cfg: RunConfig, cluster: &InProcCluster) -> llm_decode_bench::report::json::SessionReport {
    let h = llm_decode_bench::session::start_with(cfg, cluster.backend()).await.expect("preflight passes");
    tokio::time::timeout(Duration::from_secs(600), h.join).await.expect("the session ends").expect("runner")
}

/// A decode session at `ctx` x `conc` (1 s windows) against a one-replica in-process cluster
/// at `speed`, written to `out`, on a paused clock of its own (a current-thread runtime on a
/// blocking thread): its figures are the engine model's however busy the machine is, so a
/// real-clock test can compare them with another session's.
pub async fn paused_decode_session(
    speed: f64,
    ctx: Vec<u64>,
    conc: Vec<u32>,
    out: &Path,
) -> llm_decode_bench::report::json::SessionReport {
    let out = out.to_path_buf();
    paused(move || async move {
        let c = inproc_cluster(1, speed, |_| {});
        let r = &c.info().replicas[0];
        let mut cfg = config(&r.url, &r.metrics_url, &out, ctx, conc);
        cfg.window = Duration::from_secs(1);
        run_inproc(cfg, &c).await
    })
    .await
}

/// A plain HTTP client.
pub fn client() -> reqwest::Client {
    llm_decode_bench::net::client_builder().no_proxy().build().expect("client")
}

/// What a streamed response looked like.
#[derive(Debug, Default)]
pub struct Streamed {
    /// HTTP status.
    pub status: u16,
    /// Response headers.
    pub headers: reqwest::header::HeaderMap,
    /// Parsed data chunks, in order.
    pub chunks: Vec<ChunkInfo>,
    /// Data events that were not valid chunks.
    pub malformed: usize,
    /// `data: [DONE]` was seen.
    pub done: bool,
    /// The body ended with a transport error.
    pub broken: bool,
    /// Raw body, when the status was not 200.
    pub error_body: String,
}

impl Streamed {
    /// The last `completion_tokens` any chunk reported.
    pub fn completion_tokens(&self) -> Option<u64> {
        self.chunks.iter().rev().find_map(|c| c.completion_tokens)
    }
}

/// Sends one request to `url` and reads the SSE answer to its end (or `timeout`).
pub async fn stream(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, &str)],
    body: &Value,
    timeout: Duration,
) -> Streamed {
    let mut req = client.post(url).json(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("request sent");
    let out = Streamed { status: resp.status().as_u16(), headers: resp.headers().clone(), ..Streamed::default() };
    if out.status != 200 {
        return Streamed { error_body: resp.text().await.unwrap_or_default(), ..out };
    }
    read_sse(out, resp.bytes_stream(), timeout).await
}

/// [`stream`] through a backend (an in-process cluster's, for the paused clock).
pub async fn stream_via(backend: &dyn Backend, url: &str, body: &Value, timeout: Duration) -> Streamed {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(reqwest::header::CONTENT_TYPE, "application/json".parse().unwrap());
    let body = bytes::Bytes::from(body.to_string());
    let resp = backend.send(Exchange::post(url, &headers, Some(body))).await.expect("request sent");
    let out = Streamed { status: resp.status().as_u16(), headers: resp.headers().clone(), ..Streamed::default() };
    if out.status != 200 {
        let text = resp.bytes(1 << 20).await.unwrap_or_default();
        return Streamed { error_body: String::from_utf8_lossy(&text).into_owned(), ..out };
    }
    read_sse(out, resp.into_stream(), timeout).await
}

/// GETs `url` through a backend: the status and the body (panics on a failed exchange).
pub async fn get_via(backend: &dyn Backend, url: &str) -> (u16, String) {
    let resp = backend.send(Exchange::get(url, &reqwest::header::HeaderMap::new())).await.expect("answered");
    let status = resp.status().as_u16();
    (status, String::from_utf8_lossy(&resp.bytes(1 << 24).await.expect("a body")).into_owned())
}

/// Reads an SSE body into `out` to its end, its first transport error, or `timeout`.
async fn read_sse<E>(
    mut out: Streamed,
    body: impl futures_util::Stream<Item = Result<bytes::Bytes, E>>,
    timeout: Duration,
) -> Streamed {
    let mut dec = SseDecoder::new();
    let read = async {
        let mut body = std::pin::pin!(body);
        while let Some(part) = body.next().await {
            let Ok(bytes) = part else {
                out.broken = true;
                break;
            };
            dec.feed(&bytes, |ev| match ev {
                SseEvent::Data(d) | SseEvent::Error(d) => match parse_chunk(d) {
                    Ok(c) => out.chunks.push(c),
                    Err(_) => out.malformed += 1,
                },
                SseEvent::Done => out.done = true,
            })
            .expect("sse decodes");
        }
    };
    let _ = tokio::time::timeout(timeout, read).await;
    out
}

/// A chat request body with continuous usage.
pub fn chat_body(content: &str, max_tokens: u32) -> Value {
    json!({
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens, "ignore_eos": true, "stream": true,
        "stream_options": {"include_usage": true, "continuous_usage_stats": true}
    })
}

/// A completions request body with continuous usage.
pub fn completion_body(prompt: &str, max_tokens: u32) -> Value {
    json!({
        "prompt": prompt, "max_tokens": max_tokens, "ignore_eos": true, "stream": true,
        "stream_options": {"include_usage": true, "continuous_usage_stats": true}
    })
}

/// POSTs `body` as JSON to `url` and returns the JSON answer (panics on any failure).
pub async fn post_json(client: &reqwest::Client, url: &str, body: &Value) -> Value {
    client.post(url).json(body).send().await.unwrap().json().await.unwrap()
}

/// Fetches a `/metrics` page.
pub async fn metrics_text(client: &reqwest::Client, url: &str) -> String {
    client.get(url).send().await.expect("metrics reachable").text().await.expect("metrics body")
}

/// The value of an exact sample line prefix such as `vllm:num_preemptions_total{`.
pub fn sample_value(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .reduce(|a, b| a + b)
}

/// Text of about `words` sim tokens for a prompt family.
pub fn family_text(family: usize, words: usize) -> String {
    (0..words).map(|i| format!(" f{family}w{}", i % 97)).collect()
}

/// A small run configuration against `base` with its replica's metrics.
pub fn config(base: &str, metrics: &str, out: &Path, ctx: Vec<u64>, conc: Vec<u32>) -> RunConfig {
    RunConfig {
        metrics: vec![MetricsEndpoint { name: "sim-a".into(), url: metrics.into() }],
        ctx,
        conc,
        window: Duration::from_millis(1500),
        idle_timeout: Duration::from_secs(30),
        poll_interval: Duration::from_millis(100),
        out: Some(out.to_path_buf()),
        routing: Default::default(),
        decode: llm_decode_bench::config::decode::DecodeConfig {
            warmup_timeout: Duration::from_secs(20),
            settle: Duration::from_millis(200),
            burst_tokens: 64,
            min_stream_tokens: 1024,
            ..RunConfig::defaults(base).decode
        },
        ..RunConfig::defaults(base)
    }
}

/// A routing session's base config against an in-process cluster: the gateway as target, every
/// replica's metrics polled, the routing plan only (each test sets its own `routing`).
pub fn routing_base(c: &InProcCluster, out: &Path) -> RunConfig {
    let info = c.info();
    let mut cfg = config(&info.gateway.url, "http://unused/metrics", out, vec![0], vec![1]);
    cfg.metrics =
        info.replicas.iter().map(|r| MetricsEndpoint { name: r.name.clone(), url: r.metrics_url.clone() }).collect();
    cfg.plans = vec![llm_decode_bench::config::PlanKind::Routing];
    cfg
}

/// Reads a written report, validates it against the schema in `assets/`, and parses it.
/// `report merge` of the shard reports `inputs` into `out` (it must succeed); the merged
/// report, validated against the schema.
pub async fn merge_validated(
    inputs: &[std::path::PathBuf],
    out: &Path,
) -> llm_decode_bench::report::json::SessionReport {
    let mut args: Vec<String> = vec!["report".into(), "merge".into()];
    args.extend(inputs.iter().map(|p| p.to_str().unwrap().to_string()));
    args.extend(["--out".to_string(), out.to_str().unwrap().to_string()]);
    let done = run_bin(args).await;
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    validate(out)
}

pub fn validate(path: &Path) -> llm_decode_bench::report::json::SessionReport {
    let text = std::fs::read_to_string(path).expect("report written");
    let instance: Value = serde_json::from_str(&text).expect("report is JSON");
    let schema: Value = serde_json::from_str(include_str!("../../assets/session-report.schema.json")).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let errors: Vec<String> =
        validator.iter_errors(&instance).map(|e| format!("{} at {}", e, e.instance_path)).collect();
    assert!(errors.is_empty(), "schema violations: {errors:#?}");
    serde_json::from_str(&text).expect("report reads back")
}

/// Longest wait for one invocation of the binary ([`output`]).
pub const PATIENCE: Duration = Duration::from_secs(90);

/// The binary under test, without an API key in its environment, its output piped.
pub fn bin() -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_llm-decode-bench"));
    cmd.env_remove("OPENAI_API_KEY")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd
}

/// Runs `cmd` to its end (bounded; killed past [`PATIENCE`]) off the async workers.
pub async fn output(mut cmd: std::process::Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().expect("binary starts");
        let deadline = std::time::Instant::now() + PATIENCE;
        while child.try_wait().expect("wait").is_none() {
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        child.wait_with_output().expect("output")
    })
    .await
    .expect("joined")
}

/// Serves `app` on a free loopback port: its base URL.
pub async fn serve_router(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

/// A loopback port that refuses connections for as long as this value lives: a TCP socket
/// bound to it that never listens. Connects get ECONNREFUSED, and no other process can take
/// the port meanwhile (a port picked free and released could be reused by anyone).
#[derive(Debug)]
pub struct RefusedPort {
    _socket: tokio::net::TcpSocket,
    /// The port held.
    pub port: u16,
}

impl RefusedPort {
    /// `http://127.0.0.1:{port}`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// Holds a free loopback port that refuses connections ([`RefusedPort`]).
pub fn refused_port() -> RefusedPort {
    let socket = tokio::net::TcpSocket::new_v4().expect("a TCP socket");
    socket.bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0))).expect("bind a loopback port");
    let port = socket.local_addr().expect("its address").port();
    RefusedPort { _socket: socket, port }
}

/// Runs the binary with `args` and no `OPENAI_API_KEY` (a bounded wait: a hang fails the test).
pub async fn run_bin(args: Vec<String>) -> std::process::Output {
    let child = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_llm-decode-bench"))
            .args(&args)
            .env_remove("OPENAI_API_KEY")
            .output()
            .expect("binary runs")
    });
    tokio::time::timeout(std::time::Duration::from_secs(120), child).await.expect("the run ends").expect("joins")
}
