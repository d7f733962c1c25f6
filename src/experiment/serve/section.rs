//! The serve experiment behind the [`Experiment`] interface: its cells (every input len x max
//! concurrency x request rate) and its section of the report.

use super::attempt::{PromptSource, ServeCell, planned, run_serve_attempt};
use super::dataset::DatasetPrompts;
use crate::cell::context::CellEnv;
use crate::cell::spec::{CellKey, CellSpec};
use crate::config::serve::ServeConfig;
use crate::config::{Rate, RunConfig};
use crate::experiment::decode::grid::ctx_skip_reason;
use crate::experiment::decode::section::status_and_reason;
use crate::experiment::interface::{CellRun, Experiment, PlannedCell};
use crate::experiment::prepare::{PrepareEnv, Prepared, Setup};
use crate::experiment::record::{Attempt, CellEntry};
use crate::report::dataset::PrefixRepetitionRecord;
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
    /// The dataset file's prompts, instead of token ids (`--dataset-name sharegpt|custom`).
    dataset: Option<std::sync::Arc<DatasetPrompts>>,
}

impl Serve {
    /// The serve cells of `cfg`.
    pub fn new(cfg: &RunConfig) -> Self {
        // A trace arrives on its own schedule: one column a concurrency.
        let traced = cfg.serve.trace.is_some();
        let rates = if cfg.rates.is_empty() || traced { vec![Rate::Inf] } else { cfg.rates.clone() };
        // `prefix_repetition` has one prompt length, its prefix's and suffix's; a trace one row.
        let input_lens = match (traced, cfg.serve.prefix_repetition) {
            (true, _) => vec![0],
            (false, Some(p)) => vec![p.input_len()],
            (false, None) => cfg.ctx.clone(),
        };
        Self {
            input_lens,
            conc: cfg.conc.clone(),
            rates,
            burstiness: cfg.burstiness,
            serve: cfg.serve.clone(),
            ids: Default::default(),
            dataset: None,
        }
    }

    /// The serve cells of `cfg`, sending `dataset`'s prompts: one row, named by the dataset.
    pub fn with_dataset(cfg: &RunConfig, dataset: std::sync::Arc<DatasetPrompts>) -> Self {
        Self { input_lens: vec![0], dataset: Some(dataset), ..Self::new(cfg) }
    }

    /// The cell count: every concurrency x rate of each row.
    fn per_row(cfg: &RunConfig) -> usize {
        cfg.conc.len() * cfg.rates.len().max(1)
    }

    /// The name of the workload when it is not vLLM's `random` one.
    fn workload(&self) -> Option<String> {
        let shared = || self.serve.prefix_repetition.map(|_| "prefix_repetition".to_string());
        let trace = || self.serve.trace.as_ref().map(|t| t.format.name().to_string());
        self.dataset.as_ref().map(|d| d.record.name.clone()).or_else(shared).or_else(trace)
    }

    /// A cell's rate as the report names it: `trace` for a replayed trace's own schedule.
    fn rate_label(&self, rate: Rate) -> String {
        match self.serve.trace {
            Some(_) => "trace".into(),
            None => rate.to_string(),
        }
    }

    /// The label of a row: its input length, or the dataset's name.
    fn row_label(&self, len: u64) -> String {
        self.workload().unwrap_or_else(|| format_size(len))
    }

    /// Where the prompts of the cell at `conc` x `rate` come from, once the vocabulary is
    /// known (token ids only).
    fn source(&self, conc: u32, rate: Rate, ids: &TokenIds) -> PromptSource {
        let Some(prompts) = &self.dataset else {
            return match (self.serve.prefix_repetition, &self.serve.trace) {
                (_, Some(trace)) => PromptSource::Trace { ids: ids.low..ids.high, trace: trace.clone() },
                (Some(shape), None) => PromptSource::SharedPrefix { ids: ids.low..ids.high, shape },
                (None, None) => PromptSource::TokenIds(ids.low..ids.high),
            };
        };
        let c = self.conc.iter().position(|&x| x == conc).unwrap_or(0);
        let r = self.rates.iter().position(|&x| x == rate).unwrap_or(0);
        PromptSource::Dataset { prompts: prompts.clone(), slot: c * self.rates.len() + r }
    }

    fn section(&self, cells: Vec<ServeCellReport>) -> ServeSection {
        let ms = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1e3);
        let goodput_slo =
            self.serve.goodput.map(|g| GoodputSlo { ttft_ms: ms(g.ttft), tpot_ms: ms(g.tpot), e2el_ms: ms(g.e2e) });
        ServeSection {
            ctx_labels: self.input_lens.iter().map(|c| self.row_label(*c)).collect(),
            conc: self.conc.clone(),
            request_rates: self.rates.iter().map(|r| self.rate_label(*r)).collect(),
            burstiness: self.burstiness,
            num_prompts: self.serve.num_prompts,
            output_len: self.serve.output_len,
            seed: self.serve.seed,
            random_range_ratio: self.serve.range_ratio.get(),
            goodput_slo,
            dataset: self.dataset.as_ref().map(|d| d.record.clone()),
            prefix_repetition: self.serve.prefix_repetition.map(|p| PrefixRepetitionRecord {
                prefix_len: p.prefix_len,
                suffix_len: p.suffix_len,
                num_prefixes: p.num_prefixes,
                output_len: p.output_len,
                per_cell: self.serve.num_prompts,
                expected_prefix_hit_ratio: p.expected_hit_ratio(self.serve.num_prompts),
            }),
            trace: self.serve.trace.as_ref().map(trace_record),
            token_ids: self.ids.get().copied(),
            knees: Vec::new(),
            cells,
        }
    }
}

/// The report's record of a replayed trace.
fn trace_record(t: &crate::config::trace::TraceSource) -> crate::report::dataset::TraceRecord {
    let r = &t.trace.requests;
    let mean = |f: fn(&crate::dataset::trace::TraceRequest) -> u64| {
        r.iter().map(|x| f(x) as f64).sum::<f64>() / r.len().max(1) as f64
    };
    crate::report::dataset::TraceRecord {
        name: t.format.name().into(),
        path: t.path.display().to_string(),
        sha256: t.trace.sha256.clone(),
        bytes: t.trace.bytes,
        entries: t.trace.entries,
        replayed: r.len() as u64,
        replay_speed: t.speed.get(),
        span_s: t.trace.span_ms() / 1e3,
        block_tokens: crate::dataset::trace::BLOCK_TOKENS,
        mean_input_tokens: mean(|x| x.input_len),
        mean_output_tokens: mean(|x| x.output_len),
        expected_prefix_hit_ratio: t.trace.expected_hit_ratio(),
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
        Box::pin(async move {
            // `--slo-search` replaces the fixed cells with its search (`experiment::slo_search`).
            if env.cfg.slo_search.is_some() {
                return Ok(Prepared::default());
            }
            let serve = match super::dataset_sizing::for_session(&env, Serve::per_row(env.cfg)).await? {
                Some(d) => Serve::with_dataset(env.cfg, d),
                None => Serve::new(env.cfg),
            };
            Ok(Prepared::of(std::sync::Arc::new(serve)))
        })
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
                    let (label, skip) = match self.workload() {
                        Some(name) => (format!("serve {name} conc={conc} rate={}", self.rate_label(rate)), None),
                        None => (format!("serve in={} conc={conc} rate={rate}", format_size(len)), plan_skip(len)),
                    };
                    out.push(PlannedCell { spec, label, skip });
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
        if let Some(t) = &self.serve.trace {
            return Some(t.span() + planned(1, self.serve.output_len, 1, Rate::Inf));
        }
        Some(planned(self.serve.num_prompts, self.serve.output_len, conc, rate.unwrap_or(Rate::Inf)))
    }

    fn recover(&self, report: &SessionReport, spec: &CellSpec, _label: &str) -> Vec<Attempt> {
        let CellKey::Grid { ctx, conc, rate } = spec.key else { return Vec::new() };
        let rate = self.rate_label(rate.unwrap_or(Rate::Inf));
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
                search: None,
                opens_at: cell.opens_at,
            };
            // A failed probe is not kept: a transient refusal (a 429) is tried again next cell.
            // Dataset prompts are text: no vocabulary to probe.
            let ids = match self.dataset {
                Some(_) => Ok(TokenIds { vocab: 0, low: 0, high: 0, probes: 0, accepted: 0 }),
                None => self.ids.get_or_try_init(|| super::vocab::probe(&env.target, &env.facts.model)).await.copied(),
            };
            let attempt = match ids {
                Ok(ids) => run_serve_attempt(env, &s, self.source(conc, s.rate, &ids), cancel).await,
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
                ctx_label: self.row_label(ctx),
                max_concurrency: conc,
                request_rate: self.rate_label(rate.unwrap_or(Rate::Inf)),
                status,
                timeout_reason,
                skip,
                attempts,
                baseline: Vec::new(),
                runs: None,
            });
        }
        if !out.is_empty() {
            let mut section = self.section(out);
            // Each cell as its headline reads it: with repetitions the mean of its runs.
            let views: Vec<_> = cells.iter().map(|c| c.shown_with_stats()).collect();
            let shown = cells.iter().zip(&views).enumerate().map(|(i, (c, (a, stats)))| {
                (i, &c.spec, a.as_deref().and_then(Attempt::as_serve), stats.get("output_tok_s"))
            });
            section.knees = super::knee::serve_knees(shown).into_iter().map(|k| k.row).collect();
            report.serve = Some(section);
        }
    }
}
