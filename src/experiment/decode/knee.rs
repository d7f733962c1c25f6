//! Saturation of the decode matrix: the within-cell test of an attempt (its window's queue,
//! TTFT and tok/s series, `stats::saturation`) and the knee of each row of cells
//! (`stats::knee`): closed-loop rows by ctx, ordered by conc; open-loop rows by ctx and conc,
//! ordered by rate. The monitor, the report and `--stop-at-knee` all ask here.

use crate::cell::sample_window::Window;
use crate::cell::spec::{CellKey, CellSpec};
use crate::metrics::window::{History, Point};
use crate::report::json::{DecodeAttempt, RequestRecord, RowKnee};
use crate::report::skip::{Skip, SkipKind};
use crate::report::status::AttemptStatus;
use crate::stats::RunStats;
use crate::stats::knee::{Knee, KneeRules, LoadPoint, find_knee};
use crate::stats::saturation::{Saturation, TpsNoise, WindowSeries, per_second_noise, saturation, stream_spread_noise};
use crate::units::format_size;
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::Instant;

/// Shortest interval the window's series are sampled at.
const MIN_STEP: Duration = Duration::from_millis(200);

/// The point of `points` in effect at `t` (the last one at or before it).
fn at(points: &std::collections::VecDeque<Point>, t: Instant) -> Option<&Point> {
    points.partition_point(|p| p.at <= t).checked_sub(1).and_then(|i| points.get(i))
}

/// A series of (seconds into the window, value).
type Series = Vec<(f64, f64)>;

/// The window's queue and tok/s series, one point per `step`, summed over the replicas.
fn polled_series(h: &History, w: Window, step: Duration) -> (Series, Series) {
    let (mut waiting, mut tps) = (Vec::new(), Vec::new());
    let n = (w.len().as_secs_f64() / step.as_secs_f64()).floor() as u32;
    for k in 0..=n {
        let t = w.start + step * k;
        let x = (step * k).as_secs_f64();
        let wait: Vec<f64> = h.replicas.iter().filter_map(|r| at(&r.points, t)?.waiting).collect();
        if !wait.is_empty() {
            waiting.push((x, wait.iter().sum()));
        }
        if k == 0 {
            continue;
        }
        let prev = t - step;
        let count = |r: &crate::metrics::window::ReplicaHistory, t| at(&r.points, t).and_then(|p| p.generation_tokens);
        let d: Vec<f64> = h.replicas.iter().filter_map(|r| Some(count(r, t)? - count(r, prev)?)).collect();
        if !d.is_empty() && d.iter().all(|x| *x >= 0.0) {
            tps.push((x, d.iter().sum::<f64>() / step.as_secs_f64()));
        }
    }
    (waiting, tps)
}

/// The streams' own tok/s over the window (for the noise when nothing was polled).
pub(crate) fn stream_rates(records: &[RequestRecord], window_s: f64) -> Vec<f64> {
    let mut by_worker: BTreeMap<u32, u64> = BTreeMap::new();
    for r in records {
        *by_worker.entry(r.worker).or_default() += r.window_tokens;
    }
    by_worker.values().map(|t| *t as f64 / window_s).collect()
}

/// True when a polled tok/s series says something: it has points and not all are zero (a
/// counter that moves only at request end stays flat at zero while streams run).
fn informative(tps: &[(f64, f64)]) -> bool {
    tps.iter().any(|p| p.1 > 0.0)
}

/// The within-cell saturation test of an attempt whose window was `w` (None: no window), with
/// the poller's history `h` (None: not polled), the attempt's request records and the client's
/// own tok/s series (`ClientStats::window_series`), which stands in for the engine's when
/// that is empty or flat.
pub(crate) fn attempt_saturation(
    h: Option<&History>,
    w: Option<Window>,
    poll: Duration,
    records: &[RequestRecord],
    client_tps: &[(f64, f64)],
) -> Option<Saturation> {
    let w = w.filter(|w| !w.len().is_zero())?;
    let mut s = WindowSeries::default();
    if let Some(h) = h {
        (s.waiting, s.tps) = polled_series(h, w, poll.max(MIN_STEP));
    }
    let mut source = "per_second";
    if !informative(&s.tps) && informative(client_tps) {
        (s.tps, source) = (client_tps.to_vec(), "client_per_second");
    }
    s.ttft = records.iter().filter_map(|r| Some((r.sent_ms / 1e3, r.ttft_ms?))).collect();
    let tps: Vec<f64> = s.tps.iter().map(|p| p.1).collect();
    let noise: Option<TpsNoise> = per_second_noise(&tps)
        .filter(|n| n.n >= 3)
        .map(|n| TpsNoise { source: source.into(), ..n })
        .or_else(|| stream_spread_noise(&stream_rates(records, w.len().as_secs_f64())));
    Some(saturation(&s, noise))
}

/// The knee test's view of a measured attempt, labelled `label` (with repetitions: the mean
/// of its runs, and `runs` its aggregate tok/s over them).
pub(crate) fn load_point(label: String, a: &DecodeAttempt, runs: Option<&RunStats>) -> LoadPoint {
    LoadPoint {
        label,
        tps: a.aggregate_tps,
        tps_se: a.saturation.as_ref().and_then(|s| s.tps_noise.as_ref()).map(|n| n.se_tps),
        tps_runs: runs.copied(),
        ttft_p50_ms: a.ttft_ms.map(|s| s.p50),
        ttft_p90_ms: a.ttft_ms.map(|s| s.p90),
        waiting: a.waiting_avg,
    }
}

/// A row of the matrix: its context and, for open-loop rows, the concurrency they share.
pub(crate) type RowKey = (u64, Option<u32>);

/// The knee of one row of grid cells, and the position in the caller's list of its cell.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GridKnee {
    /// The caller's index of the knee cell.
    pub id: usize,
    /// The row.
    pub row: RowKnee,
}

/// Where a grid cell sits on its row's load axis (conc closed loop, rate open loop).
fn load_of(key: &CellKey) -> Option<(RowKey, f64)> {
    match key {
        CellKey::Grid { ctx, conc, rate: None } => Some(((*ctx, None), f64::from(*conc))),
        CellKey::Grid { ctx, conc, rate: Some(r) } => Some(((*ctx, Some(*conc)), r.per_second())),
        CellKey::Phase { .. } => None,
    }
}

/// The knee of every row of `cells` that has one: each the caller's index, its spec, the
/// attempt its headline reads (its latest; with repetitions the mean of its runs) and, with
/// repetitions, its aggregate tok/s over its runs. Cells whose attempt is not measured are
/// left out of their row.
pub(crate) fn row_knees<'a>(
    cells: impl IntoIterator<Item = (usize, &'a CellSpec, Option<&'a DecodeAttempt>, Option<&'a RunStats>)>,
) -> Vec<GridKnee> {
    let mut points = Vec::new();
    for (id, spec, a, runs) in cells {
        let (Some((row, load)), Some(a)) = (load_of(&spec.key), a.filter(|a| a.status == AttemptStatus::Measured))
        else {
            continue;
        };
        let label = spec.load_label(false).unwrap_or_default();
        points.push(RowPoint { id, row, load, point: load_point(label, a, runs) });
    }
    knees_of(points)
}

/// A measured cell on its row's load axis: the caller's index, the row (ctx, and the
/// concurrency an open-loop row shares; None: the row's axis is the concurrency), its load
/// (streams or requests/s) and its figures.
#[derive(Debug, Clone)]
pub(crate) struct RowPoint {
    /// The caller's index of the cell.
    pub id: usize,
    /// Its row.
    pub row: RowKey,
    /// Its place on the row's axis.
    pub load: f64,
    /// Its figures.
    pub point: LoadPoint,
}

/// The knee of every row of `points` that has one (any experiment's grid cells).
pub(crate) fn knees_of(points: Vec<RowPoint>) -> Vec<GridKnee> {
    let mut rows: BTreeMap<RowKey, Vec<RowPoint>> = BTreeMap::new();
    for p in points {
        rows.entry(p.row).or_default().push(p);
    }
    let rules = KneeRules::default();
    let mut out = Vec::new();
    for ((ctx, conc), mut row) in rows {
        row.sort_by(|a, b| a.load.total_cmp(&b.load));
        let points: Vec<LoadPoint> = row.iter().map(|r| r.point.clone()).collect();
        if let Some(knee) = find_knee(&points, &rules) {
            let id = row[knee.index].id;
            out.push(GridKnee { id, row: row_knee(ctx, conc, knee) });
        }
    }
    out
}

fn row_knee(ctx: u64, conc: Option<u32>, knee: Knee) -> RowKnee {
    let (axis, at_conc, at_rate) = match conc {
        None => ("conc", knee.at.parse().ok(), None),
        // The rate as the report writes rates (`8`, `inf`), not as a column label (`8/s`).
        Some(_) => ("rate", conc, Some(knee.at.trim_end_matches("/s").to_string())),
    };
    RowKnee { ctx, ctx_label: format_size(ctx), axis: axis.into(), at_conc, at_rate, knee }
}

/// Why `spec` is past a knee of `knees` on its row (for `--stop-at-knee`), if it is; `spec_of`
/// gives the spec of a knee's cell.
pub(crate) fn past_knee(
    knees: &[GridKnee],
    spec_of: impl Fn(usize) -> Option<CellSpec>,
    spec: &CellSpec,
) -> Option<Skip> {
    let (row, load) = load_of(&spec.key)?;
    knees.iter().find_map(|k| {
        let (krow, kload) = load_of(&spec_of(k.id)?.key)?;
        let why = || format!("past the {} (--stop-at-knee)", k.row.place());
        (krow == row && load > kload).then(|| Skip::new(SkipKind::PastKnee, why()))
    })
}

#[cfg(test)]
#[path = "knee_tests.rs"]
mod tests;
