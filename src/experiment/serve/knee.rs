//! The knee of the serve matrix (docs/reports.md §1.9's test, `stats::knee`): along a row of
//! one input length, ordered by request rate when rates are swept (one row per
//! concurrency), else by concurrency, the first cell whose output tok/s stops rising while its
//! TTFT keeps rising.

use crate::cell::spec::{CellKey, CellSpec};
use crate::experiment::decode::knee::{GridKnee, RowPoint, knees_of};
use crate::report::serve::ServeAttempt;
use crate::report::status::AttemptStatus;
use crate::stats::knee::LoadPoint;

/// The figures the knee test reads from a measured serve attempt (its queue is not polled:
/// TTFT alone shows the rise).
fn serve_point(label: String, a: &ServeAttempt) -> LoadPoint {
    LoadPoint {
        label,
        tps: a.metrics.output_throughput,
        tps_se: None,
        ttft_p50_ms: a.metrics.median_ttft_ms,
        ttft_p90_ms: None,
        waiting: None,
    }
}

/// The knee of every serve row that has one, from `(caller's index, spec, latest attempt)`;
/// `rates_swept` says whether rows run along the rate (else along the concurrency).
pub fn serve_knees<'a>(
    cells: impl IntoIterator<Item = (usize, &'a CellSpec, Option<&'a ServeAttempt>)>,
    rates_swept: bool,
) -> Vec<GridKnee> {
    let mut points = Vec::new();
    for (id, spec, a) in cells {
        let (CellKey::Grid { ctx, conc, rate }, Some(a)) = (&spec.key, a) else { continue };
        if a.status != AttemptStatus::Measured {
            continue;
        }
        let (row, load) = match (rates_swept, rate) {
            (true, Some(r)) => ((*ctx, Some(*conc)), r.per_second()),
            _ => ((*ctx, None), f64::from(*conc)),
        };
        let label = if rates_swept { spec.load_label(false).unwrap_or_default() } else { conc.to_string() };
        points.push(RowPoint { id, row, load, point: serve_point(label, a) });
    }
    knees_of(points)
}
