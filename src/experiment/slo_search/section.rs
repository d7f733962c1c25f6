//! The SLO search behind the [`Experiment`] interface, on the extension seam: one cell per
//! serve row (each `--random-input-len`, or the dataset's prompts), each attempt the whole
//! search, and its section of the report (`extensions[]`, kind `slo_search`). It is prepared
//! for `--plan serve` when `--slo-search` is given, in place of the serve plan's fixed cells.

use super::attempt::{SearchCell, run_search};
use super::report::{Outcome, attempt};
use super::search::most_probes;
use crate::cell::context::CellEnv;
use crate::cell::spec::{CellKey, CellSpec};
use crate::config::slo_search::SloSearchConfig;
use crate::config::{PlanKind, RunConfig};
use crate::experiment::decode::grid::ctx_skip_reason;
use crate::experiment::extension::{recover, section};
use crate::experiment::interface::{CellRun, Experiment, PlannedCell};
use crate::experiment::prepare::{PrepareEnv, Prepared, Setup};
use crate::experiment::record::{Attempt, CellEntry};
use crate::experiment::serve::attempt::PromptSource;
use crate::experiment::serve::dataset::DatasetPrompts;
use crate::report::json::SessionReport;
use crate::report::kind::ExperimentKind;
use crate::report::serve::TokenIds;
use crate::report::skip::{Skip, SkipKind};
use crate::units::format_size;
use futures_util::future::BoxFuture;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The experiment's name in the plan and the report.
pub const NAME: &str = "slo_search";

/// The experiment's kind.
pub(crate) fn kind() -> ExperimentKind {
    ExperimentKind::named(NAME).expect("`slo_search` is an extension name")
}

/// One search per serve row.
pub struct SloSearch {
    cfg: SloSearchConfig,
    input_lens: Vec<u64>,
    serve: crate::config::serve::ServeConfig,
    title: String,
    /// The ids prompts are drawn from, probed from the server before the first probe.
    ids: Arc<tokio::sync::OnceCell<TokenIds>>,
    /// The dataset file's prompts, instead of token ids.
    dataset: Option<Arc<DatasetPrompts>>,
}

impl SloSearch {
    /// The searches `cfg` asks for (`cfg.slo_search` must be set), sending `dataset`'s prompts
    /// when given.
    pub fn new(cfg: &RunConfig, dataset: Option<Arc<DatasetPrompts>>) -> Self {
        let search = cfg.slo_search.clone().expect("the SLO search is planned with --slo-search");
        let input_lens = match (&dataset, cfg.serve.prefix_repetition) {
            (Some(_), _) => vec![0],
            (None, Some(p)) => vec![p.input_len()],
            (None, None) => cfg.ctx.clone(),
        };
        let title = format!(
            "SLO search by {}: the largest load where {}% of requests meet {}",
            search.mode.as_str(),
            super::probe::fmt_load(search.target * 100.0),
            cfg.slo.describe()
        );
        Self { cfg: search, input_lens, serve: cfg.serve.clone(), title, ids: Default::default(), dataset }
    }

    /// What a row's prompts are called: the dataset's name, the shared-prefix workload, or the
    /// input length.
    fn row_label(&self, len: u64) -> String {
        match (&self.dataset, self.serve.prefix_repetition) {
            (Some(d), _) => d.record.name.clone(),
            (None, Some(_)) => "prefix_repetition".into(),
            (None, None) => format!("in={}", format_size(len)),
        }
    }

    /// The prompts of probe `k` (0-based) of attempt `attempt`, once the vocabulary is known.
    fn source(&self, ids: &TokenIds, attempt: u32, k: usize) -> PromptSource {
        let range = ids.low..ids.high;
        match (&self.dataset, self.serve.prefix_repetition) {
            (Some(prompts), _) => {
                let slot = (attempt.saturating_sub(1) as usize).saturating_mul(most_probes(&self.cfg)) + k;
                PromptSource::Dataset { prompts: prompts.clone(), slot }
            }
            (None, Some(shape)) => PromptSource::SharedPrefix { ids: range, shape },
            (None, None) => PromptSource::TokenIds(range),
        }
    }
}

/// Prepares the SLO search of `--plan serve --slo-search`: the dataset file's prompts, sized
/// for the most probes the search can take, when one is given.
pub struct SloSearchSetup;

impl Setup for SloSearchSetup {
    fn plan(&self) -> Option<PlanKind> {
        Some(PlanKind::Serve)
    }

    fn prepare<'a>(&'a self, env: PrepareEnv<'a>) -> BoxFuture<'a, anyhow::Result<Prepared>> {
        Box::pin(async move {
            let Some(search) = &env.cfg.slo_search else { return Ok(Prepared::default()) };
            let slots = most_probes(search);
            let dataset = crate::experiment::serve::dataset_sizing::for_session(&env, slots).await?;
            Ok(Prepared::of(Arc::new(SloSearch::new(env.cfg, dataset))))
        })
    }
}

impl Experiment for SloSearch {
    fn kind(&self) -> ExperimentKind {
        kind()
    }

    fn cells(&self) -> Vec<PlannedCell> {
        // The grid's concurrency: the most in flight (the highest load, or every prompt of a rate probe).
        let conc = match self.cfg.mode {
            crate::config::slo_search::SearchMode::Concurrency => self.cfg.max.min(f64::from(u32::MAX)) as u32,
            crate::config::slo_search::SearchMode::Rate => self.serve.num_prompts,
        };
        let skip = |len: u64| {
            (len == 0 && self.dataset.is_none())
                .then(|| Skip::new(SkipKind::Plan, "an empty prompt: serve needs --random-input-len of at least 1"))
        };
        let cell = |len: u64| PlannedCell {
            spec: CellSpec::grid_at(kind(), len, conc, None),
            label: format!("slo_search {} {}", self.row_label(len), self.cfg.mode.as_str()),
            skip: skip(len),
        };
        self.input_lens.iter().map(|&len| cell(len)).collect()
    }

    fn skip_now(&self, env: &CellEnv, spec: &CellSpec) -> Option<Skip> {
        ctx_skip_reason(spec, env.facts.max_model_len)
    }

    fn recover(&self, report: &SessionReport, spec: &CellSpec, _label: &str) -> Vec<Attempt> {
        recover(report, spec)
    }

    fn run<'a>(&'a self, env: &'a CellEnv, cell: CellRun<'a>, cancel: &'a CancellationToken) -> BoxFuture<'a, Attempt> {
        Box::pin(async move {
            let CellKey::Grid { ctx, .. } = cell.spec.key else { unreachable!("SLO search cells are grid cells") };
            let c = SearchCell { cell: cell.id, label: cell.label.to_string(), input_len: ctx, attempt: cell.attempt };
            // Dataset prompts are text: no vocabulary to probe.
            let ids = match self.dataset {
                Some(_) => Ok(TokenIds { vocab: 0, low: 0, high: 0, probes: 0, accepted: 0 }),
                None => {
                    let probe = || crate::experiment::serve::vocab::probe(&env.target, &env.facts.model);
                    self.ids.get_or_try_init(probe).await.copied()
                }
            };
            let a = match ids {
                Ok(ids) => run_search(env, &c, &self.cfg, &|k| self.source(&ids, cell.attempt, k), cancel).await,
                Err((kind, why)) => refused(env, &c, &self.cfg, kind, &why),
            };
            Attempt::Extension(Box::new(a))
        })
    }

    fn report(&self, _env: &CellEnv, cells: &[&CellEntry], report: &mut SessionReport) {
        report.extensions.push(section(kind(), &self.title, cells));
    }
}

/// A search that sent no load: the vocabulary probe failed (`why`, logged), its request filed
/// under `kind`.
fn refused(
    env: &CellEnv,
    c: &SearchCell,
    cfg: &SloSearchConfig,
    kind: crate::load::sample::ErrorKind,
    why: &str,
) -> crate::report::extension::ExtensionAttempt {
    env.emit(crate::cell::control::RunnerEvent::Log(format!("{}: no load sent: {why}", c.label)));
    let out = Outcome { cfg: cfg.clone(), slo: env.cfg.slo.goodput_arg(), bracket: (None, None), ending: None };
    let errors = ([(kind, 1)].into(), [(kind, why.to_string())].into());
    let started_s = env.since_start(tokio::time::Instant::now());
    attempt((c.attempt, started_s, 0.0), &[], errors, None, &out)
}
