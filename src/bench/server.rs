//! The bench server: an OpenAI-compatible streaming endpoint of the project's own, run in its own
//! process (`llm-decode-bench bench-server`) so that client and server CPU count apart.
//!
//! `/v1/chat/completions` and `/v1/completions` stream one token per SSE event, `usage` on
//! every event (continuous usage), a final usage chunk and `[DONE]`; every event carries the
//! server's send time in `bench_sent_unix_ns` (src/bench/template.rs). `/v1/models`,
//! `/tokenize` and a minimal vLLM-style `/metrics` let a `run` session start against it;
//! `GET /bench/stats` reports the server's own CPU time and counts as JSON; `POST /bench/mark`
//! opens a window and `GET /bench/window` reports the tokens written in it, the first and last
//! frame's send times, paced lateness and first tokens (src/bench/marks.rs). Requests are
//! stamped with the kernel's receive time of their bytes (src/bench/arrival.rs): the server's
//! time to first token counts from it.
//!
//! Chat answers take the bench's own chunk shape or vLLM's exact one (`--chunk-shape`,
//! src/bench/shape.rs); completions always take the bench's.
//!
//! Firehose mode writes pre-formatted events as fast as the client reads, one HTTP frame (one
//! body chunk of the chunked response) at a time: a frame ends at `events_per_frame` events or
//! at about `batch_bytes` bytes, whichever comes first, and holds at least one event; each is
//! copied once and stamped (vLLM's shape has no stamp: a shared slice instead). Paced mode sends token k of a stream at `start + (k - 1) * interval`
//! (tokio's timer: 1 ms granularity), one event per frame: vLLM's role chunk goes with the first
//! token, the last token with the final usage chunk and `[DONE]`.

use super::arrival::{Arrival, RequestTimes, StampedListener};
use super::shape::ChunkShape;
use super::template::{Flavor, Template};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::stream::{self, Stream};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// How events are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// As fast as the client reads.
    Firehose,
    /// One event every interval per stream.
    Paced,
}

/// Settings of the server.
#[derive(Debug, Clone)]
pub(crate) struct ServerOptions {
    /// Where to listen (port 0: a free one).
    pub addr: SocketAddr,
    /// Firehose or paced.
    pub mode: Mode,
    /// Paced mode: time between events of one stream.
    pub interval: Duration,
    /// Tokens of an answer when the request names no `max_tokens`.
    pub tokens: u64,
    /// The model id served.
    pub model: String,
    /// `max_model_len` reported by `/v1/models`, tokens.
    pub max_model_len: u64,
    /// Firehose mode: bytes per write (whole events, at least one), bytes.
    pub batch_bytes: usize,
    /// Firehose mode: most events per HTTP frame (usize::MAX: only `batch_bytes` limits it).
    pub events_per_frame: usize,
    /// The chunk shape of chat answers.
    pub shape: ChunkShape,
}

/// Largest request body read, bytes: well above a 128k-token prompt (about 0.5 MB), where
/// axum's default would refuse anything over 2 MB.
pub(crate) const BODY_LIMIT: usize = 64 << 20;

/// Response header on streamed answers: the unix time (ns) at which the handler had the whole
/// request body, so a client can time its send across processes (src/bench/long.rs).
pub(crate) const READ_HEADER: &str = "x-bench-read-unix-ns";

/// Response header on chat answers: the kernel's receive time of the request's last bytes,
/// unix ns (absent without a stamp; src/bench/arrival.rs).
pub(crate) const ARRIVED_HEADER: &str = "x-bench-arrived-unix-ns";

/// Counters of the server, read by `/bench/stats` and `/metrics`.
#[derive(Debug, Default)]
struct Counts {
    requests: AtomicU64,
    active: AtomicI64,
    events: AtomicU64,
    tokens: AtomicU64,
}

struct ServerState {
    opts: ServerOptions,
    counts: Counts,
    marks: super::marks::Marks,
    templates: Mutex<HashMap<(Flavor, u64, u64), Arc<Template>>>,
}

impl ServerState {
    /// The template of one answer shape, laid out at its first request.
    fn template(&self, flavor: Flavor, prompt: u64, tokens: u64) -> Arc<Template> {
        let mut map = self.templates.lock().unwrap_or_else(|e| e.into_inner());
        let n = map.len() as u64;
        let t = map.entry((flavor, prompt, tokens));
        t.or_insert_with(|| Arc::new(self.build(flavor, prompt, tokens, n))).clone()
    }

    /// The events of one answer shape; `n`: how many shapes were laid out before it.
    fn build(&self, flavor: Flavor, prompt: u64, tokens: u64, n: u64) -> Template {
        let model = &self.opts.model;
        match (flavor, self.opts.shape) {
            (Flavor::Chat, ChunkShape::Vllm) => {
                let now = super::sysinfo::unix_ns();
                let id = super::shape::request_id(now ^ n);
                super::shape::vllm_chat(model, prompt, tokens, &id, now / 1_000_000_000)
            }
            _ => Template::build(flavor, model, prompt, tokens),
        }
    }
}

/// One active stream: counted while its body lives.
struct Active(Arc<ServerState>);

impl Active {
    fn new(st: Arc<ServerState>) -> Self {
        st.counts.requests.fetch_add(1, Ordering::Relaxed);
        st.counts.active.fetch_add(1, Ordering::Relaxed);
        Self(st)
    }

    /// A frame of `events` events, `tokens` of them tokens, went out at `now_ns` (unix).
    fn sent(&self, events: usize, tokens: usize, now_ns: u64) {
        self.0.counts.events.fetch_add(events as u64, Ordering::Relaxed);
        self.0.counts.tokens.fetch_add(tokens as u64, Ordering::Relaxed);
        self.0.marks.sent(tokens, now_ns);
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.counts.active.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A running server.
pub(crate) struct BenchServer {
    /// The address it listens on.
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl BenchServer {
    /// Binds (backlog 4,096, so thousands of streams can connect at once) and serves on the
    /// current runtime; requests are stamped with their arrival (src/bench/arrival.rs).
    pub(crate) async fn start(opts: ServerOptions) -> anyhow::Result<Self> {
        let listener = StampedListener::bind(opts.addr, 4096)?;
        let addr = listener.local_socket_addr()?;
        let state = Arc::new(ServerState {
            opts,
            counts: Counts::default(),
            marks: super::marks::Marks::default(),
            templates: Mutex::default(),
        });
        let router = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/v1/completions", post(completions))
            .route("/v1/models", get(models))
            .route("/tokenize", post(tokenize))
            .route("/metrics", get(metrics))
            .route("/bench/stats", get(stats))
            .route("/bench/mark", post(mark))
            .route("/bench/window", get(window))
            .route("/health", get(|| async { "ok" }))
            .layer(axum::extract::DefaultBodyLimit::max(BODY_LIMIT))
            .with_state(state);
        let service = router.into_make_service_with_connect_info::<Arrival>();
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, service).await {
                crate::err_line!("bench-server: stopped: {e}");
            }
        });
        Ok(Self { addr, task })
    }

    /// Stops serving.
    pub(crate) fn shutdown(self) {
        self.task.abort();
    }
}

/// Prompt tokens of a request: a quarter of its prompt's bytes (`prompt`, or the messages'
/// contents), at least one.
fn prompt_tokens(v: &Value) -> u64 {
    let text_len = match (v.get("prompt"), v.get("messages")) {
        (Some(Value::String(p)), _) => p.len(),
        (_, Some(Value::Array(ms))) => {
            ms.iter().filter_map(|m| m.get("content").and_then(Value::as_str)).map(str::len).sum()
        }
        _ => 0,
    };
    (text_len as u64 / 4).max(1)
}

async fn chat(State(st): State<Arc<ServerState>>, ConnectInfo(arr): ConnectInfo<Arrival>, body: Bytes) -> Response {
    let times = RequestTimes::now(&arr);
    let mut resp = answer(st, Flavor::Chat, &body, times);
    resp.headers_mut().insert(READ_HEADER, HeaderValue::from(times.handler_ns));
    if let Some(a) = times.arrived_ns {
        resp.headers_mut().insert(ARRIVED_HEADER, HeaderValue::from(a));
    }
    resp
}

async fn completions(
    State(st): State<Arc<ServerState>>,
    ConnectInfo(arr): ConnectInfo<Arrival>,
    body: Bytes,
) -> Response {
    answer(st, Flavor::Completion, &body, RequestTimes::now(&arr))
}

/// The answer to a request that arrived and reached its handler at `times`.
fn answer(st: Arc<ServerState>, flavor: Flavor, body: &[u8], times: RequestTimes) -> Response {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return (StatusCode::BAD_REQUEST, "bench-server: the body is not JSON\n").into_response();
    };
    let prompt = prompt_tokens(&v);
    let tokens = v.get("max_tokens").or_else(|| v.get("max_completion_tokens")).and_then(Value::as_u64);
    let tokens = tokens.unwrap_or(st.opts.tokens);
    if v.get("stream").and_then(Value::as_bool) != Some(true) {
        return whole(&st.opts.model, flavor, prompt, tokens);
    }
    let template = st.template(flavor, prompt, tokens);
    let active = Active::new(st.clone());
    let body = match st.opts.mode {
        Mode::Firehose => {
            let frame = (st.opts.batch_bytes, st.opts.events_per_frame);
            Body::from_stream(firehose(template, active, frame))
        }
        Mode::Paced => Body::from_stream(paced(template, active, st.opts.interval, times)),
    };
    let mut resp = Response::new(body);
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    resp.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

/// A non-streaming answer (the tool's usage probes).
fn whole(model: &str, flavor: Flavor, prompt: u64, tokens: u64) -> Response {
    let text = " tok".repeat(tokens.min(4096) as usize);
    let usage = json!({"prompt_tokens": prompt, "completion_tokens": tokens, "total_tokens": prompt + tokens});
    let v = match flavor {
        Flavor::Chat => json!({"id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}],
            "usage": usage}),
        Flavor::Completion => json!({"id": "cmpl-bench", "object": "text_completion", "created": 0, "model": model,
            "choices": [{"index": 0, "text": text, "finish_reason": "length"}], "usage": usage}),
    };
    axum::Json(v).into_response()
}

/// The firehose body: frames of at most `frame.1` events and about `frame.0` bytes.
fn firehose(t: Arc<Template>, active: Active, frame: (usize, usize)) -> impl Stream<Item = Result<Bytes, Infallible>> {
    stream::unfold((t, 0usize, active), move |(t, from, active)| async move {
        if from >= t.events() {
            return None;
        }
        let to = t.batch_end(from, frame.0, frame.1);
        let now = super::sysinfo::unix_ns();
        let bytes = t.stamped(from, to, now);
        active.sent(to - from, t.tokens_in(from, to), now);
        Some((Ok(bytes), (t, to, active)))
    })
}

/// The paced body; `times`: when the request arrived and its handler had it, for its first
/// token's server-side time to first token.
fn paced(
    t: Arc<Template>,
    active: Active,
    interval: Duration,
    times: RequestTimes,
) -> impl Stream<Item = Result<Bytes, Infallible>> {
    let start = Instant::now();
    stream::unfold((t, 0usize, active), move |(t, from, active)| async move {
        if from >= t.events() {
            return None;
        }
        let due = start + interval.saturating_mul(from.saturating_sub(t.lead) as u32);
        tokio::time::sleep_until(due).await;
        // A role chunk goes out with the first token, the last token with the final usage
        // chunk and `[DONE]`.
        let last_token = t.events().saturating_sub(3);
        let to = if from.max(t.lead) >= last_token { t.events() } else { from.max(t.lead) + 1 };
        let now = super::sysinfo::unix_ns();
        let marks = &active.0.marks;
        marks.late(Instant::now().saturating_duration_since(due).as_nanos() as u64);
        if from == 0 {
            marks.first_token(now, times);
        }
        let bytes = t.stamped(from, to, now);
        active.sent(to - from, t.tokens_in(from, to), now);
        Some((Ok(bytes), (t, to, active)))
    })
}

async fn models(State(st): State<Arc<ServerState>>) -> Response {
    let m = &st.opts.model;
    axum::Json(json!({"object": "list", "data": [{"id": m, "object": "model", "created": 0, "owned_by": "bench",
        "root": m, "max_model_len": st.opts.max_model_len}]}))
    .into_response()
}

async fn tokenize(State(st): State<Arc<ServerState>>, body: Bytes) -> Response {
    let Ok(v) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "bench-server: the body is not JSON\n").into_response();
    };
    axum::Json(json!({"count": prompt_tokens(&v), "max_model_len": st.opts.max_model_len, "tokens": []}))
        .into_response()
}

/// The figures of `/bench/stats`.
fn stats_json(st: &ServerState) -> Value {
    let c = &st.counts;
    json!({
        "cpu_ns": super::sysinfo::process_cpu().as_nanos() as u64,
        "requests": c.requests.load(Ordering::Relaxed),
        "active": c.active.load(Ordering::Relaxed),
        "events": c.events.load(Ordering::Relaxed),
        "tokens": c.tokens.load(Ordering::Relaxed),
        "mode": st.opts.mode,
        "shape": st.opts.shape,
        "events_per_frame": (st.opts.events_per_frame != usize::MAX).then_some(st.opts.events_per_frame),
        "interval_us": st.opts.interval.as_micros() as u64,
    })
}

async fn stats(State(st): State<Arc<ServerState>>) -> Response {
    axum::Json(stats_json(&st)).into_response()
}

async fn mark(State(st): State<Arc<ServerState>>) -> Response {
    st.marks.mark();
    (StatusCode::OK, "marked\n").into_response()
}

async fn window(State(st): State<Arc<ServerState>>) -> Response {
    axum::Json(st.marks.figures()).into_response()
}

async fn metrics(State(st): State<Arc<ServerState>>) -> Response {
    let c = &st.counts;
    let m = &st.opts.model;
    let text = format!(
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{{model_name=\"{m}\"}} {}\n\
         # TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{{model_name=\"{m}\"}} 0\n\
         # TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{{model_name=\"{m}\"}} 0\n\
         # TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{{model_name=\"{m}\"}} {}\n\
         # TYPE bench_server_cpu_seconds_total counter\nbench_server_cpu_seconds_total {}\n",
        c.active.load(Ordering::Relaxed).max(0),
        c.tokens.load(Ordering::Relaxed),
        super::sysinfo::process_cpu().as_secs_f64(),
    );
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}
