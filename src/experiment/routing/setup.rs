//! Preflight of a routing experiment: the replicas, their cache-reset clients (and which
//! reset each has), the prompt families (sized with the server's own tokenizer), the routes
//! (one, named after the policy, behind a fixed-policy router) and the phases.

use crate::cell::calibration;
use crate::config::MetricsEndpoint;
use crate::config::RunConfig;
use crate::experiment::prepare::{PrepareEnv, Prepared, Setup};
use crate::experiment::routing::attribution::ReplicaRef;
use crate::experiment::routing::{RoutingEnv, plan, preflight, prompts};
use crate::load::client::ApiClient;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use std::sync::Arc;

/// Prepares `--plan routing`: the replicas and their resets, the prompt families, the routes
/// and phases, and the gateway's version.
pub struct RoutingSetup;

impl Setup for RoutingSetup {
    fn plan(&self) -> Option<crate::config::PlanKind> {
        Some(crate::config::PlanKind::Routing)
    }

    fn prepare<'a>(&'a self, env: PrepareEnv<'a>) -> BoxFuture<'a, anyhow::Result<Prepared>> {
        async move {
            let (routing, notes) = routing_env(env.cfg, env.client, &env.facts.model, env.metrics).await?;
            let mut warnings = notes;
            warnings.extend(self::warnings(env.cfg, &routing));
            let gateway_version = env.client.version_within().await;
            let mut out = Prepared::of(Arc::new(super::Routing::new(routing)));
            (out.warnings, out.gateway_version) = (warnings, gateway_version);
            Ok(out)
        }
        .boxed()
    }
}

/// Builds everything the phases share, and the preflight notes for the log. Replicas come
/// from `--replica`/`--metrics-url`.
async fn routing_env(
    cfg: &RunConfig,
    client: &ApiClient,
    model: &str,
    metrics: &[MetricsEndpoint],
) -> anyhow::Result<(RoutingEnv, Vec<String>)> {
    let replicas: Vec<ReplicaRef> =
        metrics.iter().map(|m| ReplicaRef { name: m.name.clone(), base: crate::net::replica_base(&m.url) }).collect();
    let replica_clients: Vec<ApiClient> =
        replicas.iter().map(|r| ApiClient::new(client.backend().clone(), &r.base, cfg.api_key.clone())).collect();
    // The gateway's `/tokenize` if it has one, else a replica's, else probe requests' usage;
    // every count bounded and named while it waits (src/cell/calibration.rs).
    let counter = calibration::detect_among(client, &replica_clients, model, cfg).await;
    let counter = calibration::BoundedCounter::new(counter, cfg);
    let families = prompts::calibrate(&counter, cfg.routing.seed, cfg.routing.prompt_tokens).await?;
    let reset_paths = preflight::probe_resets(&replica_clients).await;
    let names: Vec<String> = replicas.iter().map(|r| r.name.clone()).collect();
    let mut notes: Vec<String> = preflight::reset_warning(&names, &reset_paths).into_iter().collect();
    let mut routing = cfg.routing.clone();
    // One SLO for the session: routing judges its requests against the same one as the rest.
    routing.slo = cfg.slo;
    if let Some(url) = &cfg.routing.gateway_metrics {
        let policy = preflight::router_policy(client, url, model, cfg).await;
        let (routes, note) = preflight::resolve_routes(&routing.routes, policy.as_deref());
        routing.routes = routes;
        notes.extend(note);
    }
    let nonce = session_nonce(cfg);
    let phases = plan::phases(&routing);
    let env = RoutingEnv { cfg: routing, families, replicas, replica_clients, phases, reset_paths, nonce };
    Ok((env, notes))
}

/// The session's prefix-set nonce: drawn from the clock, or in a sharded session derived
/// from its id, so every shard salts its prompts as shard 0 primed them.
fn session_nonce(cfg: &RunConfig) -> u64 {
    match (&cfg.shard, &cfg.session_id) {
        (Some(_), Some(id)) => xxhash_rust::xxh64::xxh64(id.as_bytes(), 0x5ead),
        _ => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64),
    }
}

/// What a routing session without replicas or gateway metrics cannot report.
fn warnings(cfg: &RunConfig, env: &RoutingEnv) -> Vec<String> {
    let mut w = Vec::new();
    if env.replicas.is_empty() {
        w.push(
            "routing without --replica: caches cannot be reset and requests cannot be attributed by counters".into(),
        );
    }
    if cfg.routing.gateway_metrics.is_none() {
        w.push("routing without --gateway-metrics: routing_counter_deltas are null".into());
    }
    w
}
