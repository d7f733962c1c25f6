//! The knee of the serve matrix (docs/reports.md §1.9's test, `stats::knee`): along a row of
//! one input length, ordered by request rate when rates are swept (one row per
//! concurrency), else by concurrency, the first cell whose output tok/s stops rising while its
//! TTFT keeps rising.

use crate::cell::spec::{CellKey, CellSpec};
use crate::experiment::decode::knee::{GridKnee, RowPoint, knees_of};
use crate::report::serve::ServeAttempt;
use crate::report::status::AttemptStatus;
use crate::stats::RunStats;
use crate::stats::knee::LoadPoint;

/// The figures the knee test reads from a measured serve attempt (its queue is not polled:
/// TTFT alone shows the rise); with repetitions the mean of its runs, `runs` its output
/// tok/s over them.
fn serve_point(label: String, a: &ServeAttempt, runs: Option<&RunStats>) -> LoadPoint {
    LoadPoint {
        label,
        tps: a.metrics.output_throughput,
        tps_se: None,
        tps_runs: runs.copied(),
        ttft_p50_ms: a.metrics.median_ttft_ms,
        ttft_p90_ms: None,
        waiting: None,
    }
}

/// The knee of every serve row that has one, from `(caller's index, spec, the attempt its
/// headline reads, its output tok/s over its runs with repetitions)`. Rows run along the rate
/// when the cells name more than one rate, else along the concurrency.
pub(crate) fn serve_knees<'a>(
    cells: impl IntoIterator<Item = (usize, &'a CellSpec, Option<&'a ServeAttempt>, Option<&'a RunStats>)>,
) -> Vec<GridKnee> {
    let cells: Vec<_> = cells.into_iter().collect();
    let mut rates: Vec<Option<f64>> = Vec::new();
    for (_, spec, _, _) in &cells {
        let rate = match spec.key {
            CellKey::Grid { rate, .. } => rate.map(|r| r.per_second()),
            CellKey::Phase { .. } => None,
        };
        if !rates.contains(&rate) {
            rates.push(rate);
        }
    }
    let rates_swept = rates.len() > 1;
    let mut points = Vec::new();
    for (id, spec, a, runs) in cells {
        let (CellKey::Grid { ctx, conc, rate }, Some(a)) = (&spec.key, a) else { continue };
        if a.status != AttemptStatus::Measured {
            continue;
        }
        let (row, load) = match (rates_swept, rate) {
            (true, Some(r)) => ((*ctx, Some(*conc)), r.per_second()),
            _ => ((*ctx, None), f64::from(*conc)),
        };
        let label = if rates_swept { spec.load_label(false).unwrap_or_default() } else { conc.to_string() };
        points.push(RowPoint { id, row, load, point: serve_point(label, a, runs) });
    }
    knees_of(points)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Rate;
    use crate::report::kind::ExperimentKind;
    use crate::report::serve::ServeMetrics;

    fn attempt(tps: f64, ttft: f64) -> ServeAttempt {
        let metrics = ServeMetrics { output_throughput: tps, median_ttft_ms: Some(ttft), ..ServeMetrics::default() };
        ServeAttempt {
            attempt: 1,
            status: AttemptStatus::Measured,
            started_s: 0.0,
            num_prompts: 8,
            errors: Default::default(),
            error_examples: Default::default(),
            reconnects: 0,
            metrics,
            request_samples: Vec::new(),
            server_tokens: None,
            prefix_cache: None,
            schedule_lag: None,
            shard_gaps: None,
        }
    }

    #[test]
    fn a_rate_sweep_has_its_knee_where_output_stops_rising_and_ttft_climbs() {
        let rates = [Rate::PerSecond(2.0), Rate::PerSecond(4.0), Rate::PerSecond(8.0), Rate::Inf];
        let specs: Vec<CellSpec> =
            rates.iter().map(|r| CellSpec::grid_at(ExperimentKind::Serve, 256, 8, Some(*r))).collect();
        let runs = [attempt(500.0, 90.0), attempt(990.0, 95.0), attempt(1010.0, 400.0), attempt(1012.0, 2000.0)];
        let cells = specs.iter().zip(&runs).enumerate().map(|(i, (s, a))| (i, s, Some(a), None));
        let knees = serve_knees(cells);
        assert_eq!(knees.len(), 1);
        assert_eq!((knees[0].id, knees[0].row.axis.as_str(), knees[0].row.at_rate.as_deref()), (2, "rate", Some("8")));
        // One rate, a concurrency sweep: the row runs along the concurrency.
        let specs: Vec<CellSpec> =
            [2, 4, 8, 16].iter().map(|c| CellSpec::grid_at(ExperimentKind::Serve, 256, *c, Some(Rate::Inf))).collect();
        let cells = specs.iter().zip(&runs).enumerate().map(|(i, (s, a))| (i, s, Some(a), None));
        let knees = serve_knees(cells);
        assert_eq!((knees[0].row.axis.as_str(), knees[0].row.at_conc), ("conc", Some(8)));
    }
}
