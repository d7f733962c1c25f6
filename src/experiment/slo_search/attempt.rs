//! One attempt of an SLO search cell: the whole search. Each probe is a serve attempt at the
//! probed load (`serve::run_serve_attempt`: the serve workload, dispatcher and figures), its
//! own prompts (seeded per probe, so no probe finds another's in a prefix cache); the search
//! (`search.rs`) judges it and names the next load. The live view carries the bracket with each
//! probe, and the log a line per probe. A probe cut short by a stop or skip is not judged.

use super::probe::{Probe, fmt_load, tally};
use super::report::{Outcome, attempt};
use super::search::Search;
use crate::cell::context::CellEnv;
use crate::cell::control::{LiveAttempt, RunnerEvent};
use crate::cell::search_live::SearchLive;
use crate::config::Rate;
use crate::config::slo_search::{SearchMode, SloSearchConfig};
use crate::experiment::serve::attempt::{PromptSource, ServeCell, run_serve_attempt};
use crate::load::sample::{ErrorKind, RecordedOutcome};
use crate::report::extension::ExtensionAttempt;
use crate::report::serve::ServeAttempt;
use crate::stats::Samples;
use std::collections::BTreeMap;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Identifies the search cell being run.
#[derive(Debug, Clone)]
pub(crate) struct SearchCell {
    /// Index in the session plan.
    pub cell: usize,
    /// Label.
    pub label: String,
    /// Prompt length, tokens (0: a dataset's own).
    pub input_len: u64,
    /// 1-based attempt number.
    pub attempt: u32,
}

/// What the probes gathered beyond the search's own tallies.
#[derive(Default)]
struct Gathered {
    probes: Vec<Probe>,
    errors: BTreeMap<ErrorKind, u64>,
    examples: BTreeMap<ErrorKind, String>,
    ttft: Samples,
}

impl Gathered {
    fn add(&mut self, a: &ServeAttempt) {
        for (k, n) in &a.errors {
            *self.errors.entry(*k).or_default() += n;
        }
        for (k, e) in &a.error_examples {
            self.examples.entry(*k).or_insert_with(|| e.clone());
        }
        let done = a.request_samples.iter().filter(|r| r.outcome == RecordedOutcome::Completed);
        done.filter_map(|r| r.ttft_ms).for_each(|t| self.ttft.push(t));
    }
}

/// The serve cell of probe `index` (1-based) at `load`: at most `load` in flight with every
/// prompt at once (concurrency), or `load` requests/s with none held back (rate).
fn probe_cell(env: &CellEnv, cell: &SearchCell, mode: SearchMode, (index, load): (usize, f64)) -> ServeCell {
    let n = env.cfg.serve.num_prompts;
    let (max_concurrency, rate) = match mode {
        SearchMode::Concurrency => (load as u32, Rate::Inf),
        SearchMode::Rate => (n, Rate::PerSecond(load)),
    };
    ServeCell {
        cell: cell.cell,
        label: format!("{} probe {index}: {} {}", cell.label, mode.as_str(), fmt_load(load)),
        input_len: cell.input_len,
        max_concurrency,
        rate,
        // Its own seed (`ServeCell::seed` mixes the attempt in): no two probes share prompts.
        attempt: cell.attempt.saturating_mul(10_000).saturating_add(index as u32),
        search: None,
        opens_at: None,
    }
}

/// Runs the search of `cell` under `cfg` until it ends (or `cancel`); probe k (0-based) sends
/// the prompts of `source(k)`.
pub(crate) async fn run_search(
    env: &CellEnv,
    cell: &SearchCell,
    cfg: &SloSearchConfig,
    source: &(dyn Fn(usize) -> PromptSource + Sync),
    cancel: &CancellationToken,
) -> ExtensionAttempt {
    let started = Instant::now();
    let (mode, unit) = (cfg.mode.as_str(), cfg.mode.unit());
    let slo = env.cfg.slo.goodput_arg();
    let mut search = Search::new(cfg.clone());
    let mut live = SearchLive { mode, unit, slo: slo.clone(), target: cfg.target, ..SearchLive::default() };
    let mut got = Gathered::default();
    while let Some(step) = search.next() {
        let index = got.probes.len() + 1;
        live.running = Some((index, step.load, step.repeat));
        let spec = ServeCell { search: Some(live.clone()), ..probe_cell(env, cell, cfg.mode, (index, step.load)) };
        let a = run_serve_attempt(env, &spec, source(index - 1), cancel).await;
        if cancel.is_cancelled() {
            break;
        }
        got.add(&a);
        let t = tally(&a, &env.cfg.slo);
        let probe = Probe::of(step, &a, t, search.record(t));
        env.emit(RunnerEvent::Log(format!("{}: {}", cell.label, probe.line(index, mode, unit))));
        live.done.push(probe.live());
        (live.last_pass, live.first_fail) = search.bracket();
        got.probes.push(probe);
    }
    live.running = None;
    live.ended = search.ending().map(|e| e.as_str().to_string());
    let (pass, fail) = search.bracket();
    let show = |v: Option<f64>| v.map_or_else(|| "—".to_string(), fmt_load);
    let said = live.ended.clone().unwrap_or_else(|| "stopped".into());
    env.emit(RunnerEvent::Log(format!("{}: {said}: bracket [{}, {}] {unit}", cell.label, show(pass), show(fail))));
    let view = LiveAttempt {
        cell: Some(cell.cell),
        label: cell.label.clone(),
        slo_search: Some(live),
        ..LiveAttempt::default()
    };
    // The final view (the monitor may see the idle one first: after the session its panel reads
    // the attempt back, `live::from_attempt`).
    env.live_tx.send_replace(view);
    let out = Outcome { cfg: cfg.clone(), slo, bracket: (pass, fail), ending: search.ending() };
    let span = (cell.attempt, env.since_start(started), started.elapsed().as_secs_f64());
    let ttft = got.ttft.percentile(50.0);
    attempt(span, &got.probes, (got.errors, got.examples), ttft, &out)
}
