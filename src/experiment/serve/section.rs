//! The serve experiment behind the [`Experiment`] interface: its cells (every input len x max
//! concurrency x request rate) and its section of the report.

use super::attempt::{ServeCell, planned, run_serve_attempt};
use crate::cell::context::CellEnv;
use crate::cell::spec::{CellKey, CellSpec};
use crate::config::serve::ServeConfig;
use crate::config::{Rate, RunConfig};
use crate::experiment::decode::grid::ctx_skip_reason;
use crate::experiment::decode::section::status_and_reason;
use crate::experiment::interface::{CellRun, Experiment, PlannedCell};
use crate::experiment::prepare::{PrepareEnv, Prepared, Setup};
use crate::experiment::record::{Attempt, CellEntry};
use crate::report::json::SessionReport;
use crate::report::kind::ExperimentKind;
use crate::report::serve::{GoodputSlo, ServeCellReport, ServeSection, TokenIds};
use crate::report::skip::{Skip, SkipKind};
use crate::units::format_size;
use futures_util::future::BoxFuture;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The experiment's name in the plan and the report.
pub(crate) const KIND: ExperimentKind = ExperimentKind::Serve;

/// One cell per `--random-input-len` x `--max-concurrency` x `--request-rate` (none: `inf`).
#[derive(Debug, Clone)]
pub struct Serve {
    input_lens: Vec<u64>,
    conc: Vec<u32>,
    rates: Vec<Rate>,
    burstiness: f64,
    serve: ServeConfig,
    /// The ids prompts are drawn from, probed from the server before the first cell runs.
    ids: std::sync::Arc<tokio::sync::OnceCell<TokenIds>>,
}

impl Serve {
    /// The serve cells of `cfg`.
    pub fn new(cfg: &RunConfig) -> Self {
        let rates = if cfg.rates.is_empty() { vec![Rate::Inf] } else { cfg.rates.clone() };
        Self {
            input_lens: cfg.ctx.clone(),
            conc: cfg.conc.clone(),
            rates,
            burstiness: cfg.burstiness,
            serve: cfg.serve.clone(),
            ids: Default::default(),
        }
    }

    fn section(&self, cells: Vec<ServeCellReport>) -> ServeSection {
        let ms = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1e3);
        let goodput_slo =
            self.serve.goodput.map(|g| GoodputSlo { ttft_ms: ms(g.ttft), tpot_ms: ms(g.tpot), e2el_ms: ms(g.e2e) });
        ServeSection {
            ctx_labels: self.input_lens.iter().map(|c| format_size(*c)).collect(),
            conc: self.conc.clone(),
            request_rates: self.rates.iter().map(Rate::to_string).collect(),
            burstiness: self.burstiness,
            num_prompts: self.serve.num_prompts,
            output_len: self.serve.output_len,
            seed: self.serve.seed,
            random_range_ratio: self.serve.range_ratio.get(),
            goodput_slo,
            token_ids: self.ids.get().copied(),
            knees: Vec::new(),
            cells,
        }
    }
}

/// The latest attempt of a serve cell.
fn last_serve(c: &CellEntry) -> Option<&crate::report::serve::ServeAttempt> {
    match c.attempts.last().map(|a| &**a) {
        Some(Attempt::Serve(s)) => Some(&**s),
        _ => None,
    }
}

/// Why a serve cell of `input_len` tokens cannot run before it starts, if it cannot.
fn plan_skip(input_len: u64) -> Option<Skip> {
    (input_len == 0).then(|| Skip::new(SkipKind::Plan, "an empty prompt: serve needs --random-input-len of at least 1"))
}

/// Prepares `--plan serve`: its cells need nothing beyond what the session's preflight found
/// (prompts are random token ids, drawn per attempt).
pub struct ServeSetup;

impl Setup for ServeSetup {
    fn plan(&self) -> Option<crate::config::PlanKind> {
        Some(crate::config::PlanKind::Serve)
    }

    fn prepare<'a>(&'a self, env: PrepareEnv<'a>) -> BoxFuture<'a, anyhow::Result<Prepared>> {
        Box::pin(std::future::ready(Ok(Prepared::of(std::sync::Arc::new(Serve::new(env.cfg))))))
    }
}

impl Experiment for Serve {
    fn kind(&self) -> ExperimentKind {
        KIND
    }

    fn cells(&self) -> Vec<PlannedCell> {
        let mut out = Vec::new();
        for &len in &self.input_lens {
            for &conc in &self.conc {
                for &rate in &self.rates {
                    let spec = CellSpec::grid_at(KIND, len, conc, Some(rate));
                    let label = format!("serve in={} conc={conc} rate={rate}", format_size(len));
                    out.push(PlannedCell { spec, label, skip: plan_skip(len) });
                }
            }
        }
        out
    }

    fn skip_now(&self, env: &CellEnv, spec: &CellSpec) -> Option<Skip> {
        ctx_skip_reason(spec, env.facts.max_model_len)
    }

    fn planned(&self, _cfg: &RunConfig, spec: &CellSpec) -> Option<Duration> {
        let CellKey::Grid { conc, rate, .. } = spec.key else { return None };
        Some(planned(self.serve.num_prompts, self.serve.output_len, conc, rate.unwrap_or(Rate::Inf)))
    }

    fn recover(&self, report: &SessionReport, spec: &CellSpec, _label: &str) -> Vec<Attempt> {
        let CellKey::Grid { ctx, conc, rate } = spec.key else { return Vec::new() };
        let rate = rate.unwrap_or(Rate::Inf).to_string();
        let cells = report.serve.iter().flat_map(|s| s.cells.iter());
        let own = cells.filter(|c| (c.input_len, c.max_concurrency, &c.request_rate) == (ctx, conc, &rate));
        own.flat_map(|c| c.attempts.iter()).map(|a| Attempt::Serve(Box::new(a.clone()))).collect()
    }

    fn run<'a>(&'a self, env: &'a CellEnv, cell: CellRun<'a>, cancel: &'a CancellationToken) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let CellKey::Grid { ctx, conc, rate } = cell.spec.key else { unreachable!("serve cells are grid cells") };
            let s = ServeCell {
                cell: cell.id,
                label: cell.label.to_string(),
                input_len: ctx,
                max_concurrency: conc,
                rate: rate.unwrap_or(Rate::Inf),
                attempt: cell.attempt,
            };
            // A failed probe is not kept: a transient refusal (a 429) is tried again next cell.
            let ids = self.ids.get_or_try_init(|| super::vocab::probe(&env.target, &env.facts.model)).await;
            let attempt = match ids {
                Ok(ids) => run_serve_attempt(env, &s, ids.low..ids.high, cancel).await,
                Err((kind, why)) => super::attempt::refused_attempt(env, &s, kind, &why),
            };
            Attempt::Serve(Box::new(attempt))
        })
    }

    fn report(&self, _env: &CellEnv, cells: &[&CellEntry], report: &mut SessionReport) {
        let mut out = Vec::new();
        for c in cells {
            let CellKey::Grid { ctx, conc, rate } = c.spec.key else { continue };
            let attempts = c
                .attempts
                .iter()
                .filter_map(|a| match &**a {
                    Attempt::Serve(s) => Some((**s).clone()),
                    _ => None,
                })
                .collect();
            let (status, timeout_reason, skip) = status_and_reason(&c.status);
            out.push(ServeCellReport {
                input_len: ctx,
                ctx_label: format_size(ctx),
                max_concurrency: conc,
                request_rate: rate.unwrap_or(Rate::Inf).to_string(),
                status,
                timeout_reason,
                skip,
                attempts,
                baseline: Vec::new(),
            });
        }
        if !out.is_empty() {
            let mut section = self.section(out);
            let latest = cells.iter().enumerate().map(|(i, c)| (i, &c.spec, last_serve(c)));
            section.knees = super::knee::serve_knees(latest).into_iter().map(|k| k.row).collect();
            report.serve = Some(section);
        }
    }
}
