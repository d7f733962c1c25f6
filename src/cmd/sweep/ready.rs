//! A started server's readiness and settings: a free loopback port for it, the wait for
//! `/health` and then `/v1/models` (bounded, and cut short when the server exits), and what it
//! resolved: the labels of `vllm:cache_config_info` on its metrics page (docs/protocol.md
//! §1.2) and the `non-default args: {...}` line vLLM logs at start-up.

use super::secrets::{is_secret_name, mask};
use super::server::Server;
use crate::load::backend::Exchange;
use crate::load::client::ApiClient;
use crate::load::request::ApiKey;
use crate::report::sweep::ServerSettings;
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::Duration;
use tokio::time::Instant;

/// Time between two readiness checks: short at first (a fast server's start-up time is read
/// to [`POLL_FAST`]), then [`POLL`].
const POLL: Duration = Duration::from_millis(200);
/// Time between the checks of the first [`FAST_FOR`].
const POLL_FAST: Duration = Duration::from_millis(25);
/// How long the checks are [`POLL_FAST`] apart.
const FAST_FOR: Duration = Duration::from_secs(2);
/// Longest wait for one answer of a readiness check.
const ASK: Duration = Duration::from_secs(5);
/// Most bytes of the server log read for its settings line (it comes early) or its tail.
const LOG_READ: u64 = 4 << 20;
/// Lines of the log kept in the report of a set that failed.
pub(crate) const TAIL_LINES: usize = 20;
/// The line vLLM logs with its non-default settings.
const ARGS_LINE: &str = "non-default args: ";

/// A loopback port free now (bound to port 0, then released for the server to take).
pub(crate) fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port())
}

/// Why a server was not ready.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NotReady {
    /// It exited first (how).
    Exited(String),
    /// It did not answer in time.
    Timeout(Duration),
}

impl NotReady {
    /// One line for the report and the progress.
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Exited(how) => format!("the server exited before it was ready ({how})"),
            Self::Timeout(t) => format!(
                "the server did not answer /health and /v1/models within {} s (--server-timeout)",
                crate::report::sweep::seconds(t.as_secs_f64())
            ),
        }
    }
}

/// `GET /health` answered 2xx.
async fn healthy(client: &ApiClient) -> bool {
    let (url, headers) = (client.url("/health"), client.headers());
    let sent = client.backend().send(Exchange::get(&url, &headers).with_timeout(ASK)).await;
    sent.is_ok_and(|r| r.status().is_success())
}

/// Polls `/health`, then `/v1/models` (a model listed), until both answer, the server exits
/// or `limit` passes.
pub(crate) async fn wait_ready(server: &mut Server, client: &ApiClient, limit: Duration) -> Result<(), NotReady> {
    let start = Instant::now();
    let deadline = start + limit;
    let models = client.with_timeout(ASK);
    loop {
        if let Some(how) = server.exited() {
            return Err(NotReady::Exited(how));
        }
        if healthy(client).await && models.models().await.is_ok_and(|m| !m.is_empty()) {
            return Ok(());
        }
        if let Some(how) = server.exited() {
            return Err(NotReady::Exited(how));
        }
        if Instant::now() >= deadline {
            return Err(NotReady::Timeout(limit));
        }
        let poll = if start.elapsed() < FAST_FOR { POLL_FAST } else { POLL };
        tokio::select! {
            how = server.wait_exit() => return Err(NotReady::Exited(how)),
            () = tokio::time::sleep_until((Instant::now() + poll).min(deadline)) => {}
        }
    }
}

/// The last `LOG_READ` bytes of `log` (lossy UTF-8), or nothing.
fn read_end(log: &Path) -> String {
    let Ok(mut f) = std::fs::File::open(log) else { return String::new() };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(LOG_READ)));
    let mut bytes = Vec::new();
    let _ = f.take(LOG_READ).read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The last `n` non-empty lines of `log`, secrets masked and control characters escaped.
pub(crate) fn log_tail(log: &Path, n: usize, key: Option<&ApiKey>) -> Vec<String> {
    let text = read_end(log);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let from = lines.len().saturating_sub(n);
    lines[from..].iter().map(|l| crate::text_safe::line(&mask(l, key)).into_owned()).collect()
}

/// The scalar entries of a Python dict literal (`{'a': 1, 'b': 'x', 'c': [1]}` gives a=1,
/// b=x; lists, tuples, dicts and objects are left out); secret names masked.
pub(crate) fn dict_scalars(dict: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(body) = dict.trim().strip_prefix('{') else { return out };
    for entry in split_top(body.trim_end().trim_end_matches('}')) {
        let Some((k, v)) = entry.split_once(": ") else { continue };
        let key = unquote(k.trim());
        let v = v.trim();
        let value = match v.chars().next() {
            Some('\'' | '"') => unquote(v),
            Some('[' | '(' | '{' | '<') | None => continue,
            Some(_) => v.to_string(),
        };
        if !key.is_empty() {
            let value = if is_secret_name(&key) { "***".to_string() } else { value };
            out.insert(key, value);
        }
    }
    out
}

fn unquote(s: &str) -> String {
    let q = s.chars().next();
    match q {
        Some(q @ ('\'' | '"')) if s.len() >= 2 && s.ends_with(q) => s[1..s.len() - 1].to_string(),
        _ => s.to_string(),
    }
}

/// Splits at the commas outside brackets and quotes.
fn split_top(s: &str) -> Vec<&str> {
    let (mut out, mut start, mut depth, mut quote) = (Vec::new(), 0, 0i32, None);
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '[' | '(' | '{') => depth += 1,
            (None, ']' | ')' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// The settings vLLM logged as `non-default args` (the last such line of `log`).
fn logged_args(log: &Path, key: Option<&ApiKey>) -> BTreeMap<String, String> {
    let text = read_end(log);
    let line = text.lines().rev().find_map(|l| l.split_once(ARGS_LINE).map(|(_, d)| d.to_string()));
    let mut args = line.map(|d| dict_scalars(&d)).unwrap_or_default();
    for v in args.values_mut() {
        *v = crate::text_safe::line(&mask(v, key)).into_owned();
    }
    args
}

/// The labels of the first `vllm:cache_config_info` series of the page at `url` (its
/// `engine` label left out); empty when the page cannot be read or has none.
async fn cache_config(client: &ApiClient, url: &str) -> BTreeMap<String, String> {
    let Ok(scrape) = crate::metrics::page::read(&**client.backend(), url, ASK).await else { return BTreeMap::new() };
    let mut labels = scrape.samples("vllm:cache_config_info").next().map(|s| s.labels.clone()).unwrap_or_default();
    labels.remove("engine");
    labels.into_iter().map(|(k, v)| (k, crate::text_safe::line(&v).into_owned())).collect()
}

/// SGLang's sequence cap in its `/get_server_info`: `max_running_requests`, else the first
/// rank's `effective_max_running_requests_per_dp` (docs/protocol.md §2.6).
pub(crate) fn sglang_cap_of(info: &serde_json::Value) -> Option<u64> {
    let top = info.get("max_running_requests").and_then(serde_json::Value::as_u64);
    top.or_else(|| info.pointer("/internal_states/0/effective_max_running_requests_per_dp")?.as_u64())
}

/// The sequence cap a server states over HTTP, and where: llama.cpp's `/props` slots, SGLang's
/// `/get_server_info` (vLLM states it only in its log).
async fn sequence_cap(client: &ApiClient) -> Option<(u64, &'static str)> {
    let quick = client.with_timeout(ASK);
    if let Some(limits) = quick.slot_limits().await {
        return Some((limits.total_slots, "/props total_slots"));
    }
    let (url, headers) = (client.url("/get_server_info"), client.headers());
    let info = crate::session::server_info::sglang_info(&**client.backend(), &url, &headers, ASK).await?;
    sglang_cap_of(&info).map(|n| (n, "/get_server_info max_running_requests"))
}

/// What the server resolved: its cache configuration from `metrics_url` (when polled) and the
/// settings its log names.
pub(crate) async fn server_settings(
    client: &ApiClient,
    metrics_url: Option<&str>,
    log: &Path,
    key: Option<&ApiKey>,
) -> ServerSettings {
    let cache = match metrics_url {
        Some(url) => cache_config(client, url).await,
        None => BTreeMap::new(),
    };
    let args = logged_args(log, key);
    let num = |m: &BTreeMap<String, String>, k: &str| m.get(k).and_then(|v| v.trim().parse::<u64>().ok());
    let (max_num_seqs, max_num_seqs_from) = match num(&args, "max_num_seqs") {
        Some(n) => (Some(n), Some("log: non-default args".to_string())),
        None => sequence_cap(client).await.map_or((None, None), |(n, from)| (Some(n), Some(from.to_string()))),
    };
    ServerSettings {
        max_num_seqs,
        max_num_seqs_from,
        num_gpu_blocks: num(&cache, "num_gpu_blocks"),
        block_size: num(&cache, "block_size"),
        cache_config: cache,
        args,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllms_args_line_gives_its_scalars() {
        let line = "{'model_tag': 'Qwen/Qwen3-0.6B', 'port': 8123, 'api_key': ['sk-1'], 'max_num_seqs': 8, \
                    'enforce_eager': True, 'compilation_config': {'level': 0}, 'x': None, 'm': \"a, b\"}";
        let got = dict_scalars(line);
        let want: BTreeMap<String, String> = [
            ("model_tag", "Qwen/Qwen3-0.6B"),
            ("port", "8123"),
            ("max_num_seqs", "8"),
            ("enforce_eager", "True"),
            ("x", "None"),
            ("m", "a, b"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(got, want, "lists and dicts left out, api_key with them");
        assert_eq!(sglang_cap_of(&serde_json::json!({"max_running_requests": 48})), Some(48));
        let ranks = serde_json::json!({"max_running_requests": null,
            "internal_states": [{"effective_max_running_requests_per_dp": 32}]});
        assert_eq!(sglang_cap_of(&ranks), Some(32));
        assert_eq!(sglang_cap_of(&serde_json::json!({"version": "0.5"})), None);
        let secret = dict_scalars("{'hf_token': 'hf_abc', 'n': 1}");
        assert_eq!(secret.get("hf_token").map(String::as_str), Some("***"));
        assert!(dict_scalars("not a dict").is_empty());
    }

    /// The settings of one in-process simulated replica made by `tweak`, with an empty log.
    async fn settings_of(tweak: impl FnOnce(&mut crate::sim::SimConfig)) -> ServerSettings {
        let mut cfg = crate::sim::SimConfig { replicas: 1, ..Default::default() };
        tweak(&mut cfg);
        let c = crate::sim::inproc::InProcCluster::start(cfg).expect("cluster");
        let r = &c.info().replicas[0];
        let client = ApiClient::new(c.backend(), &r.url, None);
        let dir = tempfile::tempdir().unwrap();
        server_settings(&client, Some(&r.metrics_url), &dir.path().join("none.log"), None).await
    }

    #[tokio::test(start_paused = true)]
    async fn the_sequence_cap_comes_from_the_page_the_engine_states_it_on() {
        let vllm = settings_of(|c| c.engine.max_num_seqs = 12).await;
        assert_eq!((vllm.max_num_seqs, vllm.num_gpu_blocks, vllm.block_size), (None, Some(22_528), Some(16)));
        assert_eq!(vllm.cache_config.get("num_gpu_blocks").map(String::as_str), Some("22528"));
        let sglang = settings_of(|c| {
            c.engine.max_num_seqs = 12;
            c.dialects = vec![crate::sim::expo::MetricsDialect::Sglang];
        })
        .await;
        assert_eq!(sglang.max_num_seqs, Some(12));
        assert_eq!(sglang.max_num_seqs_from.as_deref(), Some("/get_server_info max_running_requests"));
        let llama = settings_of(|c| {
            c.engine.max_num_seqs = 3;
            c.engine_mode = crate::sim::EngineMode::Llamacpp;
        })
        .await;
        assert_eq!((llama.max_num_seqs, llama.max_num_seqs_from.as_deref()), (Some(3), Some("/props total_slots")));
    }

    #[test]
    fn the_log_gives_its_last_args_line_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("s.log");
        let text = "INFO 05-13 [utils.py:1] non-default args: {'max_num_seqs': 4}\n\
                    (APIServer pid=9) INFO [api_utils.py:2] non-default args: {'max_num_seqs': 16, 'api_key': 'sk-zz'}\n\
                    \nready --api-key sk-zz \x1b[31m\n";
        std::fs::write(&log, text).unwrap();
        let args = logged_args(&log, None);
        assert_eq!(args.get("max_num_seqs").map(String::as_str), Some("16"));
        assert_eq!(args.get("api_key").map(String::as_str), Some("***"));
        let tail = log_tail(&log, 2, None);
        assert_eq!(tail.len(), 2);
        assert!(tail[1].starts_with("ready --api-key *** "), "{tail:?}");
        assert!(!tail.concat().contains("sk-zz") && !tail[1].contains('\x1b'), "{tail:?}");
        assert!(log_tail(&dir.path().join("none"), 5, None).is_empty());
        assert!(free_port().unwrap() > 0);
    }
}
