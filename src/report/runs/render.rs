//! How repetitions read in the tables: one "Repetitions" table of every cell and phase with
//! a `runs` block (its runs, then each headline figure as `mean ±half`, its CV on the dim
//! line), and the legend that says the tables show means. The text and markdown formats draw
//! these blocks; HTML and CSV take [`rows`].

use super::RunsBlock;
use crate::report::json::SessionReport;
use crate::report::text::{Block, Row, Table};
use crate::stats::RunStats;

/// Title of the repetitions table.
pub const TITLE: &str = "Repetitions: mean ±95% CI (CV)";

/// The table's figure columns: a title and the figure names that fill it, first found wins.
pub const COLUMNS: [(&str, &[&str]); 8] = [
    ("tok/s", &["aggregate_tok_s", "output_tok_s"]),
    ("TTFT p50 ms", &["p50_ttft_ms"]),
    ("TTFT p99 ms", &["p99_ttft_ms"]),
    ("TPOT p50 ms", &["p50_tpot_ms"]),
    ("ITL p50 ms", &["p50_itl_ms"]),
    ("good", &["goodput_ratio"]),
    ("goodput req/s", &["request_goodput_rps", "goodput_rps"]),
    ("cache hit", &["cache_hit_ratio"]),
];

/// One cell or phase with repetitions: its label and block.
#[derive(Debug, Clone, PartialEq)]
pub struct RunsRow<'a> {
    /// `decode ctx=16k conc=4`, `serve 256 conc=8 rate=inf`, `routing r1-hot90-random`.
    pub label: String,
    /// Its runs.
    pub block: &'a RunsBlock,
}

/// Every cell and phase of `report` with a `runs` block, in report order.
pub fn rows(report: &SessionReport) -> Vec<RunsRow<'_>> {
    let rate = |r: Option<String>| r.map(|r| format!(" rate={r}")).unwrap_or_default();
    let mut all: Vec<(String, Option<&RunsBlock>)> = Vec::new();
    for c in report.decode.iter().flat_map(|d| &d.cells) {
        let label = format!("decode ctx={} conc={}{}", c.ctx_label, c.conc, rate(c.rate.map(|r| r.to_string())));
        all.push((label, c.runs.as_ref()));
    }
    for c in report.burst.iter().flat_map(|b| &b.cells) {
        all.push((format!("burst ctx={} conc={}", c.ctx_label, c.conc), c.runs.as_ref()));
    }
    for c in report.serve.iter().flat_map(|s| &s.cells) {
        let label = format!("serve {} conc={}{}", c.ctx_label, c.max_concurrency, rate(Some(c.request_rate.clone())));
        all.push((label, c.runs.as_ref()));
    }
    for s in &report.extensions {
        all.extend(s.cells.iter().map(|c| (format!("{} {}", s.kind, c.label), c.runs.as_ref())));
    }
    all.extend(report.phases.iter().map(|p| (format!("routing {}", p.phase), p.runs.as_ref())));
    all.into_iter().filter_map(|(label, block)| Some(RunsRow { label, block: block? })).collect()
}

/// The value of figure `name` as tables print it: a ratio in percent, ms and tok/s with the
/// precision `compare` uses.
pub fn value(name: &str, v: f64) -> String {
    match name {
        n if n.ends_with("_ratio") => format!("{:.1}%", v * 100.0),
        n if n.ends_with("_ms") && v.abs() < 10.0 => format!("{v:.2}"),
        n if n.ends_with("_ms") && v.abs() >= 1000.0 => format!("{v:.0}"),
        _ => format!("{v:.1}"),
    }
}

/// `1234.5 ±12.3` (the ± the half-width of the interval; none for a single run).
pub fn mean_pm(name: &str, s: &RunStats) -> String {
    match s.half_width() {
        Some(h) => format!("{} ±{}", value(name, s.mean), value(name, h)),
        None => value(name, s.mean),
    }
}

/// `CV 1.2%`, or empty for a single run.
pub fn cv_text(s: &RunStats) -> String {
    s.cv.map(|cv| format!("CV {:.1}%", cv * 100.0)).unwrap_or_default()
}

/// The first figure of a column the block has, with its name.
pub fn column_figure<'a>(block: &'a RunsBlock, names: &[&'a str]) -> Option<(&'a str, &'a RunStats)> {
    names.iter().find_map(|n| block.figure(n).map(|s| (*n, s)))
}

/// `3/3`, or `2/3` when a run errored or the operator ended the round.
pub fn runs_text(block: &RunsBlock) -> String {
    format!("{}/{}", block.n, block.planned)
}

/// The legend under the table: what the tables' figures are now, and what ± and CV mean.
pub fn legend(planned: u32) -> String {
    format!(
        "Repetitions: every cell ran {planned} times back to back (--num-runs {planned}); the figures \
         of every table above are the mean of its measured runs (runs = measured/planned: fewer \
         when a run errored or the operator skipped the rest), counts and marks are its last \
         measured run's. ± is the half-width of the 95% Student-t confidence interval of the mean \
         (n − 1 degrees of freedom); CV = sd / mean. Each cell's JSON `runs` block has every \
         figure's mean, sd, cv, ci_low and ci_high."
    )
}

/// The CSV columns a report with repetitions adds after the others.
pub const CSV_COLUMNS: [&str; 2] = ["runs", "runs_figures"];

/// A cell's CSV fields of [`CSV_COLUMNS`]: `3/3` and every figure's statistics as
/// `name.mean=…;name.sd=…;name.cv=…;name.ci_low=…;name.ci_high=…` (empty for a single run's
/// sd, CV and interval); none without a block.
pub fn csv_fields(block: Option<&RunsBlock>) -> Vec<(&'static str, String)> {
    let Some(b) = block else { return Vec::new() };
    let opt = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    let figures: Vec<String> = b
        .figures
        .iter()
        .map(|(n, s)| {
            let parts =
                [("mean", Some(s.mean)), ("sd", s.sd), ("cv", s.cv), ("ci_low", s.ci_low), ("ci_high", s.ci_high)];
            parts.iter().map(|(k, v)| format!("{n}.{k}={}", opt(*v))).collect::<Vec<_>>().join(";")
        })
        .collect();
    vec![(CSV_COLUMNS[0], runs_text(b)), (CSV_COLUMNS[1], figures.join(";"))]
}

/// The repetitions table and its legend; nothing when no cell has repetitions.
pub fn blocks(report: &SessionReport) -> Vec<Block> {
    let rows = rows(report);
    let Some(planned) = rows.iter().map(|r| r.block.planned).max() else { return Vec::new() };
    let shown: Vec<&(&str, &[&str])> =
        COLUMNS.iter().filter(|(_, names)| rows.iter().any(|r| column_figure(r.block, names).is_some())).collect();
    let mut header = vec!["cell".to_string(), "runs".to_string()];
    header.extend(shown.iter().map(|(title, _)| title.to_string()));
    let mut table = Table::new(TITLE, header);
    for r in &rows {
        let (mut main, mut dim) = (vec![r.label.clone(), runs_text(r.block)], vec![String::new(), String::new()]);
        for (_, names) in &shown {
            let found = column_figure(r.block, names);
            main.push(found.map_or_else(|| "—".into(), |(n, s)| mean_pm(n, s)));
            dim.push(found.map(|(_, s)| cv_text(s)).unwrap_or_default());
        }
        let any_cv = dim.iter().any(|d| !d.is_empty());
        table.rows.push(if any_cv { Row::with_dim(main, dim) } else { Row::new(main) });
    }
    vec![Block::Table(table), Block::Legend(vec![legend(planned)])]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(values: &[f64]) -> RunsBlock {
        let stats = RunStats::of(values, 0.95).unwrap();
        RunsBlock {
            planned: 3,
            n: values.len() as u32,
            attempts: (1..=values.len() as u32).collect(),
            headline: "mean".into(),
            figures: [
                ("aggregate_tok_s".to_string(), stats),
                ("cache_hit_ratio".to_string(), RunStats::of(&[0.5], 0.95).unwrap()),
            ]
            .into(),
        }
    }

    #[test]
    fn a_figure_reads_mean_plus_minus_half_with_its_cv_below() {
        let b = block(&[99.0, 100.0, 101.0]);
        let s = b.figure("aggregate_tok_s").unwrap();
        assert_eq!(mean_pm("aggregate_tok_s", s), "100.0 ±2.5");
        assert_eq!(cv_text(s), "CV 1.0%");
        let one = b.figure("cache_hit_ratio").unwrap();
        assert_eq!((mean_pm("cache_hit_ratio", one), cv_text(one)), ("50.0%".to_string(), String::new()));
        assert_eq!(runs_text(&b), "3/3");
        assert_eq!(value("p50_ttft_ms", 4.256), "4.26");
        assert_eq!(value("p50_ttft_ms", 1234.4), "1234");
    }

    #[test]
    fn the_table_has_one_row_per_repeated_cell_and_only_filled_columns() {
        let mut report = crate::report::tests_schema::full_report();
        assert!(blocks(&report).is_empty(), "no repetitions, no table");
        report.decode.as_mut().unwrap().cells[0].runs = Some(block(&[99.0, 100.0, 101.0]));
        let out = blocks(&report);
        let Block::Table(t) = &out[0] else { panic!("{out:?}") };
        assert_eq!(t.header, ["cell", "runs", "tok/s", "cache hit"]);
        assert_eq!(t.rows.len(), 1);
        assert!(t.rows[0].cells[0].starts_with("decode ctx="), "{:?}", t.rows[0]);
        assert_eq!(t.rows[0].cells[2..], ["100.0 ±2.5".to_string(), "50.0%".into()]);
        let Block::Legend(l) = &out[1] else { panic!() };
        assert!(l[0].contains("--num-runs 3") && l[0].contains("mean of its measured runs"), "{l:?}");
    }
}
