//! The hostile suite's server: raw HTTP/1 on a loopback socket of its own (tokio, on a thread
//! with its own runtime), so a case can write anything at all: a head one byte a second, a
//! head that never ends, HTTP/1.0, a gzip bomb. Every request is logged; what a case does not
//! take over is answered as a small well-behaved vLLM-like server would ([`normal`]).

use serde_json::{Value, json};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request as the server read it.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub method: String,
    pub path: String,
    /// Header names lowercased, values as sent.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// `max_tokens` of a JSON body.
    fn max_tokens(&self) -> Option<u64> {
        serde_json::from_slice::<Value>(&self.body).ok()?.get("max_tokens")?.as_u64()
    }

    /// A streamed request of the load (preflight's probes ask for one token).
    pub fn is_load(&self) -> bool {
        self.method == "POST" && self.path.ends_with("/completions") && self.max_tokens().is_some_and(|n| n > 1)
    }
}

/// What a case does with a connection whose request it read.
pub(crate) type Handler = Arc<dyn Fn(Request, TcpStream) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// A running server.
pub(crate) struct Server {
    pub base: String,
    /// Every request read, in order.
    pub seen: Arc<Mutex<Vec<Request>>>,
}

impl Server {
    /// Serves `handler` on a free loopback port.
    pub fn start(handler: Handler) -> Server {
        Self::start_on("127.0.0.1:0", handler)
    }

    /// Serves `handler` on `addr` (port 0: a free one).
    pub fn start_on(addr: &str, handler: Handler) -> Server {
        let std_listener = std::net::TcpListener::bind(addr).expect("bind");
        let addr: SocketAddr = std_listener.local_addr().unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let seen: Arc<Mutex<Vec<Request>>> = Arc::default();
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
            rt.block_on(async move { accept(TcpListener::from_std(std_listener).unwrap(), handler, log).await });
        });
        Server { base: format!("http://{addr}"), seen }
    }

    /// The requests for which `pred` holds.
    pub fn requests(&self, pred: impl Fn(&Request) -> bool) -> Vec<Request> {
        self.seen.lock().unwrap().iter().filter(|r| pred(r)).cloned().collect()
    }
}

async fn accept(listener: TcpListener, handler: Handler, log: Arc<Mutex<Vec<Request>>>) {
    while let Ok((mut sock, _)) = listener.accept().await {
        let (handler, log) = (Arc::clone(&handler), Arc::clone(&log));
        tokio::spawn(async move {
            if let Some(req) = read_request(&mut sock).await {
                log.lock().unwrap().push(req.clone());
                handler(req, sock).await;
            }
        });
    }
}

/// Reads one request head and its `content-length` body.
async fn read_request(sock: &mut TcpStream) -> Option<Request> {
    let mut buf = Vec::new();
    let mut piece = [0u8; 4096];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = sock.read(&mut piece).await.ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&piece[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split_whitespace();
    let (method, path) = (first.next()?.to_string(), first.next()?.to_string());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len = headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = buf[end + 4..].to_vec();
    while body.len() < len {
        let n = sock.read(&mut piece).await.ok().filter(|n| *n > 0)?;
        body.extend_from_slice(&piece[..n]);
    }
    Some(Request { method, path, headers, body })
}

/// A handler from an async function of the request and the socket.
pub(crate) fn handler<F, Fut>(f: F) -> Handler
where
    F: Fn(Request, TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    Arc::new(move |req, sock| Box::pin(f(req, sock)))
}

/// A handler that takes over the first `n` load requests with `hostile` and answers everything
/// else with [`normal`]; the count of load requests it has seen.
pub(crate) fn first_loads<F, Fut>(n: u64, hostile: F) -> (Handler, Arc<AtomicU64>)
where
    F: Fn(Request, TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let loads = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&loads);
    let hostile = Arc::new(hostile);
    let h = handler(move |req, sock| {
        let (hostile, counted) = (Arc::clone(&hostile), Arc::clone(&counted));
        async move {
            match req.is_load() && counted.fetch_add(1, Ordering::SeqCst) < n {
                true => hostile(req, sock).await,
                false => normal(req, sock).await,
            }
        }
    });
    (h, loads)
}

/// A response head: status line, `headers`, `connection: close`.
pub(crate) fn head(status: &str, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut h = format!("HTTP/1.1 {status}\r\n");
    for (n, v) in headers {
        h.push_str(&format!("{n}: {v}\r\n"));
    }
    h.push_str("connection: close\r\n\r\n");
    h.into_bytes()
}

/// A whole JSON answer.
pub(crate) async fn json_answer(sock: &mut TcpStream, status: &str, v: &Value) {
    let body = v.to_string();
    let len = body.len().to_string();
    let mut out = head(status, &[("content-type", "application/json"), ("content-length", &len)]);
    out.extend_from_slice(body.as_bytes());
    let _ = sock.write_all(&out).await;
}

/// A minimal vLLM V1 metrics page.
pub(crate) const METRICS: &str = "# TYPE vllm:num_requests_running gauge\n\
    vllm:num_requests_running{engine=\"0\"} 0\n\
    vllm:num_requests_waiting{engine=\"0\"} 0\n";

/// The model list, the tokenizer, a metrics page, and streams of one token per 5 ms.
pub(crate) async fn normal(req: Request, mut sock: TcpStream) {
    match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/v1/models") => {
            json_answer(&mut sock, "200 OK", &json!({"data": [{"id": "m", "max_model_len": 4096}]})).await;
        }
        ("POST", "/tokenize") => {
            json_answer(&mut sock, "200 OK", &json!({"count": 4 + req.body.len() / 4, "max_model_len": 4096})).await;
        }
        ("GET", "/metrics") => {
            let len = METRICS.len().to_string();
            let mut out = head("200 OK", &[("content-type", "text/plain; version=0.0.4"), ("content-length", &len)]);
            out.extend_from_slice(METRICS.as_bytes());
            let _ = sock.write_all(&out).await;
        }
        ("POST", p) if p.ends_with("/completions") => {
            let _ = sock.write_all(&head("200 OK", &[("content-type", "text/event-stream")])).await;
            stream_tokens(&mut sock, req.max_tokens().unwrap_or(16)).await;
        }
        _ => json_answer(&mut sock, "404 Not Found", &json!({"error": "not found"})).await,
    }
}

/// One token per 5 ms with continuous usage, then `[DONE]`, the body ended by the close.
pub(crate) async fn stream_tokens(sock: &mut TcpStream, n: u64) {
    for i in 1..=n {
        let finish = if i == n { json!("length") } else { Value::Null };
        let chunk = json!({"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 3, "completion_tokens": i}});
        if sock.write_all(format!("data: {chunk}\n\n").as_bytes()).await.is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let _ = sock.write_all(b"data: [DONE]\n\n").await;
}

/// Writes `total` bytes of `fill` (in 64 KiB pieces, never held whole); the bytes written
/// before the peer stopped reading.
pub(crate) async fn write_flood(sock: &mut TcpStream, fill: u8, total: u64) -> u64 {
    let piece = vec![fill; 64 << 10];
    let mut written = 0u64;
    while written < total {
        let n = piece.len().min((total - written) as usize);
        if sock.write_all(&piece[..n]).await.is_err() {
            break;
        }
        written += n as u64;
    }
    written
}
