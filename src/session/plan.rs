//! Building the session: preflight, the cell plan (with KV-capacity skips) and the runner.

use super::control::{LiveView, RunnerEvent};
use super::env::CellEnv;
use super::preflight::{self, Facts, default_metrics};
use super::runner::{Control, Runner, saved_event};
use super::state::{CellSpec, CellStatus, SessionState};
use super::{PlanKind, RunConfig, SessionHandles};
use crate::load::client::{ApiClient, redact_url};
use crate::metrics::poller::{MetricsTarget, Poller, PollerConfig};
use crate::report::sink::ReportSink;
use crate::report::writer::{ReportWriter, now_rfc3339};
use crate::routing::RoutingEnv;
use crate::units::format_size;
use reqwest::header::HeaderName;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Why a cell of `ctx x conc` cannot fit, if it cannot: the deficit in tokens.
pub fn kv_skip_reason(ctx: u64, conc: u32, capacity: Option<u64>, oversubscribe: f64) -> Option<String> {
    let capacity = capacity?;
    let need = ctx.saturating_mul(u64::from(conc));
    let allowed = (capacity as f64 * oversubscribe).floor() as u64;
    (need > allowed).then(|| {
        format!(
            "needs {need} KV tokens ({conc} x {ctx}) but capacity {capacity} x oversubscribe {oversubscribe} = {allowed}; deficit {} tokens",
            need - allowed
        )
    })
}

/// The decode (and burst) cells of the plan, row-major over ctx then conc.
pub fn decode_cells(cfg: &RunConfig, capacity: Option<u64>) -> Vec<(CellSpec, String, Option<String>)> {
    let mut cells = Vec::new();
    let grid = |burst: bool, cells: &mut Vec<_>| {
        for &ctx in &cfg.ctx {
            for &conc in &cfg.conc {
                let (spec, kind) = if burst {
                    (CellSpec::Burst { ctx, conc }, "burst ")
                } else {
                    (CellSpec::Decode { ctx, conc }, "")
                };
                let label = format!("{kind}ctx={} conc={conc}", format_size(ctx));
                cells.push((spec, label, kv_skip_reason(ctx, conc, capacity, cfg.kv_oversubscribe)));
            }
        }
    };
    grid(false, &mut cells);
    if cfg.run_burst {
        grid(true, &mut cells);
    }
    cells
}

async fn gather_facts(cfg: &RunConfig, client: &ApiClient) -> anyhow::Result<Facts> {
    let (model, max_model_len) = preflight::discover(client, cfg.model.as_deref()).await?;
    let runtime = match (cfg.plans.contains(&PlanKind::Routing), metrics_endpoints(cfg).first()) {
        (true, Some(m)) => {
            let base = super::routing_setup::replica_base(&m.url);
            ApiClient::new(client.http().clone(), &base, cfg.api_key.clone()).version().await
        }
        _ => client.version().await,
    };
    let endpoints = metrics_endpoints(cfg);
    let mut replicas = Vec::new();
    let mut warnings = Vec::new();
    for ep in &endpoints {
        let r = preflight::inspect_replica(client.http(), ep).await;
        if let Some(e) = &r.error {
            warnings
                .push(format!("metrics of {} unavailable at start ({e}); running/requested may be missing", r.name));
        }
        replicas.push(r);
    }
    let mut prompts = Vec::new();
    if cfg.plans.contains(&PlanKind::Decode) {
        let (p, w) = preflight::calibrate_prompts(client, &model, cfg.endpoint, &cfg.ctx).await?;
        prompts = p;
        warnings.extend(w);
    }
    Ok(Facts { model, max_model_len, runtime, replicas, prompts, warnings })
}

/// The replicas' metrics pages: as given, else `<base>/metrics` for a decode-only session (a
/// routing session's base is a gateway, whose page is not a replica's).
fn metrics_endpoints(cfg: &RunConfig) -> Vec<preflight::MetricsEndpoint> {
    let routing = cfg.plans.contains(&PlanKind::Routing);
    match (cfg.no_metrics, cfg.metrics.is_empty()) {
        (true, _) => Vec::new(),
        (false, true) if routing => Vec::new(),
        (false, true) => vec![default_metrics(&cfg.base_url)],
        (false, false) => cfg.metrics.clone(),
    }
}

fn served_by_headers(cfg: &RunConfig) -> Vec<HeaderName> {
    let mut names: Vec<HeaderName> =
        cfg.served_by_header.iter().filter_map(|h| HeaderName::try_from(h.as_str()).ok()).collect();
    for default in ["target-pod", "x-worker-url"] {
        if let Ok(h) = HeaderName::try_from(default)
            && !names.contains(&h)
        {
            names.push(h);
        }
    }
    names
}

fn spawn_poller(
    cfg: &RunConfig,
    http: &reqwest::Client,
    facts: &Facts,
) -> Option<crate::metrics::poller::PollerHandle> {
    let replicas: Vec<MetricsTarget> =
        metrics_endpoints(cfg).into_iter().map(|e| MetricsTarget { name: e.name, url: e.url }).collect();
    let gateway =
        cfg.routing.gateway_metrics.as_ref().map(|u| MetricsTarget { name: "gateway".into(), url: u.clone() });
    if facts.replicas.is_empty() && gateway.is_none() {
        return None;
    }
    let pc = PollerConfig::new(replicas, gateway).with_timing(cfg.poll_interval, Duration::from_secs(2));
    Some(Poller::spawn(http.clone(), pc, CancellationToken::new()))
}

fn push_cell(state: &mut SessionState, spec: CellSpec, label: String, skip: Option<String>) {
    let id = state.cells.len();
    let status = skip.map_or(CellStatus::Pending, CellStatus::Skipped);
    if status == CellStatus::Pending {
        state.queue.push_back(id);
    }
    state.cells.push(super::state::CellEntry { spec, label, status, attempts: Vec::new() });
}

/// Every cell of the plan, decode (and burst) first, then the routing phases.
fn build_state(cfg: &RunConfig, facts: &Facts, routing: Option<&RoutingEnv>, started: Instant) -> SessionState {
    let mut state = SessionState::new(Vec::new(), started);
    for kind in &cfg.plans {
        match kind {
            PlanKind::Decode => {
                for (spec, label, skip) in decode_cells(cfg, facts.kv_capacity()) {
                    push_cell(&mut state, spec, label, skip);
                }
            }
            PlanKind::Routing => {
                for p in routing.map(|r| r.phases.as_slice()).unwrap_or_default() {
                    let spec =
                        CellSpec::Routing { round: p.round, scenario: p.scenario.name.clone(), route: p.route.clone() };
                    push_cell(&mut state, spec, p.name.clone(), None);
                }
            }
        }
    }
    state
}

/// Runs preflight and starts the session runner. An unreachable target or an unusable plan
/// is an error here, before any load is sent.
pub async fn start(cfg: RunConfig) -> anyhow::Result<SessionHandles> {
    let http = crate::net::client_builder().pool_idle_timeout(Duration::from_secs(90)).build()?;
    let client = ApiClient::new(http.clone(), &cfg.base_url, cfg.api_key.clone());
    let mut facts = gather_facts(&cfg, &client).await?;
    let (routing, gateway_version) = match cfg.plans.contains(&PlanKind::Routing) {
        true => {
            let env = super::routing_setup::routing_env(&cfg, &client, &facts.model, &metrics_endpoints(&cfg)).await?;
            facts.warnings.extend(routing_warnings(&cfg, &env));
            (Some(Arc::new(env)), client.version().await)
        }
        false => (None, None),
    };
    let started = Instant::now();
    let poller = spawn_poller(&cfg, &http, &facts);
    let writer = ReportWriter::new(cfg.out.clone());
    let report_path = writer.path().to_path_buf();
    let state = build_state(&cfg, &facts, routing.as_deref(), started);
    let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
    let (ev_tx, ev_rx) = mpsc::unbounded_channel();
    let (live_tx, live_rx) = watch::channel(LiveView::default());
    let metrics = poller.as_ref().map(|p| p.subscribe());
    let env = CellEnv {
        http,
        base: client.base().to_string(),
        headers: client.headers(),
        served_by: served_by_headers(&cfg),
        poller,
        live_tx,
        events: ev_tx,
        started,
        cfg: Arc::new(cfg),
        facts: Arc::new(facts),
        started_wall: now_rfc3339(),
        gateway_version,
        notes: std::sync::Mutex::new(Vec::new()),
        routing,
    };
    let snap = super::assemble::snapshot(&env, &state, &writer);
    let (snap_tx, snap_rx) = watch::channel(Arc::new(snap));
    env.emit(RunnerEvent::Log(format!("target {} model {}", redact_url(&env.base), env.facts.model)));
    let events = env.events.clone();
    let sink = ReportSink::spawn(writer, move |outcome| {
        let _ = events.send(saved_event(outcome));
    })?;
    let runner = Runner { env: Arc::new(env), ctl: Control { state, sink, commands: cmd_rx, snapshot: snap_tx } };
    let join = tokio::spawn(runner.run());
    Ok(SessionHandles { commands: cmd_tx, events: ev_rx, live: live_rx, snapshot: snap_rx, metrics, report_path, join })
}

fn routing_warnings(cfg: &RunConfig, env: &RoutingEnv) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_served_by_header_comes_first() {
        let mut cfg = crate::cli::run::tests_support::config();
        assert_eq!(served_by_headers(&cfg), ["target-pod", "x-worker-url"]);
        cfg.served_by_header = Some("X-Backend".into());
        assert_eq!(served_by_headers(&cfg), ["x-backend", "target-pod", "x-worker-url"]);
        cfg.served_by_header = Some("target-pod".into());
        assert_eq!(served_by_headers(&cfg), ["target-pod", "x-worker-url"]);
    }

    #[test]
    fn kv_skip_matches_the_seed() {
        // Seed 000: 64k x 16 and 128k x 8 ran, 128k x 16 was skipped (oversubscribe 4).
        let cap = Some(360_448);
        assert!(kv_skip_reason(65_536, 16, cap, 4.0).is_none());
        assert!(kv_skip_reason(131_072, 8, cap, 4.0).is_none());
        let r = kv_skip_reason(131_072, 16, cap, 4.0).unwrap();
        assert!(r.contains("deficit 655360 tokens"), "{r}");
        assert!(kv_skip_reason(131_072, 16, None, 4.0).is_none(), "unknown capacity never skips");
    }
}
