//! The log line said when a cell's round of repeated runs ends (`--num-runs`): the mean of
//! its headline throughput and TTFT with their 95% intervals and the throughput's CV, e.g.
//! `ctx=0 conc=4: 3/3 runs: tok/s 544.1 ±6.2 (CV 0.5%), TTFT p50 12.40 ±0.31 ms`.

use super::state::CellEntry;
use crate::report::runs::render::{COLUMNS, column_figure, cv_text, mean_pm};

/// The line of `cell`'s latest round, when it has repetitions and a measured run.
pub(crate) fn round_line(cell: &CellEntry) -> Option<String> {
    let progress = cell.run_progress()?;
    let (_, stats) = cell.mean()?;
    let n = cell.measured_runs().len();
    let mut parts = Vec::new();
    let block = crate::report::runs::RunsBlock {
        planned: progress.planned,
        n: n as u32,
        attempts: Vec::new(),
        headline: crate::report::runs::HEADLINE_MEAN.into(),
        figures: stats,
    };
    if let Some((name, s)) = column_figure(&block, COLUMNS[0].1) {
        let cv = cv_text(s);
        let cv = if cv.is_empty() { String::new() } else { format!(" ({cv})") };
        parts.push(format!("tok/s {}{cv}", mean_pm(name, s)));
    }
    if let Some(s) = block.figure("p50_ttft_ms") {
        parts.push(format!("TTFT p50 {} ms", mean_pm("p50_ttft_ms", s)));
    }
    let tail = if parts.is_empty() { "no figures".to_string() } else { parts.join(", ") };
    Some(format!("{}: {n}/{} runs: {tail}", cell.label, progress.planned))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::record::Attempt;
    use crate::report::status::AttemptStatus;
    use std::sync::Arc;

    #[test]
    fn the_round_line_names_the_means_and_their_spread() {
        let run = |n: u32, tps: f64| {
            let mut a = crate::report::tests_schema::full_attempt(n, AttemptStatus::Measured);
            a.aggregate_tps = tps;
            Arc::new(Attempt::Decode(Box::new(a)))
        };
        let spec = crate::cell::spec::CellSpec::grid(crate::report::kind::ExperimentKind::Decode, 0, 4);
        let mut cell = CellEntry {
            spec,
            label: "ctx=0 conc=4".into(),
            status: crate::cell::spec::CellStatus::Measured,
            attempts: vec![run(1, 99.0), run(2, 100.0), run(3, 101.0)],
            runs: 3,
        };
        let line = round_line(&cell).unwrap();
        assert!(line.starts_with("ctx=0 conc=4: 3/3 runs: tok/s 100.0 ±2.5 (CV 1.0%), TTFT p50 "), "{line}");
        cell.runs = 1;
        assert_eq!(round_line(&cell), None, "one run per cell: no line");
    }
}
