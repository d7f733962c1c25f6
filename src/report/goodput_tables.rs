//! The goodput matrices of the text and markdown reports: good/judged per decode and burst
//! cell against `plan.slo`, shown when the user chose the SLO (docs/reports.md §6).

use super::goodput::Goodput;
use super::json::SessionReport;
use super::text::format::{CORNER, NOT_RUN};
use super::text::{Block, Panel, Row, Table};
// The attempt the aggregate matrix shows (measured or errored cells only): a stopped or
// skipped cell reads `·` in every matrix.
use super::vllm::result_attempt;

const BODY: &str = "Requests that met the SLO over those judged, per cell's last attempt, with good \
    requests per second of the window (burst: of the makespan). Decode judges the requests that \
    were running in the window on what they showed by its end (docs/reports.md §6).";
const DECODE_TITLE: &str = "Decode goodput: good/judged  + good req/s";
const BURST_TITLE: &str = "Burst goodput: good/judged  + good req/s";

/// `(ctx label, column label, goodput)` of each cell, from its last attempt.
type Cells = Vec<(String, String, Option<Goodput>)>;

/// Column labels of `cells` as the aggregate matrix labels them (`4`, `8/s`, `inf`, `8@4/s`),
/// in order of first appearance.
fn columns(cells: &Cells) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (_, col, _) in cells {
        if !out.contains(col) {
            out.push(col.clone());
        }
    }
    out
}

/// The label of a matrix column: the concurrency, or the open-loop rate (with its cap when
/// several concurrencies share a rate).
fn column(conc: u32, rate: Option<crate::load::rate::Rate>, many_conc: bool) -> String {
    super::levels::column_label(conc, rate, many_conc)
}

fn matrix(title: &str, ctx_labels: &[String], cells: &Cells) -> Table {
    let cols = columns(cells);
    let mut header = vec![CORNER.to_string()];
    header.extend(cols.iter().cloned());
    let mut table = Table::new(title, header);
    for label in ctx_labels {
        let mut main = vec![label.clone()];
        let mut dim = vec![String::new()];
        for c in &cols {
            let g = cells.iter().find(|(l, k, _)| l == label && k == c).and_then(|(_, _, g)| *g);
            main.push(g.map_or_else(|| NOT_RUN.to_string(), |g| format!("{}/{}", g.good, g.judged)));
            dim.push(g.map(|g| format!("{:.2}/s", g.rps)).unwrap_or_default());
        }
        table.rows.push(Row { cells: main, dim: Some(dim) });
    }
    table
}

/// The goodput panel and matrices of `report`; empty unless its SLO was chosen by a flag (or
/// the demo) and some cell was judged.
pub(crate) fn goodput_blocks(report: &SessionReport) -> Vec<Block> {
    let Some(slo) = report.plan.slo.filter(|s| s.source.is_chosen()) else { return Vec::new() };
    let mut tables = Vec::new();
    if let Some(d) = &report.decode {
        let many = d.conc.len() > 1;
        let cell = |c: &super::json::DecodeCell| {
            let mean = super::runs::shown(&c.attempts, c.runs.as_ref());
            let shown = result_attempt(c.status, mean.as_deref());
            (c.ctx_label.clone(), column(c.conc, c.rate, many), shown.and_then(|a| a.goodput))
        };
        let cells: Cells = d.cells.iter().map(cell).collect();
        if cells.iter().any(|c| c.2.is_some()) {
            tables.push(matrix(DECODE_TITLE, &d.ctx_labels, &cells));
        }
    }
    if let Some(b) = &report.burst {
        let cell = |c: &super::json::BurstCellReport| {
            let mean = super::runs::shown(&c.attempts, c.runs.as_ref());
            let shown = result_attempt(c.status, mean.as_deref());
            (c.ctx_label.clone(), c.conc.to_string(), shown.and_then(|a| a.goodput))
        };
        let cells: Cells = b.cells.iter().map(cell).collect();
        if cells.iter().any(|c| c.2.is_some()) {
            tables.push(matrix(BURST_TITLE, &b.ctx_labels, &cells));
        }
    }
    if tables.is_empty() {
        return Vec::new();
    }
    let head = slo.describe();
    let mut out = vec![Block::Blank, Block::Panel(Panel::new("Goodput", &[head.as_str(), BODY]))];
    out.extend(tables.into_iter().map(Block::Table));
    out
}

#[cfg(test)]
mod tests {
    use crate::report::goodput::{PlanSlo, SloSource};
    use crate::report::tables::render_text;
    use crate::report::tests_example::full_report;

    #[test]
    fn goodput_shows_only_when_the_slo_was_chosen() {
        let mut r = full_report();
        let text = render_text(&r, true, false);
        assert!(text.contains("goodput SLO: TTFT ≤ 2000 ms, TPOT ≤ 50 ms, E2EL ≤ 60000 ms"), "{text}");
        assert!(text.contains("Decode goodput: good/judged") && text.contains("Burst goodput"), "{text}");
        assert!(text.contains("1/3") && text.contains("0.03/s") && text.contains("1/4"), "{text}");
        r.plan.slo = Some(PlanSlo { source: SloSource::Default, ..r.plan.slo.unwrap() });
        assert!(!render_text(&r, true, false).contains("goodput"), "the default SLO is not printed");
        r.plan.slo = None;
        assert!(!render_text(&r, true, false).contains("goodput"));
    }

    #[test]
    fn a_stopped_cell_reads_not_run_in_the_goodput_matrix_as_in_the_aggregate() {
        use crate::report::status::CellOutcome;
        let mut r = full_report();
        // The 16k row's conc 4 cell (the matrix's first column), as drawn.
        let conc4 = |r: &crate::report::json::SessionReport| {
            let text = render_text(r, true, false);
            let from = text.find("Decode goodput: good/judged").expect("the decode goodput matrix");
            let row = text[from..].lines().find(|l| l.contains("16k")).expect("the 16k row").to_string();
            row.split('|').nth(2).expect("a conc 4 column").trim().to_string()
        };
        assert_eq!(conc4(&r), "1/3");
        let cell = r.decode.as_mut().unwrap().cells.iter_mut().find(|c| c.conc == 4).expect("the conc 4 cell");
        cell.status = CellOutcome::SkippedByOperator;
        assert_eq!(conc4(&r), super::NOT_RUN, "the stopped attempt's window is not shown");
    }
}
