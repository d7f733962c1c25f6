//! An extension experiment's section (`report::extension`) as a table: one row per cell, its
//! last attempt's common figures, then the experiment's own, one column each.

use super::blocks::Block;
use super::format::{MISSING, NOT_RUN, fmt_error_suffix, fmt_latency_ms, fmt_tps};
use super::table::{Row, Table};
use crate::report::extension::{ExtensionSection, ExtensionTable, figure, figure_names};
use crate::report::status::CellOutcome;

/// What the table's marks mean.
const LEGEND: &str = "Output tok/s over each cell's last attempt, (Ne) its failed requests; own figures as the experiment names them; — missing, · not run.";

/// The blocks of `section`: its table and legend (none without cells).
pub(crate) fn extension_blocks(section: &ExtensionSection) -> Vec<Block> {
    if section.cells.is_empty() {
        return Vec::new();
    }
    let own = figure_names(section);
    let mut header: Vec<String> = ["cell", "status", "output tok/s", "TTFT p50 ms"].map(String::from).to_vec();
    header.extend(own.iter().map(|(n, _)| n.clone()));
    let mut table = Table::new(format!("{} ({})", section.title, section.kind), header);
    for c in &section.cells {
        let mut cells = vec![c.label.clone(), c.status.as_str().to_string()];
        let shown = matches!(c.status, CellOutcome::Measured | CellOutcome::Errored);
        // With repetitions the mean of the cell's runs (`report::runs`).
        match crate::report::runs::shown(&c.attempts, c.runs.as_ref()).filter(|_| shown) {
            Some(a) => {
                cells.push(format!("{}{}", fmt_tps(a.output_tps), fmt_error_suffix(a.error_count())));
                cells.push(fmt_latency_ms(a.ttft_p50_ms));
                cells.extend(own.iter().map(|(n, unit)| fmt_value(unit, figure(&a, n))));
            }
            None => cells.extend(std::iter::repeat_n(NOT_RUN.to_string(), 2 + own.len())),
        }
        table.rows.push(Row { cells, dim: None });
    }
    let mut out = vec![Block::Table(table), Block::legend(&[LEGEND])];
    for c in section.cells.iter().filter(|c| matches!(c.status, CellOutcome::Measured | CellOutcome::Errored)) {
        if let Some(line) = c.attempts.last().and_then(|a| labels_line(&c.label, a)) {
            out.push(Block::legend(&[&line]));
        }
        for (name, t) in c.attempts.last().map(|a| &a.tables).into_iter().flatten() {
            out.push(Block::Table(breakdown(&format!("{name} of {}", c.label), t)));
        }
    }
    out
}

/// The attempt's own labels as one line under the cell's label (`slo_search in=128: mode
/// concurrency; slo ttft:500`), None without labels.
pub(crate) fn labels_line(label: &str, a: &crate::report::extension::ExtensionAttempt) -> Option<String> {
    let pairs: Vec<String> = a.labels.iter().map(|(k, v)| format!("{k} {v}")).collect();
    (!pairs.is_empty()).then(|| format!("{label}: {}", pairs.join("; ")))
}

/// A value of a breakdown as its unit reads: counts and tokens whole, ms as the tables print
/// latencies, anything else with three decimals.
pub(crate) fn fmt_value(unit: &str, v: Option<f64>) -> String {
    match (unit, v) {
        (_, None) => MISSING.into(),
        ("count" | "tokens" | "streams", Some(v)) => format!("{v:.0}"),
        ("ms", v) => fmt_latency_ms(v),
        (_, Some(v)) => format!("{v:.3}"),
    }
}

/// One of an attempt's own breakdowns (a conversation's `turns`) titled `title`.
fn breakdown(title: &str, t: &ExtensionTable) -> Table {
    let mut header = vec![t.key.clone()];
    header.extend(t.columns.iter().map(|c| c.name.clone()));
    let mut table = Table::new(title.to_string(), header);
    for r in &t.rows {
        let mut cells = vec![r.key.to_string()];
        cells.extend(t.columns.iter().zip(&r.values).map(|(c, v)| fmt_value(&c.unit, *v)));
        table.rows.push(Row { cells, dim: None });
    }
    table
}
