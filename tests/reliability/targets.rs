//! Reliability, bad targets (issue 10 part J): servers of the test's own that go silent after
//! the headers or never answer, answer HTML, gzip their event stream or refuse the key, plus
//! the simulator without metrics; every one gets a named error kind and the right cell status.
//! In process on tokio's paused clock where the target allows, on loopback where the transport
//! itself is under test (gzip).

use crate::common::{config, inproc_cluster, validate};
use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use futures_util::StreamExt;
use llm_decode_bench::cell::control::RunnerEvent;
use llm_decode_bench::config::RunConfig;
use llm_decode_bench::load::backend::HttpBackend;
use llm_decode_bench::load::live::LiveCounters;
use llm_decode_bench::load::request::ApiKey;
use llm_decode_bench::load::sample::{ErrorKind, Outcome, RequestSample};
use llm_decode_bench::load::stream::{StreamSpec, run_stream};
use llm_decode_bench::report::json::{DecodeCell, SessionReport};
use llm_decode_bench::report::status::{AttemptStatus, CellOutcome};
use llm_decode_bench::session::start_with;
use llm_decode_bench::sim::inproc::InProcBackend;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Longest a session of these tests may take, in (paused) virtual time.
const LIMIT: Duration = Duration::from_secs(1200);
const HOST: &str = "target.inproc";

/// A target whose discovery and tokenizer work (model `m`, context 4096) and whose chat
/// completions `chat` answers.
fn target(chat: axum::routing::MethodRouter) -> Router {
    let models = || async { axum::Json(json!({"data": [{"id": "m", "max_model_len": 4096}]})) };
    let tokenize = |body: Bytes| async move {
        // Long enough a body is a prompt of that many bytes: count a token per 4 bytes.
        axum::Json(json!({"count": 4 + body.len() / 4, "max_model_len": 4096}))
    };
    Router::new()
        .route("/v1/models", get(models))
        .route("/tokenize", post(tokenize))
        .route("/v1/chat/completions", chat)
}

fn backend(router: Router) -> Arc<InProcBackend> {
    let mut b = InProcBackend::default();
    b.serve(HOST, router);
    Arc::new(b)
}

/// A decode session config against the in-process target, without metrics.
fn cfg(out: &Path, ctx: Vec<u64>, conc: Vec<u32>) -> RunConfig {
    let mut c = config(&format!("http://{HOST}"), "http://unused.inproc/metrics", out, ctx, conc);
    c.no_metrics = true;
    c.metrics.clear();
    c
}

/// Keeps the paused clock stepping in small steps: the report is written on a thread of its
/// own, and while the runtime waits for it, tokio advances the paused clock to the next timer
/// at once. With a 1 ms timer always pending, [`LIMIT`] of virtual time takes over a million
/// such idle steps (seconds of real time), so a slow disk cannot run a test out of time.
fn tick() {
    tokio::spawn(async {
        loop {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
}

/// Runs the session to its end; the report and every log line it emitted.
async fn run(cfg: RunConfig, backend: Arc<InProcBackend>) -> (SessionReport, Vec<String>) {
    tick();
    let mut h = start_with(cfg, backend).await.expect("preflight passes");
    let report = tokio::time::timeout(LIMIT, h.join).await.expect("the session ends").expect("runner");
    let mut logs = Vec::new();
    while let Ok(ev) = h.events.try_recv() {
        if let RunnerEvent::Log(l) = ev {
            logs.push(l);
        }
    }
    (report, logs)
}

fn cells(r: &SessionReport) -> &[DecodeCell] {
    &r.decode.as_ref().expect("decode section").cells
}

/// A 200 event-stream answer whose body never sends a byte.
async fn silent_stream() -> Response {
    let body = axum::body::Body::from_stream(futures_util::stream::pending::<Result<Bytes, std::io::Error>>());
    ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
}

#[tokio::test(start_paused = true)]
async fn a_server_silent_after_its_headers_errors_the_cell_with_first_token_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    // The default first-token timeout (no flag): 120 s for an empty prompt.
    let (report, logs) = run(cfg(&out, vec![0], vec![1, 2]), backend(target(post(silent_stream)))).await;
    let file = validate(&out);
    assert_eq!(file.decode, report.decode);
    for c in cells(&report) {
        assert_eq!(c.status, CellOutcome::Errored, "{}: {:?}", c.ctx_label, c.status);
        let a = c.attempts.last().expect("an attempt");
        assert_eq!(a.status, AttemptStatus::Errored);
        assert_eq!(a.errors.get(&ErrorKind::FirstTokenTimeout), Some(&u64::from(c.conc)), "{:?}", a.errors);
        let example = &a.error_examples[&ErrorKind::FirstTokenTimeout];
        assert!(example.starts_with("no first token after 120."), "{example}");
        assert_eq!(a.window_s, 0.0, "no window opens on a server that produced nothing");
    }
    let said = logs.iter().find(|l| l.contains("no first token after 20 s; waiting up to 120 s"));
    assert!(said.is_some(), "the warmup says what it waits for: {logs:?}");
}

#[tokio::test(start_paused = true)]
async fn a_server_that_never_answers_times_out_the_same_way() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let never = post(std::future::pending::<&'static str>);
    let mut c = cfg(&out, vec![0], vec![1]);
    c.first_token_timeout = Some(Duration::from_secs(5));
    let (report, _) = run(c, backend(target(never))).await;
    let a = cells(&report)[0].attempts.last().expect("an attempt").clone();
    assert_eq!(cells(&report)[0].status, CellOutcome::Errored);
    assert_eq!(a.errors.get(&ErrorKind::FirstTokenTimeout), Some(&1), "{:?}", a.errors);
    assert!(a.error_examples[&ErrorKind::FirstTokenTimeout].contains("after 5.0 s"));
}

/// One streamed request to `url` with a first-token timeout of 1 s.
async fn one_stream(
    backend: &dyn llm_decode_bench::load::backend::Backend,
    url: &str,
    queued_waits: bool,
    live: &LiveCounters,
) -> RequestSample {
    let headers = reqwest::header::HeaderMap::new();
    let spec = StreamSpec {
        url,
        headers: &headers,
        served_by: &[],
        first_token_timeout: Some(Duration::from_secs(1)),
        queued_waits,
        idle_timeout: Duration::from_secs(5),
        expected_chunks: 8,
    };
    let body = Bytes::from_static(b"{}");
    run_stream(backend, &spec, body, RequestSample::new(0, Instant::now()), &CancellationToken::new(), live).await
}

#[tokio::test(start_paused = true)]
async fn a_request_queued_behind_flowing_streams_waits_past_its_first_token_timeout() {
    let b = backend(target(post(silent_stream)));
    let url = format!("http://{HOST}/v1/chat/completions");
    let live = Arc::new(LiveCounters::default());
    // Other streams of the attempt receive a token every 500 ms for 10 s, then stop.
    let feeder = {
        let live = live.clone();
        tokio::spawn(async move {
            for _ in 0..20 {
                tokio::time::sleep(Duration::from_millis(500)).await;
                live.tokens.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let t0 = Instant::now();
    let queued = one_stream(&*b, &url, true, &live).await;
    let waited = t0.elapsed();
    assert_eq!(queued.error_kind(), Some(ErrorKind::FirstTokenTimeout));
    assert!(waited >= Duration::from_secs(10) && waited <= Duration::from_secs(12), "waited {waited:?}");
    feeder.await.unwrap();
    // Without `queued_waits` the same request fails at its timeout.
    let t0 = Instant::now();
    let alone = one_stream(&*b, &url, false, &live).await;
    assert_eq!(alone.error_kind(), Some(ErrorKind::FirstTokenTimeout));
    assert_eq!(t0.elapsed(), Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn an_html_answer_is_not_an_event_stream() {
    let html = post(|| async {
        ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], "<!DOCTYPE html><html><body>Welcome</body></html>")
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let (report, _) = run(cfg(&out, vec![0], vec![2]), backend(target(html))).await;
    let c = &cells(&report)[0];
    let a = c.attempts.last().expect("an attempt");
    assert_eq!(c.status, CellOutcome::Errored);
    assert_eq!(a.errors.keys().copied().collect::<Vec<_>>(), [ErrorKind::NotEventStream], "{:?}", a.errors);
    assert_eq!(a.errors[&ErrorKind::NotEventStream], 2, "one request per stream: retrying cannot help");
    let ex = &a.error_examples[&ErrorKind::NotEventStream];
    assert_eq!(ex, "not an event stream (content-type text/html; charset=utf-8)");
}

/// An event stream of `n` tokens with continuous usage and `[DONE]`.
fn sse_body(n: u64) -> String {
    let mut s = String::new();
    for i in 1..=n {
        let chunk = json!({"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": if i == n { Some("length") } else { None }}],
            "usage": {"prompt_tokens": 3, "completion_tokens": i}});
        s.push_str(&format!("data: {chunk}\n\n"));
    }
    s + "data: [DONE]\n\n"
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[tokio::test]
async fn a_gzip_encoded_event_stream_is_decoded_and_counted() {
    let seen = Arc::new(std::sync::Mutex::new(None::<String>));
    let seen_in = seen.clone();
    let gz = move |h: HeaderMap| {
        let seen = seen_in.clone();
        async move {
            *seen.lock().unwrap() = h.get(header::ACCEPT_ENCODING).and_then(|v| v.to_str().ok()).map(str::to_string);
            let headers = [(header::CONTENT_TYPE, "text/event-stream"), (header::CONTENT_ENCODING, "gzip")];
            (headers, gzip(sse_body(16).as_bytes())).into_response()
        }
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, target(post(gz))).await });
    let client = llm_decode_bench::net::client_builder().no_proxy().build().unwrap();
    let http = HttpBackend::new(client);
    let key = Some(ApiKey::new("k".to_string()));
    let api = llm_decode_bench::load::client::ApiClient::new(Arc::new(http.clone()), &format!("http://{addr}"), key);
    let headers = api.headers();
    let spec = StreamSpec {
        url: &api.url("/v1/chat/completions"),
        headers: &headers,
        served_by: &[],
        first_token_timeout: Some(Duration::from_secs(10)),
        queued_waits: false,
        idle_timeout: Duration::from_secs(10),
        expected_chunks: 16,
    };
    let live = LiveCounters::default();
    let sample = RequestSample::new(0, Instant::now());
    let s = run_stream(&http, &spec, Bytes::from_static(b"{}"), sample, &CancellationToken::new(), &live).await;
    assert!(matches!(s.outcome, Outcome::Completed(_)), "{:?}", s.outcome);
    assert_eq!((s.output_tokens, s.content_chunks), (16, 16));
    assert_eq!(seen.lock().unwrap().as_deref(), Some("identity"), "the load asks for no compression");
}

#[tokio::test(start_paused = true)]
async fn a_refused_key_stops_the_session_at_once() {
    const KEY: &str = "sk-test-0123456789";
    let calls = Arc::new(AtomicU64::new(0));
    let counted = calls.clone();
    let refuse = post(move |h: HeaderMap| {
        let n = counted.clone();
        async move {
            n.fetch_add(1, Ordering::SeqCst);
            let auth = h.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
            let body = json!({"error": {"message": format!("Incorrect API key provided: {auth}"), "type": "invalid_request_error"}});
            (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response()
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut c = cfg(&out, vec![0, 1024], vec![4, 8]);
    c.api_key = Some(ApiKey::new(KEY.to_string()));
    let (report, logs) = run(c, backend(target(refuse))).await;
    let cs = cells(&report);
    assert_eq!(cs[0].status, CellOutcome::Errored);
    let a = cs[0].attempts.last().expect("an attempt");
    assert_eq!(a.errors.get(&ErrorKind::Unauthorized), Some(&4), "{:?}", a.errors);
    assert!(cs[1..].iter().all(|c| c.attempts.is_empty() && c.status == CellOutcome::Pending), "nothing else ran");
    assert_eq!(calls.load(Ordering::SeqCst), 4, "one refused request per stream, no retries");
    let line = report.warnings.iter().find(|w| w.contains("refused the credentials")).expect("the stop line");
    assert!(line.contains("HTTP 401") && !line.contains(KEY), "{line}");
    assert!(logs.iter().any(|l| l.strip_prefix("warning: ").unwrap_or(l) == line), "said as it happened: {logs:?}");
    assert!(report.actions.iter().any(|x| x.action == "halt"), "{:?}", report.actions);
    assert_eq!(report.halted.as_deref(), Some(line.as_str()), "the report says why it halted");
    assert!(!report.complete);
}

#[tokio::test(start_paused = true)]
async fn without_metrics_the_kv_fit_rule_is_off() {
    let cluster = inproc_cluster(1, 1.0, |_| {});
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let r = &cluster.replicas()[0];
    let mut c = config(&r.url, &r.metrics_url, &out, vec![0, 1024], vec![1]);
    (c.no_metrics, c.window) = (true, Duration::from_secs(2));
    tick();
    let h = start_with(c, cluster.backend()).await.expect("preflight passes");
    let report = tokio::time::timeout(LIMIT, h.join).await.expect("the session ends").expect("runner");
    assert_eq!(report.target.kv_capacity_tokens, None, "unknown, not 0");
    for c in cells(&report) {
        assert_eq!(c.status, CellOutcome::Measured, "{} skipped: {:?}", c.ctx_label, c.timeout_reason);
    }
}

#[tokio::test(start_paused = true)]
async fn a_context_over_max_model_len_is_said_at_preflight_and_skipped() {
    let biggest = Arc::new(AtomicU64::new(0));
    let seen = biggest.clone();
    let tokenize = post(move |body: Bytes| {
        let seen = seen.clone();
        async move {
            seen.fetch_max(body.len() as u64, Ordering::SeqCst);
            axum::Json(json!({"count": 4 + body.len() / 4, "max_model_len": 4096}))
        }
    });
    let stream = post(|| async {
        // One event per 10 ms, so the paused clock moves while the streams run.
        let events: Vec<String> = sse_body(4).split_inclusive("\n\n").map(str::to_string).collect();
        let paced = futures_util::stream::iter(events).then(|e| async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            Ok::<_, std::io::Error>(Bytes::from(e))
        });
        ([(header::CONTENT_TYPE, "text/event-stream")], axum::body::Body::from_stream(paced))
    });
    let models = || async { axum::Json(json!({"data": [{"id": "m", "max_model_len": 4096}]})) };
    let router = Router::new()
        .route("/v1/models", get(models))
        .route("/tokenize", tokenize)
        .route("/v1/chat/completions", stream);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut c = cfg(&out, vec![0, 1_000_000_000], vec![1]);
    c.window = Duration::from_secs(1);
    let (report, logs) = run(c, backend(router)).await;
    let line = "preflight: --ctx 1000000000 (deficit 999996032 tokens) leaves no room for the output under the model's max_model_len 4096: those cells are skipped";
    assert!(report.warnings.iter().any(|w| w == line), "{:?}", report.warnings);
    assert!(logs.iter().any(|l| l.strip_prefix("warning: ").unwrap_or(l) == line), "{logs:?}");
    let big = &cells(&report)[1];
    assert_eq!(big.status, CellOutcome::Skipped);
    assert!(
        big.timeout_reason
            .as_deref()
            .is_some_and(|r| r.contains("exceed max_model_len 4096; deficit 999996032 tokens")),
        "{big:?}"
    );
    assert!(biggest.load(Ordering::SeqCst) < 1 << 20, "the huge prompt is never built or counted");
    let _: Value = serde_json::to_value(&report).unwrap();
}

/// Runs the binary with `args`; its exit code and stderr.
fn binary(args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_llm-decode-bench"))
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("binary runs");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn one_line(stderr: &str) -> &str {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line: {stderr:?}");
    lines[0]
}

#[test]
fn bad_flags_are_one_line_and_a_failure() {
    let (code, err) = binary(&["--headless", "--demo-window", "0s"]);
    // A usage error: exit 2 (src/cmd/exit.rs).
    assert_eq!((code, one_line(&err)), (Some(2), "error: --demo-window must be longer than 0"));
    let (code, err) = binary(&["sim", "--port", "65535", "--replicas", "2"]);
    assert_eq!(code, Some(2), "a usage error of `sim` too");
    let line = one_line(&err);
    assert!(line.contains("--port 65535 with --replicas 2") && line.contains("65535"), "{line}");
    assert!(!line.contains("integral"), "{line}");
    let (code, err) = binary(&["run", "--base-url", "http://127.0.0.1:9", "--first-token-timeout", "0s"]);
    assert_ne!(code, Some(0));
    assert!(err.lines().next().unwrap_or_default().contains("--first-token-timeout must be longer than 0"), "{err}");
}

/// Serves `router` on a loopback port on its own thread; the base URL.
fn serve_in_thread(router: Router) -> String {
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = std_listener.local_addr().unwrap();
    std_listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(std_listener).unwrap();
            let _ = axum::serve(listener, router).await;
        });
    });
    format!("http://{addr}")
}

#[test]
fn preflight_names_an_html_model_list_and_a_refused_key() {
    let html = Router::new().route(
        "/v1/models",
        get(|| async { ([(header::CONTENT_TYPE, "text/html")], "<!DOCTYPE html>\n<html>login</html>") }),
    );
    let base = serve_in_thread(html);
    let (code, err) = binary(&["run", "--headless", "--no-metrics", "--base-url", &base]);
    assert_eq!(code, Some(3), "a preflight failure (src/cmd/exit.rs)");
    let line = one_line(&err);
    assert!(line.contains("/v1/models answered something unexpected: not JSON (content-type text/html)"), "{line}");
    assert!(line.contains("`<!DOCTYPE html> <html>login</html>`") && !line.contains("line 1 column"), "{line}");

    let refuse = Router::new()
        .route("/v1/models", get(|| async { (StatusCode::UNAUTHORIZED, "Incorrect API key provided: Bearer sk-x") }));
    let base = serve_in_thread(refuse);
    let (code, err) = binary(&["run", "--headless", "--no-metrics", "--base-url", &base, "--api-key", "sk-x"]);
    assert_eq!(code, Some(3), "a preflight failure (src/cmd/exit.rs)");
    let line = one_line(&err);
    assert!(
        line.contains("refused the credentials (HTTP 401); the key given"),
        "the hint names the key that was sent: {line}"
    );
    assert!(!line.contains("sk-x"), "{line}");

    // No key sent: the hint says so. An HTML 404 page is named by its title, an empty one said
    // to be empty, and a 404 points at --base-url.
    let (code, err) = binary(&["run", "--headless", "--no-metrics", "--base-url", &base]);
    assert_eq!(code, Some(3));
    assert!(one_line(&err).contains("(HTTP 401); no key was sent"), "{err}");
    let page = "<!DOCTYPE html><html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>";
    let missing = Router::new()
        .route(
            "/v1/models",
            get(move || async move { (StatusCode::NOT_FOUND, [(header::CONTENT_TYPE, "text/html")], page) }),
        )
        .route("/empty/v1/models", get(|| async { StatusCode::NOT_FOUND }));
    let base = serve_in_thread(missing);
    let (code, err) = binary(&["run", "--headless", "--no-metrics", "--base-url", &base]);
    let line = one_line(&err);
    assert_eq!(code, Some(3), "{line}");
    assert!(line.contains("HTTP 404: an HTML page titled \"404 Not Found\"") && !line.contains("<h1>"), "{line}");
    assert!(line.contains("check --base-url"), "{line}");
    let (_, err) = binary(&["run", "--headless", "--no-metrics", "--base-url", &format!("{base}/empty")]);
    assert!(one_line(&err).contains("HTTP 404: an empty body; check --base-url"), "{err}");
}

#[test]
fn a_silent_server_is_named_while_preflight_waits() {
    // Accepts connections and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let holder = std::thread::spawn(move || listener.incoming().take(4).map(|c| c.ok()).collect::<Vec<_>>());
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_llm-decode-bench"))
        .args(["run", "--headless", "--no-metrics", "--base-url", &base])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("binary runs");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let line = rx.recv_timeout(Duration::from_secs(20));
    let _ = child.kill();
    let _ = child.wait();
    drop(holder);
    let line = line.expect("a line while waiting");
    assert_eq!(line, format!("preflight: waiting for {base}/v1/models to answer (up to 60 s)"));
}
