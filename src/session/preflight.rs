//! Phase 1: discover the model and its limits, read each replica's metrics dialect and KV
//! capacity, and probe connection reuse (the prompts are calibrated in `calibration`). Every
//! wait has a deadline and is named on stderr once it lasts (`wait`).

use crate::cell::facts::ReplicaFacts;
use crate::config::{MetricsEndpoint, PlanKind, RunConfig};
use crate::load::backend::Backend;
use crate::load::client::{ApiClient, ClientError, ModelInfo, REQUEST_TIMEOUT, redact_url};
use crate::load::request::{BodyOptions, BodyTemplate, Endpoint};
use crate::load::reuse_probe::Probe;
use crate::load::wait::{INFO_TIMEOUT, TRANSPORT_MARGIN, Wait, seconds};
use crate::metrics::prom::Scrape;
use crate::metrics::{EngineDialect, EngineSample};
use crate::net::{check_url, host_port};
use std::time::Duration;

/// A model id a request can name: sglang-router answers `unknown` in front of vLLM workers
/// (docs/protocol.md §8.4), which no worker serves.
fn usable(id: &str) -> bool {
    !id.trim().is_empty() && !id.eq_ignore_ascii_case("unknown")
}

/// The wait for a server's model list.
fn models_wait(client: &ApiClient) -> Wait {
    Wait::new(redact_url(&client.url("/v1/models")), REQUEST_TIMEOUT)
}

/// `GET /v1/models`, its own timeout past [`models_wait`]'s.
async fn models(client: &ApiClient) -> Result<Vec<ModelInfo>, ClientError> {
    client.with_timeout(REQUEST_TIMEOUT + TRANSPORT_MARGIN).models().await
}

/// The models of the first replica that names a usable one.
async fn replica_models(replicas: &[ApiClient]) -> Vec<crate::load::client::ModelInfo> {
    for replica in replicas {
        if let Ok(Ok(m)) = models_wait(replica).run(models(replica)).await
            && m.iter().any(|x| usable(&x.id))
        {
            return m.into_iter().filter(|x| usable(&x.id)).collect();
        }
    }
    Vec::new()
}

/// The one preflight line of a failed discovery: refused credentials are named as such (the
/// server's text is left out, it may echo the key), with what to do about the key sent or not.
fn preflight_error(e: &ClientError, key_sent: bool) -> anyhow::Error {
    match e {
        ClientError::Status { url, status: status @ (401 | 403), .. } => {
            anyhow::anyhow!(
                "preflight: {url} refused the credentials (HTTP {status}); {}",
                crate::load::client::key_hint(key_sent)
            )
        }
        ClientError::Status { status: 404, .. } => anyhow::anyhow!(
            "preflight: {e}; check --base-url: it names the server's root, and /v1/models is asked under it"
        ),
        e => anyhow::anyhow!("preflight: {e}"),
    }
}

/// The model preflight found and its limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Discovered {
    /// Model id.
    pub model: String,
    /// Context a request must fit, tokens (vLLM `max_model_len`, llama.cpp a slot's `n_ctx`).
    pub max_model_len: Option<u64>,
    /// Where the limits came from, to say at start (e.g. llama.cpp's slots).
    pub note: Option<String>,
}

/// Finds the model: the one asked for (which must be served), or the first served. When the
/// gateway names no usable model, the replicas' own `/v1/models` do. A context length read
/// from llama.cpp's `meta.n_ctx` is one slot's; `/props` then gives the slot count.
pub async fn discover(client: &ApiClient, wanted: Option<&str>, replicas: &[ApiClient]) -> anyhow::Result<Discovered> {
    let answer = models_wait(client).run(models(client)).await.map_err(|e| anyhow::anyhow!("preflight: {e}"))?;
    let mut models = answer.map_err(|e| preflight_error(&e, client.has_key()))?;
    models.retain(|m| usable(&m.id));
    if models.is_empty() && wanted.is_none() {
        models = replica_models(replicas).await;
    }
    let found = match wanted {
        Some(w) => named_model(models, w),
        None => models.into_iter().next().ok_or_else(|| {
            anyhow::anyhow!("preflight: {} lists no model; pass --model", redact_url(&client.url("/v1/models")))
        })?,
    };
    let note = match found.len_field {
        Some("meta.n_ctx") => Some(slot_note(client, found.max_model_len).await),
        _ => None,
    };
    Ok(Discovered { model: found.id, max_model_len: found.max_model_len, note })
}

/// The model `wanted` as listed. A llama.cpp server serves one model whatever a request
/// names (docs/protocol.md §2.3), so a name it does not list still has that model's limits
/// when it lists only one with a slot context; otherwise the limits are unknown.
fn named_model(models: Vec<ModelInfo>, wanted: &str) -> ModelInfo {
    let only_slot = models.len() == 1 && models[0].len_field == Some("meta.n_ctx");
    match models.into_iter().find(|m| m.id == wanted || only_slot) {
        Some(m) => ModelInfo { id: wanted.to_string(), ..m },
        None => ModelInfo { id: wanted.to_string(), max_model_len: None, len_field: None },
    }
}

/// The start line of a llama.cpp server's limits: the slot context and, from `/props`, the
/// slot count.
async fn slot_note(client: &ApiClient, slot_ctx: Option<u64>) -> String {
    let ctx = slot_ctx.map_or("?".to_string(), |c| c.to_string());
    let wait = Wait::new(redact_url(&client.url("/props")), INFO_TIMEOUT);
    match wait.run(client.slot_limits()).await.ok().flatten() {
        Some(l) => format!(
            "preflight: llama.cpp limits: {} slots of {ctx} tokens (/props; /v1/models meta.n_ctx): a prompt and its output must fit one slot, and more than {} requests wait (requests_deferred)",
            l.total_slots, l.total_slots
        ),
        None => format!("preflight: context of one request {ctx} tokens (/v1/models meta.n_ctx; /props unavailable)"),
    }
}

/// Attempts at reading a replica's metrics page at preflight.
pub const INSPECT_ATTEMPTS: u32 = 3;
/// Wait before the second attempt; doubled before each later one.
pub const INSPECT_BACKOFF: Duration = Duration::from_millis(250);

/// Reads one metrics page and what it says about the replica, retrying a failed read
/// ([`INSPECT_ATTEMPTS`] attempts of at most [`INFO_TIMEOUT`] each, [`INSPECT_BACKOFF`]
/// doubling between them) so one failed poll does not leave the replica's dialect and KV
/// capacity unknown. A first read that lasts is named on stderr.
pub async fn inspect_replica(backend: &dyn Backend, ep: &MetricsEndpoint) -> ReplicaFacts {
    let mut facts = ReplicaFacts {
        name: ep.name.clone(),
        url: redact_url(&ep.url),
        dialect: EngineDialect::Unknown,
        kv_capacity: None,
        error: None,
    };
    let mut wait = INSPECT_BACKOFF;
    let read_wait = Wait::new(redact_url(&ep.url), INFO_TIMEOUT);
    for attempt in 1..=INSPECT_ATTEMPTS {
        let said = |line: String| {
            if attempt == 1 {
                crate::err_line!("{line}")
            }
        };
        let read = read_wait.run_saying(read_scrape(backend, &ep.url), said).await;
        match read.unwrap_or_else(|e| Err(e.to_string())) {
            Ok(scrape) => {
                let sample = EngineSample::detect(&scrape);
                facts.dialect = sample.dialect;
                facts.kv_capacity = sample.kv_capacity_tokens.map(|c| c as u64);
                facts.error = None;
                break;
            }
            Err(e) => facts.error = Some(format!("{e} (after {attempt} attempt(s))")),
        }
        if attempt < INSPECT_ATTEMPTS {
            tokio::time::sleep(wait).await;
            wait = wait.saturating_mul(2);
        }
    }
    if facts.dialect == EngineDialect::Sglang && facts.kv_capacity.is_none() {
        // Newer SGLang shows its pool size only once the scheduler has logged; its server
        // info has it from the start.
        let info = super::server_info::info_url(&ep.url);
        let read = super::server_info::sglang_kv_capacity(backend, &ep.url);
        facts.kv_capacity = Wait::new(redact_url(&info), INFO_TIMEOUT).run(read).await.ok().flatten();
    }
    facts
}

/// Fetches and parses one metrics page (within [`crate::metrics::page`]'s caps), refusing one
/// without engine series.
async fn read_scrape(backend: &dyn Backend, url: &str) -> Result<Scrape, String> {
    let scrape = crate::metrics::page::read(backend, url, INFO_TIMEOUT).await.map_err(|e| e.to_string())?;
    match EngineDialect::detect(&scrape) {
        EngineDialect::Unknown => Err(crate::metrics::page::no_engine_series(&scrape).to_string()),
        _ => Ok(scrape),
    }
}

/// The endpoint the session's streams use: `--endpoint`, except a serve-only session's
/// (`/v1/completions` always).
pub fn stream_endpoint(cfg: &RunConfig) -> Endpoint {
    match cfg.plans.iter().all(|p| *p == PlanKind::Serve) {
        true => Endpoint::Completions,
        false => cfg.endpoint,
    }
}

/// Probes, before any load, whether the target closes its connections after streamed requests
/// (`load::reuse_probe`, one request of one token to `endpoint`, waiting at most `limit`:
/// see `calibration::reuse_probe_limit`) and sets the transport's policy for the session's
/// streams; returns the line to log. None for a transport without connections.
pub async fn probe_reuse(client: &ApiClient, endpoint: Endpoint, model: &str, limit: Duration) -> Option<String> {
    let reuse = client.backend().stream_reuse()?;
    let opts = BodyOptions { endpoint, model: model.to_string(), max_tokens: 1, ignore_eos: false };
    let body = BodyTemplate::new(&opts, "Hello").render("");
    let url = client.url(endpoint.path());
    let wait = Wait::new(format!("POST {} (connection-reuse probe)", redact_url(&url)), limit);
    let found = match wait.run(crate::load::reuse_probe::probe(&url, &client.headers(), &body)).await {
        Ok(found) => found,
        Err(_) => Probe::NotProbed(format!("no answer to the probe within {}", seconds(limit))),
    };
    Some(reuse.decide(found.streams_reuse(), found.evidence(), found.answered()))
}

/// The default metrics endpoint of a base URL, named after its host and port.
pub fn default_metrics(base: &str) -> MetricsEndpoint {
    let trimmed = base.trim_end_matches('/');
    let trimmed = trimmed.strip_suffix("/v1").unwrap_or(trimmed);
    MetricsEndpoint { name: host_port(trimmed).to_string(), url: format!("{trimmed}/metrics") }
}

/// Parses `NAME=URL` or a bare `URL` (named after its host and port).
pub fn parse_metrics_arg(s: &str) -> Result<MetricsEndpoint, String> {
    let s = s.trim();
    match s.split_once('=') {
        Some((name, url)) if !name.contains("://") && !name.is_empty() => {
            check_url(url)?;
            Ok(MetricsEndpoint { name: name.to_string(), url: url.to_string() })
        }
        _ => {
            check_url(s)?;
            Ok(MetricsEndpoint { name: host_port(s).to_string(), url: s.to_string() })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::inproc::InProcBackend;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A metrics page that answers HTTP 503 to its first `fail` reads, then a vLLM V1 page.
    fn flaky(fail: u32) -> (InProcBackend, Arc<AtomicU32>) {
        let calls = Arc::new(AtomicU32::new(0));
        let seen = calls.clone();
        let page = "vllm:num_requests_running{engine=\"0\"} 0\n\
            vllm:cache_config_info{engine=\"0\",num_gpu_blocks=\"100\",block_size=\"16\"} 1\n";
        let handler = move || {
            let n = seen.fetch_add(1, Ordering::SeqCst);
            async move {
                use axum::response::IntoResponse;
                if n < fail {
                    axum::http::StatusCode::SERVICE_UNAVAILABLE.into_response()
                } else {
                    page.into_response()
                }
            }
        };
        let mut backend = InProcBackend::default();
        backend.serve("flaky.inproc", axum::Router::new().route("/metrics", axum::routing::get(handler)));
        (backend, calls)
    }

    #[tokio::test(start_paused = true)]
    async fn preflight_retries_a_failed_metrics_read() {
        let ep = MetricsEndpoint { name: "r".into(), url: "http://flaky.inproc/metrics".into() };
        let (backend, calls) = flaky(2);
        let facts = inspect_replica(&backend, &ep).await;
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!((facts.dialect, facts.kv_capacity, facts.error), (EngineDialect::VllmV1, Some(1600), None));
        let (backend, calls) = flaky(u32::MAX);
        let facts = inspect_replica(&backend, &ep).await;
        assert_eq!(calls.load(Ordering::SeqCst), INSPECT_ATTEMPTS);
        assert_eq!(facts.dialect, EngineDialect::Unknown);
        assert!(facts.error.as_deref().is_some_and(|e| e.contains("HTTP 503")), "{:?}", facts.error);
    }

    #[test]
    fn an_unlisted_name_keeps_the_one_llamacpp_models_limits() {
        let slot = |id: &str| ModelInfo { id: id.into(), max_model_len: Some(8192), len_field: Some("meta.n_ctx") };
        let vllm = |id: &str| ModelInfo { id: id.into(), max_model_len: Some(4096), len_field: Some("max_model_len") };
        let m = named_model(vec![slot("tiny")], "other");
        assert_eq!((m.id.as_str(), m.max_model_len), ("other", Some(8192)));
        assert_eq!(named_model(vec![vllm("a")], "other").max_model_len, None, "vLLM checks the name");
        assert_eq!(named_model(vec![slot("a"), slot("b")], "c").max_model_len, None);
        assert_eq!(named_model(vec![vllm("a"), vllm("b")], "b").max_model_len, Some(4096));
    }

    #[test]
    fn metrics_args() {
        let a = parse_metrics_arg("sim-a=http://127.0.0.1:8001/metrics").unwrap();
        assert_eq!((a.name.as_str(), a.url.as_str()), ("sim-a", "http://127.0.0.1:8001/metrics"));
        let b = parse_metrics_arg("http://h:9/metrics").unwrap();
        assert_eq!(b.name, "h:9");
        assert!(parse_metrics_arg("x=ftp://h").is_err());
        assert!(parse_metrics_arg("nonsense").is_err());
        let d = default_metrics("http://u:p@10.0.0.1:8000/v1/");
        assert_eq!((d.name.as_str(), d.url.as_str()), ("10.0.0.1:8000", "http://u:p@10.0.0.1:8000/metrics"));
    }
}
