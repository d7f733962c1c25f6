//! Assembling the JSON report and the monitor's snapshot from the session state.

use super::env::CellEnv;
use super::state::{Attempt, CellSpec, CellStatus, SessionState};
use super::view::{CellSummary, SessionSnapshot};
use crate::load::client::redact_url;
use crate::report::json::{
    BurstCellReport, BurstSection, CalibrationInfo, DecodeCell, DecodeSection, PlanInfo, ReplicaInfo, SCHEMA_VERSION,
    SessionReport, TargetInfo, ToolInfo,
};
use crate::report::status::{AttemptStatus, CellOutcome};
use crate::report::writer::{ReportWriter, now_rfc3339};
use crate::routing::record::RoutingPhase;
use crate::units::format_size;

/// The report of the session as it stands.
pub fn assemble(env: &CellEnv, state: &SessionState) -> SessionReport {
    let facts = &env.facts;
    let phases: Vec<RoutingPhase> = state
        .cells
        .iter()
        .filter_map(|c| match c.attempts.last().map(|a| &**a) {
            Some(Attempt::Routing(p)) if c.status.is_final() => Some((**p).clone()),
            _ => None,
        })
        .collect();
    let mut history: Vec<RoutingPhase> = state
        .cells
        .iter()
        .flat_map(|c| c.attempts.iter())
        .filter_map(|a| match &**a {
            Attempt::Routing(p) => Some((**p).clone()),
            _ => None,
        })
        .collect();
    history.sort_by(|a, b| a.started_at.total_cmp(&b.started_at));
    let planned_phases = state.cells.iter().filter(|c| matches!(c.spec, CellSpec::Routing { .. })).count();
    SessionReport {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo { name: "llm-decode-bench".into(), version: env!("CARGO_PKG_VERSION").into() },
        started_at: env.started_wall.clone(),
        updated_at: now_rfc3339(),
        complete: state.all_final() && !state.stopped,
        model: facts.model.clone(),
        runtime: facts.runtime.clone(),
        gateway_version: env.gateway_version.clone(),
        replicas: facts.replicas.len(),
        measured_phases: phases.len(),
        planned_phases,
        target: target_info(env),
        plan: plan_info(env),
        calibration: facts
            .prompts
            .iter()
            .map(|p| CalibrationInfo { ctx: p.ctx, prompt_tokens: p.tokens, method: p.method.clone() })
            .collect(),
        decode: decode_section(env, state),
        burst: burst_section(env, state),
        phases,
        phase_history: history,
        actions: state.actions.clone(),
        replica_series: super::series::replica_series(env),
        warnings: env.warnings(),
    }
}

fn target_info(env: &CellEnv) -> TargetInfo {
    let facts = &env.facts;
    TargetInfo {
        base_url: redact_url(&env.base),
        endpoint: env.cfg.endpoint.as_str().into(),
        max_model_len: facts.max_model_len,
        kv_capacity_tokens: facts.kv_capacity(),
        engine_dialect: facts.dialect().as_str().into(),
        replica_info: facts
            .replicas
            .iter()
            .map(|r| ReplicaInfo {
                name: r.name.clone(),
                metrics_url: r.url.clone(),
                dialect: r.dialect.as_str().into(),
                kv_capacity_tokens: r.kv_capacity,
            })
            .collect(),
    }
}

fn plan_info(env: &CellEnv) -> PlanInfo {
    let cfg = &env.cfg;
    PlanInfo {
        kinds: cfg.plans.iter().map(|p| p.as_str().to_string()).collect(),
        ctx: cfg.ctx.clone(),
        conc: cfg.conc.clone(),
        window_s: cfg.window.as_secs_f64(),
        warmup_timeout_s: cfg.warmup_timeout.as_secs_f64(),
        kv_oversubscribe: cfg.kv_oversubscribe,
        run_burst: cfg.run_burst,
    }
}

fn status_and_reason(status: &CellStatus) -> (CellOutcome, Option<String>) {
    match status {
        CellStatus::Skipped(r) => (CellOutcome::Skipped, Some(r.clone())),
        s => (s.outcome(), None),
    }
}

fn decode_section(env: &CellEnv, state: &SessionState) -> Option<DecodeSection> {
    let mut cells = Vec::new();
    let mut sources = std::collections::BTreeSet::new();
    for c in &state.cells {
        let CellSpec::Decode { ctx, conc } = c.spec else { continue };
        let attempts: Vec<_> = c
            .attempts
            .iter()
            .filter_map(|a| match &**a {
                Attempt::Decode(d) => Some((**d).clone()),
                _ => None,
            })
            .collect();
        if let Some(last) = attempts.last().filter(|a| a.status == AttemptStatus::Measured) {
            sources.insert(last.aggregate_source);
        }
        let (status, timeout_reason) = status_and_reason(&c.status);
        cells.push(DecodeCell { ctx, ctx_label: format_size(ctx), conc, status, timeout_reason, attempts });
    }
    if cells.is_empty() {
        return None;
    }
    // Listed by name, as the report always has.
    let mut sources: Vec<_> = sources.into_iter().collect();
    sources.sort_by_key(|s| s.as_str());
    Some(DecodeSection {
        ctx_labels: env.cfg.ctx.iter().map(|c| format_size(*c)).collect(),
        conc: env.cfg.conc.clone(),
        cells,
        aggregate_sources: sources,
    })
}

fn burst_section(env: &CellEnv, state: &SessionState) -> Option<BurstSection> {
    let mut cells = Vec::new();
    for c in &state.cells {
        let CellSpec::Burst { ctx, conc } = c.spec else { continue };
        let attempts = c
            .attempts
            .iter()
            .filter_map(|a| match &**a {
                Attempt::Burst(b) => Some((**b).clone()),
                _ => None,
            })
            .collect();
        let (status, timeout_reason) = status_and_reason(&c.status);
        cells.push(BurstCellReport { ctx, ctx_label: format_size(ctx), conc, status, timeout_reason, attempts });
    }
    (!cells.is_empty()).then(|| BurstSection {
        ctx_labels: env.cfg.ctx.iter().map(|c| format_size(*c)).collect(),
        conc: env.cfg.conc.clone(),
        cells,
    })
}

/// The monitor's snapshot of the session.
pub fn snapshot(env: &CellEnv, state: &SessionState, writer: &ReportWriter) -> SessionSnapshot {
    SessionSnapshot {
        target: redact_url(&env.base),
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
    }
}
