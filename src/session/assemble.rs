//! Assembling the JSON report and the monitor's snapshot from the session state.

use super::prior::Prior;
use super::snapshot::{CellSummary, SessionSnapshot};
use super::state::SessionState;
use crate::cell::context::CellEnv;
use crate::cell::facts::ReplicaFacts;
use crate::experiment::{CellEntry, Experiments};
use crate::load::client::redact_url;
use crate::metrics::EngineDialect;
use crate::report::json::{
    CalibrationInfo, PlanInfo, ReplicaInfo, SCHEMA_VERSION, SessionReport, TargetInfo, ToolInfo,
};
use crate::report::writer::{ReportWriter, now_rfc3339};

/// The shard that writes this report, in a sharded session: its slice, the session id, the
/// clock as the kernel reads it now, and how its attempts kept the timeline.
fn shard_section(env: &CellEnv, state: &SessionState) -> Option<crate::report::shard::ShardSection> {
    let (cfg, shard) = (&env.cfg, env.cfg.shard?);
    Some(crate::report::shard::ShardSection {
        index: shard.index,
        count: shard.count,
        session_id: cfg.session_id.clone().unwrap_or_default(),
        start_at_unix_s: cfg
            .start_at
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs_f64()),
        clock: super::clock::now(),
        timeline: state.slots.clone(),
    })
}

/// The report of the session as it stands.
pub(crate) fn assemble(env: &CellEnv, prior: &Prior, experiments: &Experiments, state: &SessionState) -> SessionReport {
    let facts = &env.facts;
    let mut report = SessionReport {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo { name: "llm-decode-bench".into(), version: env!("CARGO_PKG_VERSION").into() },
        started_at: env.started_wall.clone(),
        updated_at: now_rfc3339(),
        complete: state.all_final() && !state.stopped,
        model: facts.model.clone(),
        runtime: facts.runtime.clone(),
        gateway_version: facts.gateway_version.clone(),
        replicas: facts.replicas.len(),
        measured_phases: 0,
        planned_phases: 0,
        target: target_info(env),
        plan: plan_info(env, prior),
        calibration: facts
            .prompts
            .iter()
            .map(|p| CalibrationInfo { ctx: p.ctx, prompt_tokens: p.tokens, method: p.method.clone() })
            .collect(),
        decode: None,
        burst: None,
        serve: None,
        extensions: Vec::new(),
        phases: Vec::new(),
        phase_history: Vec::new(),
        actions: state.actions.clone(),
        replica_series: super::series::replica_series(env),
        replica_stale: Default::default(),
        warnings: env.warnings(),
        metrics_source: super::prom_source::metrics_source(env),
        halted: env.halt.reason(),
        sweep: None,
        shard: shard_section(env, state),
        merge: None,
    };
    for e in experiments {
        let cells: Vec<&CellEntry> = state.cells.iter().filter(|c| e.owns(&c.spec)).collect();
        e.report(env, &cells, &mut report);
    }
    super::series::add_poll_facts(env, &mut report);
    crate::report::runs::annotate(&mut report, env.cfg.num_runs);
    if let Some(r) = &prior.resume {
        super::resume::merge_history(&r.report, &mut report);
    }
    if let Some(b) = &prior.baseline {
        crate::report::baseline::annotate::annotate(&mut report, b);
    }
    report
}

fn target_info(env: &CellEnv) -> TargetInfo {
    let facts = &env.facts;
    let replica_info: Vec<ReplicaInfo> = facts.replicas.iter().map(|r| replica_info(env, r)).collect();
    let kv_capacity_tokens = crate::cell::facts::known_sum(replica_info.iter().map(|r| r.kv_capacity_tokens));
    let dialect = replica_info.iter().map(|r| r.dialect.as_str()).find(|d| *d != EngineDialect::Unknown.as_str());
    TargetInfo {
        base_url: redact_url(&env.target.base),
        endpoint: env.cfg.endpoint.as_str().into(),
        max_model_len: facts.max_model_len,
        kv_capacity_tokens,
        engine_dialect: dialect.unwrap_or(facts.dialect().as_str()).into(),
        replica_info,
        connection_reuse: env.target.backend.stream_reuse().map(|r| r.report()),
    }
}

/// A replica's facts; what preflight could not read is taken from the poller once the replica
/// answered a later poll.
fn replica_info(env: &CellEnv, r: &ReplicaFacts) -> ReplicaInfo {
    let latest = env.poller.as_ref().map(|p| p.latest());
    let view = latest.as_ref().and_then(|s| s.replica(&r.name));
    let dialect = match (r.dialect, view.map(|v| v.dialect)) {
        (EngineDialect::Unknown, Some(polled)) => polled,
        (d, _) => d,
    };
    ReplicaInfo {
        name: r.name.clone(),
        metrics_url: r.url.clone(),
        dialect: dialect.as_str().into(),
        kv_capacity_tokens: env.replica_kv_capacity(r, latest.as_deref()),
    }
}

fn plan_info(env: &CellEnv, prior: &Prior) -> PlanInfo {
    plan_info_of(&env.cfg, prior)
}

/// What `cfg` asks to run, as the report's `plan` records it (`prior`'s baseline named).
pub(crate) fn plan_info_of(cfg: &crate::config::RunConfig, prior: &Prior) -> PlanInfo {
    PlanInfo {
        kinds: cfg.plans.iter().map(|p| p.as_str().to_string()).collect(),
        ctx: cfg.ctx.clone(),
        conc: cfg.conc.clone(),
        window_s: cfg.window.as_secs_f64(),
        warmup_timeout_s: cfg.decode.warmup_timeout.as_secs_f64(),
        kv_oversubscribe: cfg.decode.kv_oversubscribe,
        run_burst: cfg.decode.run_burst,
        settings: cfg.settings(),
        slo: Some(crate::report::goodput::PlanSlo::of(&cfg.slo, cfg.slo_source)),
        baseline: prior.baseline.as_ref().map(|b| b.info()),
    }
}

/// The monitor's snapshot of the session.
pub(crate) fn snapshot(env: &CellEnv, prior: &Prior, state: &SessionState, writer: &ReportWriter) -> SessionSnapshot {
    SessionSnapshot {
        target: redact_url(&env.target.base),
        model: env.facts.model.clone(),
        dialect: env.facts.dialect().as_str().into(),
        plan: env.cfg.plans.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(","),
        started: state.started,
        cells: state.cells.iter().map(CellSummary::of).collect(),
        current: state.current,
        paused: state.paused,
        finished: state.stopped || state.all_final(),
        report_path: writer.path().display().to_string(),
        actions: state.actions.len(),
        timing: state.timing.clone(),
        slo: Some(crate::report::goodput::PlanSlo::of(&env.cfg.slo, env.cfg.slo_source)),
        baseline: prior.baseline.clone(),
        shard: super::shard_view::ShardView::of(&env.cfg),
        waiting: state.waiting.clone(),
    }
}
