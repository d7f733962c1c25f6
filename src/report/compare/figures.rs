//! The figures `compare` reads from one report, cell by cell (docs/reports.md §4): for each
//! decode cell, burst cell and routing phase, the figures of its result attempt and their
//! values in every measured attempt (the repeats the noise band comes from). A cell with a
//! `runs` block (`run --num-runs`) reads as the mean of its latest round's measured runs, with
//! each figure's statistics over them (the interval `compare` judges noise by).

use super::{Better, CellKey};
use crate::report::dist::{self, Dist};
use crate::report::extension::ExtensionAttempt;
use crate::report::json::{BurstAttempt, DecodeAttempt, SessionReport};
use crate::report::kind::ExperimentKind;
use crate::report::phase::RoutingPhase;
use crate::report::runs::{RunsBlock, measured_runs};
use crate::report::serve::ServeAttempt;
use crate::report::status::AttemptStatus;
use crate::report::vllm::result_attempt;
use crate::stats::percentile_list::{percentile_key, percentile_word};
use crate::stats::repeats::DEFAULT_LEVEL;
use crate::stats::{PercentileList, RunStats};

/// What a figure is; the same for every cell of a kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// Stable machine name with its unit (`aggregate_tok_s`, `p99_ttft_ms`).
    pub name: String,
    /// What a person reads (`aggregate tok/s`, `TTFT p99 ms`).
    pub title: String,
    /// `tok/s`, `ms` or `fraction`.
    pub unit: &'static str,
    /// Which way is better.
    pub better: Better,
    /// A headline figure: regressing beyond the threshold fails `compare` (exit 1).
    pub headline: bool,
}

/// One figure of one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// What it is.
    pub spec: Spec,
    /// Its value in the cell's result attempt.
    pub value: Option<f64>,
    /// Its value in every measured attempt of the cell, oldest first.
    pub repeats: Vec<f64>,
    /// With repetitions: the figure over the measured runs of the cell's latest round (`value`
    /// is then their mean); None without a `runs` block.
    pub runs: Option<RunStats>,
}

/// One cell (or phase) of a report.
#[derive(Debug, Clone, PartialEq)]
pub struct CellFigures {
    /// How cells are matched across reports.
    pub key: CellKey,
    /// `decode ctx=16k conc=4`, `routing r1-hot90-prefix-cache`.
    pub label: String,
    /// The cell's status in the report.
    pub status: String,
    /// Measured attempts.
    pub measured: usize,
    /// Empty when the cell has no result (skipped, pending).
    pub figures: Vec<Figure>,
}

fn spec(name: String, title: String, unit: &'static str, better: Better, headline: bool) -> Spec {
    Spec { name, title, unit, better, headline }
}

fn throughput(name: &str, title: &str, headline: bool) -> Spec {
    spec(format!("{name}_tok_s"), format!("{title} tok/s"), "tok/s", Better::Higher, headline)
}

/// `p50_ttft_ms` ... for every percentile asked for.
fn latency(metric: &str, title: &str, dist: &Dist, pcts: &PercentileList) -> Vec<(Spec, Option<f64>)> {
    let spec = |q: f64| {
        let name = format!("{}_{metric}_ms", percentile_key(q));
        spec(name, format!("{title} p{} ms", percentile_word(q)), "ms", Better::Lower, false)
    };
    pcts.values().iter().map(|&q| (spec(q), dist.percentile(q))).collect()
}

fn decode_attempt(a: &DecodeAttempt, pcts: &PercentileList) -> Vec<(Spec, Option<f64>)> {
    let r = &a.request_samples;
    let mut out = vec![
        (throughput("aggregate", "aggregate", true), Some(a.aggregate_tps)),
        (throughput("per_request", "per-request", false), Some(a.per_request_tps)),
    ];
    out.extend(latency("ttft", "TTFT", &Dist::samples_or(dist::ttft_values(r), a.ttft_ms.as_ref()), pcts));
    out.extend(decode_tpot(a, pcts));
    out
}

/// A decode cell's TPOT: the window's per-stream summary `itl_ms` (the tables' figure, §1.2 of
/// docs/reports.md) at the percentiles it stores; the samples, which span each whole stream
/// warmup included, only for any other percentile (or when there is no summary).
fn decode_tpot(a: &DecodeAttempt, pcts: &PercentileList) -> Vec<(Spec, Option<f64>)> {
    let window = latency("tpot", "TPOT", &Dist::summary(a.itl_ms.as_ref()), pcts);
    let whole = latency("tpot", "TPOT", &Dist::samples_or(dist::itl_values(&a.request_samples), None), pcts);
    window.into_iter().zip(whole).map(|((spec, w), (_, s))| (spec, w.or(s))).collect()
}

fn burst_attempt(a: &BurstAttempt, pcts: &PercentileList) -> Vec<(Spec, Option<f64>)> {
    let r = &a.request_samples;
    let mut out = vec![(throughput("output", "output", true), Some(a.output_tps))];
    out.extend(latency("ttft", "TTFT", &Dist::samples_or(dist::ttft_values(r), a.ttft_ms.as_ref()), pcts));
    out.extend(latency("tpot", "TPOT", &Dist::samples_or(dist::itl_values(r), a.tpot_ms.as_ref()), pcts));
    out
}

fn serve_attempt(a: &ServeAttempt, pcts: &PercentileList) -> Vec<(Spec, Option<f64>)> {
    let r = &a.request_samples;
    let mut out = vec![(throughput("output", "output", true), Some(a.metrics.output_throughput))];
    if let Some(g) = a.metrics.request_goodput {
        out.push((spec("request_goodput_rps".into(), "goodput req/s".into(), "req/s", Better::Higher, true), Some(g)));
    }
    out.extend(latency("ttft", "TTFT", &Dist::samples_or(dist::ttft_values(r), None), pcts));
    out.extend(latency("tpot", "TPOT", &Dist::samples_or(dist::itl_values(r), None), pcts));
    out
}

/// The serve cells of `report`, keyed by input length, max concurrency and rate.
fn serve_cells(report: &SessionReport, pcts: &PercentileList) -> Vec<CellFigures> {
    let cells = report.serve.iter().flat_map(|s| &s.cells);
    cells
        .map(|cell| {
            let ok = cell.attempts.iter().filter(|a| a.status == AttemptStatus::Measured);
            let measured: Vec<_> = ok.map(|a| serve_attempt(a, pcts)).collect();
            let result = result_attempt(cell.status, cell.attempts.last()).map(|a| serve_attempt(a, pcts));
            let round = round_of(&cell.attempts, cell.runs.as_ref(), |a| serve_attempt(a, pcts));
            let rate = Some(cell.request_rate.clone());
            let key = CellKey::cell_at(ExperimentKind::Serve, cell.input_len, cell.max_concurrency, rate);
            entry(key, &cell.ctx_label, cell.status.as_str(), result, &measured, round)
        })
        .collect()
}

fn extension_attempt(a: &ExtensionAttempt) -> Vec<(Spec, Option<f64>)> {
    let mut out = vec![
        (throughput("output", "output", true), Some(a.output_tps)),
        (spec("p50_ttft_ms".into(), "TTFT p50 ms".into(), "ms", Better::Lower, false), a.ttft_p50_ms),
    ];
    let unit = |u: &str| ["tok/s", "ms", "fraction", "req/s"].into_iter().find(|k| *k == u).unwrap_or("");
    let own = a.figures.iter().map(|f| (spec(f.name.clone(), f.name.clone(), unit(&f.unit), f.better, false), f.value));
    out.extend(own);
    out
}

/// The cells of every extension section of `report`, keyed by kind, ctx, conc and rate.
fn extension_cells(report: &SessionReport) -> Vec<CellFigures> {
    let mut out = Vec::new();
    for section in &report.extensions {
        let Ok(kind) = ExperimentKind::named(&section.kind) else { continue };
        for cell in &section.cells {
            let ok = cell.attempts.iter().filter(|a| a.status == AttemptStatus::Measured);
            let measured: Vec<_> = ok.map(extension_attempt).collect();
            let result = result_attempt(cell.status, cell.attempts.last()).map(extension_attempt);
            let round = round_of(&cell.attempts, cell.runs.as_ref(), extension_attempt);
            let key = CellKey::cell_at(kind, cell.ctx, cell.conc, cell.rate.clone());
            out.push(entry(key, &cell.ctx_label, cell.status.as_str(), result, &measured, round));
        }
    }
    out
}

fn phase_attempt(p: &RoutingPhase, pcts: &PercentileList) -> Vec<(Spec, Option<f64>)> {
    let goodput = (p.requests > 0).then(|| p.good as f64 / p.requests as f64);
    let mut out = vec![
        (throughput("output", "output", true), Some(p.output_tokens_per_second)),
        (spec("goodput_ratio".into(), "goodput".into(), "fraction", Better::Higher, true), goodput),
    ];
    out.extend(latency("ttft", "TTFT", &Dist::phase(&p.ttft), pcts));
    out.extend(latency("itl", "ITL", &Dist::phase(&p.itl), pcts));
    out
}

/// One attempt's figures, each with its value.
type AttemptFigures = Vec<(Spec, Option<f64>)>;

/// Each figure of every measured run of a cell's latest round (its `runs` block); None
/// without a block.
fn round_of<T: crate::report::runs::Repeated>(
    attempts: &[T],
    block: Option<&RunsBlock>,
    figures: impl Fn(&T) -> Vec<(Spec, Option<f64>)>,
) -> Option<Vec<AttemptFigures>> {
    block.map(|b| measured_runs(attempts, b).into_iter().map(figures).collect())
}

/// The result's figures with every measured attempt's values beside them; with a round of
/// repeated runs (`round`, when it has a measured run) each value is their mean, with its
/// statistics.
fn assemble(
    result: Vec<(Spec, Option<f64>)>,
    measured: &[Vec<(Spec, Option<f64>)>],
    round: Option<Vec<AttemptFigures>>,
) -> Vec<Figure> {
    let round = round.filter(|r| !r.is_empty());
    result
        .into_iter()
        .enumerate()
        .map(|(i, (spec, value))| {
            let repeats = measured.iter().filter_map(|a| a.get(i).and_then(|(_, v)| *v)).collect();
            let runs = round.as_ref().and_then(|r| {
                let of =
                    |a: &Vec<(Spec, Option<f64>)>| a.iter().find(|(s, _)| s.name == spec.name).and_then(|(_, v)| *v);
                let values: Vec<f64> = r.iter().filter_map(of).collect();
                RunStats::of(&values, DEFAULT_LEVEL)
            });
            let value = runs.map(|r| r.mean).or(value);
            Figure { spec, value, repeats, runs }
        })
        .collect()
}

/// Every decode cell, burst cell and routing phase of `report`, in report order.
pub(crate) fn cells(report: &SessionReport, pcts: &PercentileList) -> Vec<CellFigures> {
    let mut out = Vec::new();
    for cell in report.decode.iter().flat_map(|d| &d.cells) {
        let measured: Vec<_> = cell
            .attempts
            .iter()
            .filter(|a| a.status == AttemptStatus::Measured)
            .map(|a| decode_attempt(a, pcts))
            .collect();
        let result = result_attempt(cell.status, cell.attempts.last()).map(|a| decode_attempt(a, pcts));
        let round = round_of(&cell.attempts, cell.runs.as_ref(), |a| decode_attempt(a, pcts));
        let key = CellKey::cell_at(ExperimentKind::Decode, cell.ctx, cell.conc, cell.rate.map(|r| r.to_string()));
        out.push(entry(key, &cell.ctx_label, cell.status.as_str(), result, &measured, round));
    }
    for cell in report.burst.iter().flat_map(|b| &b.cells) {
        let measured: Vec<_> = cell
            .attempts
            .iter()
            .filter(|a| a.status == AttemptStatus::Measured)
            .map(|a| burst_attempt(a, pcts))
            .collect();
        let result = result_attempt(cell.status, cell.attempts.last()).map(|a| burst_attempt(a, pcts));
        let round = round_of(&cell.attempts, cell.runs.as_ref(), |a| burst_attempt(a, pcts));
        let key = CellKey::cell(ExperimentKind::Burst, cell.ctx, cell.conc);
        out.push(entry(key, &cell.ctx_label, cell.status.as_str(), result, &measured, round));
    }
    out.extend(serve_cells(report, pcts));
    out.extend(extension_cells(report));
    for phase in &report.phases {
        let same = |p: &&RoutingPhase| p.phase == phase.phase && p.status == AttemptStatus::Measured;
        let mut measured: Vec<_> = report.phase_history.iter().filter(same).map(|p| phase_attempt(p, pcts)).collect();
        if measured.is_empty() && phase.status == AttemptStatus::Measured {
            measured.push(phase_attempt(phase, pcts));
        }
        let own: Vec<RoutingPhase> = report.phase_history.iter().filter(|p| p.phase == phase.phase).cloned().collect();
        let round = round_of(&own, phase.runs.as_ref(), |p| phase_attempt(p, pcts));
        let figures = assemble(phase_attempt(phase, pcts), &measured, round);
        let (key, label) = (CellKey::phase(&phase.phase), format!("routing {}", phase.phase));
        out.push(CellFigures { key, label, status: phase.status.as_str().into(), measured: measured.len(), figures });
    }
    out
}

fn entry(
    key: CellKey,
    ctx_label: &str,
    status: &str,
    result: Option<Vec<(Spec, Option<f64>)>>,
    measured: &[Vec<(Spec, Option<f64>)>],
    round: Option<Vec<AttemptFigures>>,
) -> CellFigures {
    let mut label = format!("{} ctx={ctx_label} conc={}", key.kind, key.conc.unwrap_or(0));
    if let Some(rate) = &key.rate {
        label.push_str(&format!(" rate={rate}"));
    }
    let figures = result.map(|r| assemble(r, measured, round)).unwrap_or_default();
    CellFigures { key, label, status: status.into(), measured: measured.len(), figures }
}
