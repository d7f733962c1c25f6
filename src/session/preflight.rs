//! Phase 1: discover the model and its limits, read each replica's metrics dialect and KV
//! capacity, and calibrate one prompt per context size.

use crate::cell::facts::{Prompt, ReplicaFacts};
use crate::config::{MetricsEndpoint, PlanKind, RunConfig};
use crate::experiment::decode::fit::{Fit, Wanted, fit};
use crate::load::backend::Backend;
use crate::load::calibrate::{CalibrateOptions, calibrate_many};
use crate::load::client::{ApiClient, ClientError, ModelInfo, REQUEST_TIMEOUT, redact_url};
use crate::load::counters::ServerCounter;
use crate::load::request::{BodyOptions, BodyTemplate, Endpoint};
use crate::metrics::prom::Scrape;
use crate::metrics::{EngineDialect, EngineSample};
use crate::net::host_port;
use std::time::Duration;

/// A model id a request can name: sglang-router answers `unknown` in front of vLLM workers
/// (docs/protocol.md §8.4), which no worker serves.
fn usable(id: &str) -> bool {
    !id.trim().is_empty() && !id.eq_ignore_ascii_case("unknown")
}

/// The models of the first replica that names a usable one.
async fn replica_models(replicas: &[ApiClient]) -> Vec<crate::load::client::ModelInfo> {
    for replica in replicas {
        if let Ok(m) = replica.models().await
            && m.iter().any(|x| usable(&x.id))
        {
            return m.into_iter().filter(|x| usable(&x.id)).collect();
        }
    }
    Vec::new()
}

/// After this long without an answer, preflight says on stderr what it waits for.
pub const WAIT_NOTICE: Duration = Duration::from_secs(3);

/// Awaits `fut`; past [`WAIT_NOTICE`] says once on stderr that it waits for `what` (and how
/// long at most), so a silent server is not a silent benchmark. Runs before any monitor opens.
async fn say_while_waiting<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::pin!(fut);
    tokio::select! {
        r = &mut fut => return r,
        _ = tokio::time::sleep(WAIT_NOTICE) => {
            crate::err_line!("preflight: waiting for {what} to answer (up to {} s)", REQUEST_TIMEOUT.as_secs());
        }
    }
    fut.await
}

/// The one preflight line of a failed discovery: refused credentials are named as such (the
/// server's text is left out, it may echo the key).
fn preflight_error(e: &ClientError) -> anyhow::Error {
    match e {
        ClientError::Status { url, status: status @ (401 | 403), .. } => anyhow::anyhow!(
            "preflight: {url} refused the credentials (HTTP {status}); set the key with --api-key-env or --api-key"
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
    let what = redact_url(&client.url("/v1/models"));
    let mut models = say_while_waiting(&what, client.models()).await.map_err(|e| preflight_error(&e))?;
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
    match client.slot_limits().await {
        Some(l) => format!(
            "preflight: llama.cpp limits: {} slots of {ctx} tokens (/props; /v1/models meta.n_ctx): a prompt and its output must fit one slot, and more than {} requests wait (requests_deferred)",
            l.total_slots, l.total_slots
        ),
        None => format!("preflight: context of one request {ctx} tokens (/v1/models meta.n_ctx; /props unavailable)"),
    }
}

/// The context sizes some cell wanting one of `wanted` can run with (all when `max_model_len`
/// is unknown), and those whose prompt and output fit no cell: these are neither calibrated nor
/// run (the rule: `experiment::decode::fit`).
pub fn split_ctx(ctx: &[u64], max_model_len: Option<u64>, wanted: &[Wanted]) -> (Vec<u64>, Vec<u64>) {
    ctx.iter().partition(|c| wanted.iter().any(|w| !matches!(fit(max_model_len, **c, *w), Fit::TooLong { .. })))
}

/// The one preflight line naming the context sizes whose prompt and `wanted` output exceed
/// `max_model_len`, with their deficits, if any.
pub fn too_long_note(too_long: &[u64], max_model_len: Option<u64>, wanted: Wanted) -> Option<String> {
    let len = max_model_len?;
    let deficit = |c: u64| match fit(max_model_len, c, wanted) {
        Fit::TooLong { deficit, .. } => deficit,
        _ => 0,
    };
    let sizes: Vec<String> = too_long
        .iter()
        .map(|c| format!("{} (deficit {} tokens)", crate::units::format_size(*c), deficit(*c)))
        .collect();
    (!sizes.is_empty()).then(|| {
        format!(
            "preflight: --ctx {} leaves no room for the output under the model's max_model_len {len}: those cells are skipped",
            sizes.join(", ")
        )
    })
}

/// Attempts at reading a replica's metrics page at preflight.
pub const INSPECT_ATTEMPTS: u32 = 3;
/// Wait before the second attempt; doubled before each later one.
pub const INSPECT_BACKOFF: Duration = Duration::from_millis(250);

/// Reads one metrics page and what it says about the replica, retrying a failed read
/// ([`INSPECT_ATTEMPTS`] attempts, [`INSPECT_BACKOFF`] doubling between them) so one failed
/// poll does not leave the replica's dialect and KV capacity unknown.
pub async fn inspect_replica(backend: &dyn Backend, ep: &MetricsEndpoint) -> ReplicaFacts {
    let mut facts = ReplicaFacts {
        name: ep.name.clone(),
        url: redact_url(&ep.url),
        dialect: EngineDialect::Unknown,
        kv_capacity: None,
        error: None,
    };
    let mut wait = INSPECT_BACKOFF;
    for attempt in 1..=INSPECT_ATTEMPTS {
        match read_scrape(backend, &ep.url).await {
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
        facts.kv_capacity = super::server_info::sglang_kv_capacity(backend, &ep.url).await;
    }
    facts
}

/// Fetches and parses one metrics page (within [`crate::metrics::page`]'s caps), refusing one
/// without engine series.
async fn read_scrape(backend: &dyn Backend, url: &str) -> Result<Scrape, String> {
    let scrape = crate::metrics::page::read(backend, url, Duration::from_secs(10)).await.map_err(|e| e.to_string())?;
    match EngineDialect::detect(&scrape) {
        EngineDialect::Unknown => Err(crate::metrics::page::no_engine_series(&scrape).to_string()),
        _ => Ok(scrape),
    }
}

/// Calibrates one prompt per context size (within 1%), using `/tokenize` when the server
/// has it, else probe requests' usage.
pub async fn calibrate_prompts(
    client: &ApiClient,
    model: &str,
    endpoint: Endpoint,
    ctx: &[u64],
) -> anyhow::Result<(Vec<Prompt>, Vec<String>)> {
    let counter = ServerCounter::detect(client.clone(), model.to_string(), endpoint).await;
    let opts = CalibrateOptions { tolerance: 0.01, max_probes: 10, overhead_tokens: 0 };
    let results = calibrate_many(&counter, ctx, 0x5eed_0001, &opts).await;
    let mut prompts = Vec::new();
    let mut warnings = Vec::new();
    for (target, r) in ctx.iter().zip(results) {
        let c = r.map_err(|e| anyhow::anyhow!("preflight: cannot calibrate a {target}-token prompt: {e}"))?;
        let method = if c.extrapolated { "extrapolated" } else { counter.method.as_str() };
        if !c.converged && !c.extrapolated {
            warnings.push(format!("prompt for ctx {target} reached {} tokens, not within 1%", c.tokens));
        }
        prompts.push(Prompt { ctx: *target, text: c.text.into(), tokens: c.tokens, method: method.to_string() });
    }
    Ok((prompts, warnings))
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
/// (`load::reuse_probe`, one request of one token to `endpoint`) and sets the transport's
/// policy for the session's streams; returns the line to log. None for a transport without
/// connections.
pub async fn probe_reuse(client: &ApiClient, endpoint: Endpoint, model: &str) -> Option<String> {
    let reuse = client.backend().stream_reuse()?;
    let opts = BodyOptions { endpoint, model: model.to_string(), max_tokens: 1, ignore_eos: false };
    let body = BodyTemplate::new(&opts, "Hello").render("");
    let found = crate::load::reuse_probe::probe(&client.url(endpoint.path()), &client.headers(), &body).await;
    Some(reuse.decide(found.streams_reuse(), found.evidence()))
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

/// Accepts `http://` and `https://` URLs with a host.
pub fn check_url(s: &str) -> Result<(), String> {
    let ok = (s.starts_with("http://") || s.starts_with("https://"))
        && s.split_once("://").is_some_and(|(_, r)| !r.is_empty());
    if ok { Ok(()) } else { Err(format!("`{s}` is not an http(s) URL")) }
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
