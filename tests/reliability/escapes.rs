//! Issue 21 item 5, end to end: a server whose model id, error bodies, SSE error events and
//! Prometheus labels (a `pod` on its Prometheus API) carry terminal escapes (`ESC ] 0; … BEL`
//! retitles the window, `ESC [2J` clears it, `U+009B` is the one-byte CSI, `U+202E` reverses
//! what follows). Headless output, `--log-file`, the text and markdown reports and `compare`
//! show them escaped (`\x1b`, `\u{9b}`); the JSON report keeps the exact id.

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The server's hostile text: retitle, clear screen, a C1 CSI, a bidi override.
const EVIL: &str = "evil\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{202e}x";
/// How [`EVIL`] reads once escaped.
const SHOWN: &str = "evil\\x1b]0;pwned\\x07\\x1b[2J\\u{9b}31m\\u{202e}x";

async fn models() -> axum::Json<Value> {
    axum::Json(json!({"object": "list", "data": [{"id": EVIL, "max_model_len": 8192}]}))
}

async fn tokenize(axum::Json(v): axum::Json<Value>) -> axum::Json<Value> {
    let text = v.pointer("/messages/0/content").or_else(|| v.get("prompt")).and_then(Value::as_str).unwrap_or("");
    axum::Json(json!({"count": text.split_whitespace().count()}))
}

/// Preflight's one-token probe gets `[DONE]`; the load gets an SSE error event, a 400 and a
/// short stream, in turn, each quoting [`EVIL`].
async fn chat(State(calls): State<Arc<AtomicUsize>>, axum::Json(body): axum::Json<Value>) -> Response {
    let sse = |body: String| ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response();
    if body["max_tokens"] == 1 {
        return sse("data: [DONE]\n\n".into());
    }
    match calls.fetch_add(1, Ordering::Relaxed) % 3 {
        0 => sse(format!("data: {}\n\n", json!({"error": {"message": format!("refused {EVIL}"), "code": 500}}))),
        1 => {
            (StatusCode::BAD_REQUEST, axum::Json(json!({"error": {"message": format!("bad {EVIL}")}}))).into_response()
        }
        _ => {
            let chunk = |c: &str| json!({"choices": [{"index": 0, "delta": {"content": c}}]});
            sse(format!("data: {}\n\ndata: {}\n\ndata: [DONE]\n\n", chunk("a"), chunk(EVIL)))
        }
    }
}

/// The Prometheus API: one engine series of a replica whose `pod` label is [`EVIL`]; a
/// selector naming `fail` gets an API error whose text is [`EVIL`].
async fn prometheus(Query(q): Query<HashMap<String, String>>) -> Response {
    if q.get("query").is_some_and(|s| s.contains("fail")) {
        return (StatusCode::BAD_REQUEST, axum::Json(json!({"status": "error", "error": EVIL}))).into_response();
    }
    let now = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_secs_f64();
    let series = |name: &str| {
        json!({"metric": {"__name__": name, "pod": EVIL, "instance": "127.0.0.1:1", "model_name": EVIL},
               "values": [[now - 1.0, "0"], [now, "0"]]})
    };
    let result = [series("vllm:num_requests_running"), series("vllm:num_requests_waiting")];
    axum::Json(json!({"status": "success", "data": {"resultType": "matrix", "result": result}})).into_response()
}

/// Serves the hostile server on a loopback port; its base URL.
async fn serve() -> String {
    let app = Router::new()
        .route("/v1/models", get(models))
        .route("/tokenize", post(tokenize))
        .route("/v1/chat/completions", post(chat))
        .route("/api/v1/query", get(prometheus))
        .with_state(Arc::new(AtomicUsize::new(0)));
    crate::common::serve_router(app).await
}

/// Asserts `text` holds no raw escape, BEL, C1 control or bidi override.
fn assert_safe(what: &str, text: &str) {
    let bad = text.char_indices().find(|(_, c)| *c != '\n' && llm_decode_bench::text_safe::is_unsafe(*c));
    assert!(bad.is_none(), "{what} has a raw {bad:?}:\n{}", text.escape_debug());
}

fn utf8(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_text_reaches_no_terminal_raw_and_the_json_keeps_it() {
    let base = serve().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (out, log) = (dir.path().join("report.json"), dir.path().join("run.log"));
    let flags = ["--prometheus", &base, "--ctx", "0", "--conc", "1", "--window", "1s", "--warmup-timeout", "2s"];
    let mut args: Vec<String> = ["run", "--base-url", &base, "--headless", "--allow-errors", "--settle", "0s"]
        .iter()
        .chain(&flags)
        .map(|s| s.to_string())
        .collect();
    args.extend(["--out".into(), out.display().to_string(), "--log-file".into(), log.display().to_string()]);
    let o = crate::common::run_bin(args).await;
    let (stdout, stderr, log) = (utf8(&o.stdout), utf8(&o.stderr), read(&log));
    assert_eq!(o.status.code(), Some(0), "stderr:\n{}", stderr.escape_debug());
    for (what, text) in [("stdout", &stdout), ("stderr", &stderr), ("log file", &log)] {
        assert_safe(what, text);
    }
    assert!(stderr.contains(&format!("model {SHOWN}")) && log.contains(&format!("model {SHOWN}")), "{stderr}");
    // The JSON report keeps the server's exact strings.
    let report: Value = serde_json::from_str(&read(&out)).expect("JSON");
    assert_eq!(report.pointer("/model").and_then(Value::as_str), Some(EVIL), "{report:#}");
    assert!(read(&out).contains("\\u001b]0;pwned\\u0007"), "the error texts are kept too");
    let path = out.display().to_string();
    for format in ["text", "markdown"] {
        let o = crate::common::run_bin(vec!["report".into(), path.clone(), "--format".into(), format.into()]).await;
        assert!(o.status.success(), "report --format {format}: {}", utf8(&o.stderr));
        assert_safe(format, &utf8(&o.stdout));
        assert_safe(format, &utf8(&o.stderr));
    }
    let o = crate::common::run_bin(vec!["compare".into(), path.clone(), path.clone()]).await;
    assert_safe("compare", &utf8(&o.stdout));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preflight_error_quoting_the_server_is_escaped() {
    // The Prometheus server refuses the selector with an error text of its own.
    let base = serve().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("report.json").display().to_string();
    let args = ["run", "--base-url", &base, "--headless", "--prometheus", &base, "--replica-selector", "job=\"fail\""];
    let mut args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    args.extend(["--out".into(), out]);
    let o = crate::common::run_bin(args).await;
    let stderr = utf8(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "a failed preflight: {stderr}");
    assert!(stderr.starts_with("error: --prometheus ") && stderr.contains("pwned"), "{stderr}");
    assert_safe("stderr", &stderr);
}
