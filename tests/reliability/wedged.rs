//! Issue 21 item 2, a wedged target: a server that lists its model and never answers a POST
//! (it reads the request and holds the connection open). Preflight names every wait and ends
//! at the first-token deadline of the calibration probe; a session of cells that cannot fail
//! otherwise stops after two cells in a row failed every request alike, its report saved; the
//! ETA counts the wait for a first token. The routing experiment's preflight is bounded and
//! named the same way. The binary against a loopback server of the test's
//! own, and the session in process on tokio's paused clock.

use crate::common::{bin, config, output, validate};
use axum::Router;
use axum::routing::{get, post};
use llm_decode_bench::cmd::headless::Printer;
use llm_decode_bench::cmd::run::drive;
use llm_decode_bench::report::status::CellOutcome;
use llm_decode_bench::session::start_with;
use llm_decode_bench::signal::Signals;
use llm_decode_bench::sim::inproc::InProcBackend;
use serde_json::json;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Longest a run of the binary against the wedged server may take here (its deadlines are 2 s).
const BOUND: Duration = Duration::from_secs(40);

/// Request lines the wedged server received, in order.
type Seen = Arc<Mutex<Vec<String>>>;

/// Reads one request head; its request line (None when the peer closed first).
fn request_line(conn: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if conn.read(&mut byte).ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    String::from_utf8_lossy(&head).lines().next().map(str::to_string)
}

/// One connection: `GET /v1/models` gets a model list, another GET a 404 (both then closed);
/// a POST is read and held open, unanswered, until the client gives up.
fn serve(mut conn: TcpStream, seen: Seen) {
    let Some(line) = request_line(&mut conn) else { return };
    seen.lock().unwrap().push(line.clone());
    let answer = |status: &str, body: &str| {
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    if line.starts_with("GET /v1/models ") {
        let body = json!({"data": [{"id": "m", "max_model_len": 8192}]}).to_string();
        let _ = conn.write_all(answer("200 OK", &body).as_bytes());
    } else if line.starts_with("GET ") {
        let _ = conn.write_all(answer("404 Not Found", "{}").as_bytes());
    } else {
        let mut sink = [0u8; 4096];
        while conn.read(&mut sink).is_ok_and(|n| n > 0) {}
    }
}

/// The wedged server on a loopback port: its base URL and the request lines it saw.
fn wedged() -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Seen::default();
    let log = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().map_while(Result::ok) {
            let log = log.clone();
            std::thread::spawn(move || serve(conn, log));
        }
    });
    (base, seen)
}

/// Runs `run --headless` against `base` with `args`: exit code, stderr, and how long it took.
async fn run(base: &str, args: &[&str]) -> (Option<i32>, String, Duration) {
    let mut cmd = bin();
    cmd.args(["run", "--headless", "--no-metrics", "--base-url", base, "--first-token-timeout", "2s"]).args(args);
    let t0 = Instant::now();
    let out = output(cmd).await;
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned(), t0.elapsed())
}

#[tokio::test]
async fn preflight_names_each_wait_and_fails_at_the_calibration_probes_deadline() {
    let (base, seen) = wedged();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let (code, err, took) = run(&base, &["--ctx", "4k", "--conc", "1", "--out", out.to_str().unwrap()]).await;
    assert!(took < BOUND, "took {took:?}:\n{err}");
    assert_eq!(code, Some(3), "a preflight failure:\n{err}");
    let lines: Vec<&str> = err.lines().collect();
    let tokenize = format!("POST {base}/tokenize (token count of a short prompt)");
    let probe = format!("POST {base}/v1/chat/completions (calibration probe of ~4095 prompt tokens)");
    let reuse = format!("POST {base}/v1/chat/completions (connection-reuse probe)");
    // The session's own preflight (the reuse probe, which does not fail it) comes before the
    // experiments' preparation, as for routing below.
    assert_eq!(
        lines,
        [
            format!("preflight: waiting for {reuse} to answer (up to 2 s)"),
            format!("preflight: waiting for {tokenize} to answer (up to 2 s)"),
            format!(
                "preflight: no answer from {tokenize} within 2 s; counting prompt tokens with one-token probe requests instead"
            ),
            format!("preflight: waiting for {probe} to answer (up to 2 s)"),
            format!(
                "error: preflight: cannot calibrate a 4096-token prompt: no answer from {probe} within 2 s; --first-token-timeout sets this deadline"
            ),
        ]
    );
    let posts = seen.lock().unwrap().iter().filter(|l| l.starts_with("POST ")).count();
    assert_eq!(posts, 3, "the reuse probe, one /tokenize, one probe, then no more: {:?}", seen.lock().unwrap());
    assert!(!out.exists(), "no load was sent, no report written");
}

#[tokio::test]
async fn routing_preflight_names_each_wait_and_fails_at_the_probes_deadline() {
    let (base, seen) = wedged();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let replica = format!("r0={base}/metrics");
    let mut cmd = bin();
    cmd.args(["run", "--headless", "--plan", "routing", "--base-url", &base, "--metrics-url", &replica]);
    // The probe's length follows the routing prompts' seed.
    cmd.args(["--seed", "101", "--first-token-timeout", "2s", "--out", out.to_str().unwrap()]);
    let t0 = Instant::now();
    let o = output(cmd).await;
    let (code, err, took) = (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned(), t0.elapsed());
    assert!(took < BOUND, "took {took:?}:\n{err}");
    assert_eq!(code, Some(3), "a preflight failure:\n{err}");
    let tokenize = format!("POST {base}/tokenize (token count of a short prompt)");
    let probe = format!("POST {base}/v1/chat/completions (calibration probe of ~402 prompt tokens)");
    let lines: Vec<&str> = err.lines().skip_while(|l| !l.contains("/tokenize")).collect();
    assert_eq!(
        lines,
        [
            format!("preflight: waiting for {tokenize} to answer (up to 2 s)"),
            format!("preflight: no answer from {tokenize} within 2 s; trying the next server"),
            format!("preflight: waiting for {tokenize} to answer (up to 2 s)"),
            format!(
                "preflight: no answer from {tokenize} within 2 s; counting prompt tokens with one-token probe requests instead"
            ),
            format!("preflight: waiting for {probe} to answer (up to 2 s)"),
            format!(
                "error: preflight: cannot size the routing prompts: no answer from {probe} within 2 s; --first-token-timeout sets this deadline"
            ),
        ],
        "the gateway's /tokenize, the replica's, then a probe, each named:\n{err}"
    );
    let posts = seen.lock().unwrap().iter().filter(|l| l.starts_with("POST ")).count();
    assert_eq!(posts, 4, "the reuse probe, two /tokenize, one probe: {:?}", seen.lock().unwrap());
    assert!(!out.exists(), "no load was sent, no report written");
}

#[tokio::test]
async fn a_session_against_it_stops_after_two_cells_failing_alike() {
    let (base, _) = wedged();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let args = ["--ctx", "0", "--conc", "1,2,4,8", "--window", "1s", "--allow-errors", "--out", out.to_str().unwrap()];
    let (code, err, took) = run(&base, &args).await;
    assert!(took < BOUND, "took {took:?}:\n{err}");
    assert_eq!(code, Some(4), "a halt leaves cells unrun, which --allow-errors does not excuse:\n{err}");
    let reuse = format!(
        "preflight: waiting for POST {base}/v1/chat/completions (connection-reuse probe) to answer (up to 2 s)"
    );
    assert!(err.lines().any(|l| l == reuse), "{err}");
    assert!(err.contains("not probed: no answer to the probe within 2 s"), "{err}");
    let stop = "warning: stopping the session: 2 cells in a row failed every request with first_token_timeout: no first token after 2.0 s; the target does not serve, the cells left are not run";
    assert!(err.lines().any(|l| l.ends_with(stop)), "{err}");
    let report = validate(&out);
    assert!(!report.complete);
    let cells = &report.decode.as_ref().expect("decode").cells;
    let status: Vec<CellOutcome> = cells.iter().map(|c| c.status).collect();
    use CellOutcome::{Errored, Pending};
    assert_eq!(status, [Errored, Errored, Pending, Pending], "{err}");
    assert!(report.warnings.iter().any(|w| stop.ends_with(w.as_str())), "{:?}", report.warnings);
    assert!(report.actions.iter().any(|a| a.action == "halt"), "{:?}", report.actions);
    let why = report.halted.as_deref().expect("the report says why it halted");
    assert!(stop.ends_with(why), "{why}");
    assert!(err.lines().any(|l| l == format!("halted before the last cell ({why}): exit 4")), "{err}");
}

/// Every write of the captured printer.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `12s`, `4m10s`, `1h02m` as seconds.
fn seconds_of(s: &str) -> u64 {
    let (h, rest) = s.split_once('h').map_or((0, s), |(h, r)| (h.parse().unwrap(), r));
    let (m, rest) = rest.split_once('m').map_or((0, rest), |(m, r)| (m.parse().unwrap(), r));
    let sec = rest.strip_suffix('s').filter(|x| !x.is_empty()).map_or(0, |x| x.parse().unwrap());
    h * 3600 + m * 60 + sec
}

/// From a heartbeat `progress: cell 2/4, ETA ≥ 1m33s; …`: the position, the cells and the ETA.
fn eta_of(beat: &str) -> (u64, u64, u64) {
    let rest = beat.strip_prefix("progress: cell ").unwrap();
    let (pos, rest) = rest.split_once('/').unwrap();
    let (total, rest) = rest.split_once(", ETA ").unwrap();
    let eta = rest.split(';').next().unwrap().trim_start_matches("≥ ");
    (pos.parse().unwrap(), total.parse().unwrap(), seconds_of(eta))
}

#[tokio::test(start_paused = true)]
async fn in_process_the_session_halts_and_the_eta_counts_the_wait() {
    // Keeps the paused clock stepping while the report is written on its own thread.
    tokio::spawn(async {
        loop {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    let models = || async { axum::Json(json!({"data": [{"id": "m", "max_model_len": 4096}]})) };
    let never = || std::future::pending::<&'static str>();
    let router = Router::new().route("/v1/models", get(models)).route("/v1/chat/completions", post(never));
    let mut backend = InProcBackend::default();
    backend.serve("wedged.inproc", router);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut cfg = config("http://wedged.inproc", "http://unused.inproc/metrics", &out, vec![0], vec![1, 2, 4, 8]);
    (cfg.no_metrics, cfg.window, cfg.decode.settle, cfg.decode.warmup_timeout) =
        (true, Duration::from_secs(30), Duration::from_secs(1), Duration::from_secs(60));
    cfg.metrics.clear();
    let t0 = tokio::time::Instant::now();
    let h = start_with(cfg, Arc::new(backend)).await.expect("preflight passes: no count is needed for ctx 0");
    let capture = Capture::default();
    let printer = Printer::new(Box::new(capture.clone()), None).unwrap();
    let mut signals = Signals::new().unwrap();
    let run = tokio::time::timeout(Duration::from_secs(1200), drive(h, &mut signals, printer));
    let (report, interrupted) = run.await.expect("the session ends").expect("runs");
    // Two cells of the default first-token timeout (120 s for an empty prompt), not four.
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(300), "{took:?}");
    assert!(!interrupted && !report.complete);
    let status: Vec<CellOutcome> = report.decode.as_ref().unwrap().cells.iter().map(|c| c.status).collect();
    assert_eq!(status, [CellOutcome::Errored, CellOutcome::Errored, CellOutcome::Pending, CellOutcome::Pending]);
    let text = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    assert!(
        text.contains("stopping the session: 2 cells in a row failed every request with first_token_timeout"),
        "{text}"
    );
    // While a cell waits for its first token, its window (31 s with the settle) and every
    // later cell's are still to come: never `ETA 0s`, nor less than that.
    let beats: Vec<&str> = text.lines().filter_map(|l| l.split_once("s] ").map(|x| x.1)).collect();
    let waiting: Vec<&str> =
        beats.iter().copied().filter(|b| b.starts_with("progress: ") && b.contains(" warming: ")).collect();
    assert!(waiting.len() >= 20, "a heartbeat every 10 s of two 2-minute waits:\n{text}");
    for beat in waiting {
        let (pos, total, eta) = eta_of(beat);
        assert!(eta >= (total - pos + 1) * 31, "{beat}\n{text}");
    }
}
