//! Building the session: preflight, the cell plan (with KV-capacity skips) and the runner.

use super::handles::SessionHandles;
use super::preflight::{self, default_metrics};
use super::prior::Prior;
use super::progress::Timing;
use super::runner::{Control, Runner, saved_event};
use super::state::{CellEntry, CellStatus, SessionState};
use crate::cell::context::{CellEnv, Target};
use crate::cell::control::{LiveAttempt, RunnerEvent};
use crate::cell::facts::Facts;
use crate::config::MetricsEndpoint;
use crate::config::{PlanKind, RunConfig};
use crate::experiment::Experiments;
use crate::experiment::prepare::{PrepareEnv, Setup, for_plan, prepare_all};
use crate::load::backend::{HttpBackend, SharedBackend};
use crate::load::client::{ApiClient, redact_url};
use crate::metrics::poller::{MetricsTarget, Poller, PollerConfig};
use crate::report::sink::ReportSink;
use crate::report::writer::{ReportWriter, now_rfc3339};
use reqwest::header::HeaderName;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What preflight found, and the lines to say as the session starts.
async fn gather_facts(cfg: &RunConfig, client: &ApiClient) -> anyhow::Result<(Facts, Vec<String>)> {
    let prom = match &cfg.prometheus {
        Some(server) => Some(super::prom_source::discover(&**client.backend(), server).await?),
        None => None,
    };
    let replica_clients: Vec<ApiClient> = metrics_endpoints(cfg)
        .iter()
        .map(|m| crate::net::replica_base(&m.url))
        .filter(|b| b.trim_end_matches('/') != client.base())
        .map(|b| ApiClient::new(client.backend().clone(), &b, cfg.api_key.clone()))
        .collect();
    let found = preflight::discover(client, cfg.model.as_deref(), &replica_clients).await?;
    let (model, max_model_len) = (found.model, found.max_model_len);
    let runtime = match (cfg.plans.contains(&PlanKind::Routing), metrics_endpoints(cfg).first()) {
        (true, Some(m)) => {
            let base = crate::net::replica_base(&m.url);
            ApiClient::new(client.backend().clone(), &base, cfg.api_key.clone()).version_within().await
        }
        _ => client.version_within().await,
    };
    let endpoints = metrics_endpoints(cfg);
    let mut replicas = Vec::new();
    let mut warnings = Vec::new();
    let mut metrics_source = None;
    if let Some(found) = prom {
        warnings.extend(super::prom_source::start_warnings(cfg, &found.source));
        (replicas, metrics_source) = (found.replicas, Some(found.source));
    }
    for ep in &endpoints {
        let r = preflight::inspect_replica(&**client.backend(), ep).await;
        if let Some(e) = &r.error {
            warnings
                .push(format!("metrics of {} unavailable at start ({e}); running/requested may be missing", r.name));
        }
        replicas.push(r);
    }
    let notes: Vec<String> = found.note.into_iter().collect();
    let facts = Facts {
        model,
        max_model_len,
        runtime,
        gateway_version: None,
        replicas,
        prompts: Vec::new(),
        warnings,
        metrics_source,
    };
    Ok((facts, notes))
}

/// The replicas' metrics pages: as given, else `<base>/metrics` for a decode-only session (a
/// routing session's base is a gateway, whose page is not a replica's).
fn metrics_endpoints(cfg: &RunConfig) -> Vec<MetricsEndpoint> {
    let routing = cfg.plans.contains(&PlanKind::Routing);
    match (cfg.no_metrics || cfg.prometheus.is_some(), cfg.metrics.is_empty()) {
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
    backend: &SharedBackend,
    facts: &Facts,
    events: &mpsc::UnboundedSender<RunnerEvent>,
) -> Option<crate::metrics::poller::PollerHandle> {
    if let (Some(server), Some(source)) = (&cfg.prometheus, &facts.metrics_source) {
        let events = events.clone();
        let tell = Box::new(move |line: String| drop(events.send(RunnerEvent::Log(line))));
        return Some(super::prom_source::spawn(cfg, server, backend, &facts.replicas, source, tell));
    }
    let replicas: Vec<MetricsTarget> =
        metrics_endpoints(cfg).into_iter().map(|e| MetricsTarget { name: e.name, url: e.url }).collect();
    let gateway =
        cfg.routing.gateway_metrics.as_ref().map(|u| MetricsTarget { name: "gateway".into(), url: u.clone() });
    if facts.replicas.is_empty() && gateway.is_none() {
        return None;
    }
    let pc = PollerConfig::new(replicas, gateway).with_timing(cfg.poll_interval, Duration::from_secs(2));
    Some(Poller::spawn(backend.clone(), pc, CancellationToken::new()))
}

/// Every cell of the plan, in the order of the experiments.
fn build_state(experiments: &Experiments, started: Instant, runs: u32) -> SessionState {
    let mut state = SessionState::new(Vec::new(), started);
    for cell in experiments.iter().flat_map(|e| e.cells()) {
        let id = state.cells.len();
        let status = cell.skip.map_or(CellStatus::Pending, CellStatus::Skipped);
        if status == CellStatus::Pending {
            state.queue.push_back(id);
        }
        state.cells.push(CellEntry { spec: cell.spec, label: cell.label, status, attempts: Vec::new(), runs });
    }
    state
}

/// Each cell's planned length, seconds, from the experiment that owns it.
fn planned_lengths(experiments: &Experiments, cfg: &RunConfig, state: &SessionState) -> Vec<Option<f64>> {
    let planned = |spec| experiments.iter().find(|e| e.owns(spec)).and_then(|e| e.planned(cfg, spec));
    state.cells.iter().map(|c| planned(&c.spec).map(|d| d.as_secs_f64())).collect()
}

/// The plan `cfg` gives against a target of `kv_capacity` tokens, without a routing
/// environment: each cell's label and planned length, seconds, and the ETA at the start. For
/// tests of what a configuration derives before any load is sent.
#[cfg(test)]
pub(crate) fn dry_plan(cfg: &RunConfig, kv_capacity: Option<u64>) -> (Vec<(String, Option<f64>)>, Option<Duration>) {
    let experiments = crate::experiment::registry::offline(cfg, kv_capacity);
    let mut state = build_state(&experiments, Instant::now(), cfg.num_runs);
    state.timing = Timing::new(planned_lengths(&experiments, cfg, &state));
    let views: Vec<_> = state
        .cells
        .iter()
        .map(|c| super::progress::CellView {
            kind: c.spec.kind,
            done: c.status.is_final(),
            skipped: c.status.is_skipped(),
            runs_left: c.run_progress().map_or(1, |r| r.left().max(1)),
        })
        .collect();
    let eta = state.timing.progress(&views, Instant::now(), None).eta;
    let cells = state.cells.iter().zip(&state.timing.planned).map(|(c, p)| (c.label.clone(), *p)).collect();
    (cells, eta)
}

/// The warning when `--baseline` shares no cell of the plan (nothing will show a delta).
fn baseline_unmatched(prior: &Prior, state: &SessionState) -> Option<String> {
    let b = prior.baseline.as_ref()?;
    let shared = state.cells.iter().any(|c| b.cell(&c.spec.compare_key()).is_some());
    (!shared).then(|| format!("--baseline {}: it has no result for any cell of this plan; no deltas to show", b.path))
}

/// Runs preflight and starts the session runner over HTTP (reqwest). An unreachable target or
/// an unusable plan is an error here, before any load is sent.
pub async fn start(cfg: RunConfig) -> anyhow::Result<SessionHandles> {
    start_continuing(cfg, Prior::default()).await
}

/// [`start`] reading the earlier sessions of `prior`: it continues `--resume`'s report and
/// compares every cell with `--baseline`'s.
pub async fn start_continuing(cfg: RunConfig, prior: Prior) -> anyhow::Result<SessionHandles> {
    if cfg.base_url.starts_with("https://") && crate::net::ca_store_missing() {
        anyhow::bail!(
            "{} is https:// but this system has no CA certificates to verify it with (install ca-certificates, or mount /etc/ssl/certs into the container)",
            crate::net::redact_url(&cfg.base_url)
        );
    }
    let http = HttpBackend::from_builder(|| crate::net::client_builder().pool_idle_timeout(Duration::from_secs(90)))?;
    let http = http.with_sources(&cfg.source_addrs);
    start_session(cfg, prior, Arc::new(http), &[]).await
}

/// [`start`] over `backend`: every exchange with the target (preflight, load, metrics polls)
/// goes through it, e.g. the simulator in process (`crate::sim::inproc`) in tests.
pub async fn start_with(cfg: RunConfig, backend: SharedBackend) -> anyhow::Result<SessionHandles> {
    start_session(cfg, Prior::default(), backend, &[]).await
}

/// [`start_with`], running after the planned kinds the experiments `extra` prepares: kinds from
/// outside the built-in registry (`experiment::registry`), e.g. one defined in a test.
pub async fn start_with_setups(
    cfg: RunConfig,
    backend: SharedBackend,
    extra: &[Arc<dyn Setup>],
) -> anyhow::Result<SessionHandles> {
    start_session(cfg, Prior::default(), backend, extra).await
}

/// The session of `cfg` over `backend`, reading `prior`, with the `extra` experiments after
/// the built-in ones: what every `start*` above calls.
pub async fn start_session(
    cfg: RunConfig,
    prior: Prior,
    backend: SharedBackend,
    extra: &[Arc<dyn Setup>],
) -> anyhow::Result<SessionHandles> {
    let client = ApiClient::new(backend.clone(), &cfg.base_url, cfg.api_key.clone());
    let (mut facts, mut notes) = gather_facts(&cfg, &client).await?;
    let reuse_limit = crate::cell::calibration::reuse_probe_limit(&cfg);
    let reuse_line = preflight::probe_reuse(&client, preflight::stream_endpoint(&cfg), &facts.model, reuse_limit).await;
    if let Some(r) = &prior.resume {
        super::resume::check_model(r, &facts.model)?;
    }
    let setups = for_plan(&cfg, crate::experiment::registry::builtin(), extra);
    let metrics = metrics_endpoints(&cfg);
    let penv = PrepareEnv { cfg: &cfg, client: &client, facts: &facts, metrics: &metrics };
    let prepared = prepare_all(&setups, penv).await?;
    facts.prompts = prepared.prompts;
    facts.warnings.extend(prepared.warnings);
    facts.gateway_version = prepared.gateway_version;
    notes.extend(prepared.notes);
    let (started, started_wall, origin_note) = match &prior.resume {
        Some(r) => {
            let (at, note) = super::resume::origin(&r.report, Instant::now());
            (at, r.report.started_at.clone(), note)
        }
        None => (Instant::now(), now_rfc3339(), None),
    };
    let (ev_tx, ev_rx) = mpsc::unbounded_channel();
    if let Some(reuse) = backend.stream_reuse() {
        let events = ev_tx.clone();
        reuse.on_change(move |line| drop(events.send(RunnerEvent::Log(line))));
    }
    let poller = spawn_poller(&cfg, &backend, &facts, &ev_tx);
    let writer = match (&cfg.out, &cfg.out_dir) {
        (None, Some(dir)) => ReportWriter::in_dir(dir, std::time::SystemTime::now()),
        _ => ReportWriter::new(cfg.out.clone()),
    };
    let report_path = writer.path().to_path_buf();
    let experiments = prepared.experiments;
    let mut state = build_state(&experiments, started, cfg.num_runs);
    if let Some(r) = &prior.resume {
        let kept = super::resume::apply(&r.report, &experiments, &mut state);
        state.act(&super::resume::action(r, kept, &cfg), None);
    }
    state.timing = Timing::new(planned_lengths(&experiments, &cfg, &state));
    let timeline = super::timeline::of_state(&cfg, &state);
    state.timing.timeline = timeline.as_ref().and_then(super::progress::TimelineEta::of);
    let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
    let (live_tx, live_rx) = watch::channel(LiveAttempt::default());
    let metrics = poller.as_ref().map(|p| p.subscribe());
    let target = Target {
        backend,
        base: client.base().to_string(),
        headers: client.headers(),
        served_by: served_by_headers(&cfg),
    };
    let env = CellEnv {
        target,
        poller,
        live_tx,
        events: ev_tx,
        started,
        cfg: Arc::new(cfg),
        facts: Arc::new(facts),
        started_wall,
        notes: std::sync::Mutex::new(Vec::new()),
        announced: Default::default(),
        halt: Default::default(),
        nonce: rand::random(),
    };
    let prior = Arc::new(prior);
    let snap = super::assemble::snapshot(&env, &prior, &state, &writer);
    let (snap_tx, snap_rx) = watch::channel(Arc::new(snap));
    env.emit(RunnerEvent::Log(format!("target {} model {}", redact_url(&env.target.base), env.facts.model)));
    super::shard_view::shard_line(&env.cfg).into_iter().for_each(|l| env.emit(RunnerEvent::Log(l)));
    reuse_line.into_iter().for_each(|l| env.emit(RunnerEvent::Log(l)));
    env.announce(&env.facts.warnings);
    let unmatched = baseline_unmatched(&prior, &state);
    let clock = super::clock::shard_warning(&env.cfg);
    notes.into_iter().chain(origin_note).chain(unmatched).chain(clock).for_each(|n| env.warn(n));
    let events = env.events.clone();
    let frame = env.cfg.report_frame.clone();
    let sink = ReportSink::spawn_framed(writer, frame, move |outcome| {
        let _ = events.send(saved_event(outcome));
    })?;
    let saves = sink.log();
    let runner = Runner {
        env: Arc::new(env),
        experiments,
        ctl: Control { state, prior, sink, commands: cmd_rx, snapshot: snap_tx, timeline },
    };
    let join = tokio::spawn(runner.run());
    Ok(SessionHandles {
        commands: cmd_tx,
        events: ev_rx,
        live: live_rx,
        snapshot: snap_rx,
        metrics,
        report_path,
        saves,
        join,
    })
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
}
