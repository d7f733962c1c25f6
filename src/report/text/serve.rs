//! The serve experiment's table: rows input len, columns the load (`inf`, `4/s`, `8@4/s`),
//! output tok/s with TTFT and TPOT medians as dim detail.

use super::blocks::Block;
use super::format::{MISSING, NOT_RUN, SKIPPED, fmt_error_suffix, fmt_latency_ms, fmt_tps};
use super::table::{Row, Table};

/// The serve cells as an input len x load matrix.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServeView {
    /// Input length row labels, e.g. `1k`.
    pub ctx_labels: Vec<String>,
    /// Column labels: the load of each column.
    pub columns: Vec<String>,
    /// Cells indexed `[row][column]`; missing entries render as not run.
    pub cells: Vec<Vec<ServeCellView>>,
    /// Knees: `(row, column, footnote)`, marked `K` in their cell.
    pub knees: Vec<(usize, usize, String)>,
    /// The `--goodput` SLO as text (`TTFT ≤ 100 ms, TPOT ≤ 20 ms`); None without one.
    pub goodput_slo: Option<String>,
    /// `--random-range-ratio`: how far request lengths spread around the row's (0: exact).
    pub range_ratio: f64,
    /// The dataset file the prompts came from, as its legend line; None for token ids.
    pub dataset: Option<String>,
}

/// One serve cell as the table shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum ServeCellView {
    /// Its last attempt ran.
    Measured {
        /// vLLM's output throughput, tok/s.
        output_tps: f64,
        /// Failed requests.
        failed: u64,
        /// Median TTFT, ms.
        ttft_ms: Option<f64>,
        /// Median TPOT, ms.
        tpot_ms: Option<f64>,
        /// Good requests (meeting `--goodput`) per second of the cell; None without the SLO.
        goodput: Option<f64>,
        /// Good requests and requests sent, when the SLO was given.
        good: Option<(u64, u64)>,
        /// The prefix cache's warm note when it served more than the workload shares.
        warm: Option<String>,
        /// The schedule-lag note when the client fell behind the cell's schedule.
        behind: Option<String>,
    },
    /// Skipped before it ran.
    Skipped,
    /// Never run.
    #[default]
    NotRun,
}

const SERVE_TITLE: &str = "Serve output tok/s  + TTFT/TPOT median ms";
const SERVE_LEGEND: &str = "Serve cells (vllm bench serve's workload and definitions) show \
    output tok/s over the cell's duration, with dim detail as the median TTFT ms / median TPOT \
    ms of completed requests. Columns: inf = every prompt arrives at once, R/s = arrivals \
    at R requests/s (both with at most --max-concurrency in flight), C@R/s = R/s with at most C, \
    trace = a trace on its own schedule. (Ne) = N requests failed; \
    ∅ = skipped (the input len does not fit the model); · = not run.";

const WARM_LEGEND: &str = "W = warm cache: the server's prefix cache served more of the cell's \
    prompt tokens than its own requests share (prompts an earlier run left there, e.g. a repeated \
    --seed); its figures are not cold-cache figures.";

const LATE_LEGEND: &str = "L = late: requests were sent more than 10 ms after their arrival on \
    the schedule (a trace's time or --request-rate's arrivals) while a --max-concurrency slot was \
    free: the client fell behind, so the load offered was lighter than planned.";

/// The serve table and its legend.
pub(crate) fn serve_blocks(view: &ServeView) -> Vec<Block> {
    let mut header = vec!["in \\ load".to_string()];
    header.extend(view.columns.iter().cloned());
    let mut table = Table::new(SERVE_TITLE, header);
    let (mut warm, mut late) = (Vec::new(), Vec::new());
    for (r, label) in view.ctx_labels.iter().enumerate() {
        let mut cells = vec![label.clone()];
        let mut dim = vec![String::new()];
        for c in 0..view.columns.len() {
            let cell = view.cells.get(r).and_then(|row| row.get(c)).cloned().unwrap_or_default();
            let (mut main, detail) = cell_text(&cell);
            if view.knees.iter().any(|(kr, kc, _)| (*kr, *kc) == (r, c)) {
                main.push_str(" K");
            }
            if let ServeCellView::Measured { warm: Some(note), .. } = &cell {
                main.push_str(" W");
                warm.push(format!("W {label} {}: {note}.", view.columns[c]));
            }
            if let ServeCellView::Measured { behind: Some(note), .. } = &cell {
                main.push_str(" L");
                late.push(format!("L {label} {}: {note}.", view.columns[c]));
            }
            cells.push(main);
            dim.push(detail);
        }
        let has_dim = dim.iter().any(|d| !d.is_empty());
        table.rows.push(Row { cells, dim: has_dim.then_some(dim) });
    }
    let notes: Vec<String> = view.knees.iter().map(|(_, _, note)| format!("K: {note}")).collect();
    let mut legend = vec![SERVE_LEGEND.to_string()];
    if view.range_ratio > 0.0 {
        legend.push(spread_note(view.range_ratio));
    }
    legend.extend(view.dataset.clone());
    legend.extend(notes);
    if !warm.is_empty() {
        legend.push(WARM_LEGEND.to_string());
        legend.extend(warm);
    }
    if !late.is_empty() {
        legend.push(LATE_LEGEND.to_string());
        legend.extend(late);
    }
    let legend: Vec<&str> = legend.iter().map(String::as_str).collect();
    let mut out = vec![Block::Table(table), Block::legend(&legend)];
    if let Some(slo) = &view.goodput_slo {
        out.push(Block::Table(goodput_table(view)));
        out.push(Block::Legend(vec![format!("{GOODPUT_LEGEND} ({slo}).")]));
    }
    out
}

/// What a row's input len means when lengths spread (`--random-range-ratio`).
fn spread_note(r: f64) -> String {
    let pct = r * 100.0;
    format!(
        "Lengths spread (--random-range-ratio {r}): each request's input and output length is uniform \
         within ±{pct:.0}% of the row's input len and of --random-output-len; the row is their mean."
    )
}

const GOODPUT_TITLE: &str = "Serve goodput: good/requests  + good req/s";
const GOODPUT_LEGEND: &str = "Goodput (vllm bench serve's request_goodput): completed requests \
    meeting every --goodput bound, over the requests of the cell, and per second of its duration";

/// The `--goodput` matrix: `good/requests` with good requests/s as dim detail.
fn goodput_table(view: &ServeView) -> Table {
    let mut header = vec!["in \\ load".to_string()];
    header.extend(view.columns.iter().cloned());
    let mut table = Table::new(GOODPUT_TITLE, header);
    for (r, label) in view.ctx_labels.iter().enumerate() {
        let (mut cells, mut dim) = (vec![label.clone()], vec![String::new()]);
        for c in 0..view.columns.len() {
            let (main, detail) = match view.cells.get(r).and_then(|row| row.get(c)) {
                Some(ServeCellView::Measured { goodput, good, .. }) => (
                    good.map_or(MISSING.to_string(), |(g, n)| format!("{g}/{n}")),
                    goodput.map_or(String::new(), |g| format!("{g:.2}/s")),
                ),
                Some(ServeCellView::Skipped) => (SKIPPED.to_string(), String::new()),
                _ => (NOT_RUN.to_string(), String::new()),
            };
            cells.push(main);
            dim.push(detail);
        }
        let has_dim = dim.iter().any(|d| !d.is_empty());
        table.rows.push(Row { cells, dim: has_dim.then_some(dim) });
    }
    table
}

/// A per-token latency, ms: one decimal below 10 ms, else as other latencies.
fn fmt_token_ms(ms: Option<f64>) -> String {
    match ms {
        Some(v) if v.is_finite() && v.abs() < 9.95 => format!("{v:.1}"),
        other => fmt_latency_ms(other),
    }
}

fn cell_text(cell: &ServeCellView) -> (String, String) {
    match cell {
        ServeCellView::Measured { output_tps, failed, ttft_ms, tpot_ms, .. } => {
            let tps = if output_tps.is_finite() { fmt_tps(*output_tps) } else { MISSING.to_string() };
            (
                format!("{tps}{}", fmt_error_suffix(*failed)),
                format!("{}/{}", fmt_token_ms(*ttft_ms), fmt_token_ms(*tpot_ms)),
            )
        }
        ServeCellView::Skipped => (SKIPPED.to_string(), String::new()),
        ServeCellView::NotRun => (NOT_RUN.to_string(), String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::text::{BoxStyle, RenderOptions, render_text_blocks};

    #[test]
    fn rows_are_input_lens_and_columns_the_loads() {
        let measured = ServeCellView::Measured {
            output_tps: 1234.0,
            failed: 2,
            ttft_ms: Some(85.0),
            tpot_ms: Some(7.25),
            goodput: None,
            good: None,
            warm: None,
            behind: None,
        };
        let view = ServeView {
            ctx_labels: vec!["1k".into(), "4k".into()],
            columns: vec!["2/s".into(), "inf".into()],
            cells: vec![vec![measured.clone(), ServeCellView::Skipped], vec![measured]],
            knees: vec![(1, 0, "knee at conc 8 (ctx 4k): tok/s +0.4%, TTFT p50 +310%".into())],
            goodput_slo: None,
            range_ratio: 0.0,
            dataset: None,
        };
        let text = render_text_blocks(
            &serve_blocks(&view),
            RenderOptions { style: BoxStyle::Ascii, dim_ansi: false, max_width: None },
        );
        assert!(text.contains("Serve output tok/s"), "{text}");
        let header = text.lines().find(|l| l.contains("2/s")).unwrap();
        assert!(header.find("2/s") < header.find("inf"), "{header}");
        let row = text.lines().find(|l| l.contains("1k")).unwrap();
        assert!(row.contains("(2e)") && row.contains(SKIPPED), "{row}");
        assert!(text.contains("85/7.2") || text.contains("85/7.3"), "{text}");
        let knee_row = text.lines().find(|l| l.contains("4k")).unwrap();
        assert!(knee_row.contains(" K |") && knee_row.contains(NOT_RUN), "{knee_row}");
        assert!(text.contains("K: knee at conc 8 (ctx 4k): tok/s +0.4%, TTFT p50 +310%"), "{text}");
        assert!(!text.contains("goodput"), "no --goodput, no goodput matrix");
        assert!(!text.contains("Lengths spread"), "exact lengths need no note");
        let spread = render_text_blocks(
            &serve_blocks(&ServeView { range_ratio: 0.25, ..view.clone() }),
            RenderOptions { style: BoxStyle::Ascii, dim_ansi: false, max_width: Some(80) },
        );
        assert!(spread.contains("Lengths spread (--random-range-ratio 0.25)") && spread.contains("±25%"), "{spread}");
        let line = "prompts: sharegpt sg.json (sha256 abababab…): 4 of 9 entries sampled".to_string();
        let from_file = render_text_blocks(
            &serve_blocks(&ServeView { dataset: Some(line.clone()), ..view }),
            RenderOptions { style: BoxStyle::Ascii, dim_ansi: false, max_width: None },
        );
        assert!(from_file.contains(&line), "the dataset is said under the table: {from_file}");
        assert!(!from_file.contains("W = warm cache"), "no warm cell, no warm legend");
    }

    #[test]
    fn a_warm_cell_and_a_late_one_are_marked_and_their_notes_say_how() {
        let note = "warm cache: 98.0% of prompt tokens came from the prefix cache, the workload shares at most 0.0%";
        let cell = ServeCellView::Measured {
            output_tps: 900.0,
            failed: 0,
            ttft_ms: Some(5.0),
            tpot_ms: Some(1.0),
            goodput: None,
            good: None,
            warm: Some(note.into()),
            behind: Some(
                "the client fell behind the schedule: 2 requests sent over 10 ms late with a slot free (worst 31 ms)"
                    .into(),
            ),
        };
        let view = ServeView {
            ctx_labels: vec!["1k".into()],
            columns: vec!["inf".into()],
            cells: vec![vec![cell]],
            ..ServeView::default()
        };
        let text = render_text_blocks(
            &serve_blocks(&view),
            RenderOptions { style: BoxStyle::Ascii, dim_ansi: false, max_width: None },
        );
        assert!(text.lines().any(|l| l.contains("| 1k") && l.contains("900.0 W")), "{text}");
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("W = warm cache") && flat.contains(&format!("W 1k inf: {note}.")), "{text}");
        assert!(text.lines().any(|l| l.contains("900.0 W L")), "a late cell is marked L: {text}");
        assert!(
            flat.contains("L = late:") && flat.contains("L 1k inf: the client fell behind the schedule: 2 requests"),
            "{text}"
        );
    }

    #[test]
    fn a_goodput_slo_adds_the_goodput_matrix() {
        let cell = ServeCellView::Measured {
            output_tps: 900.0,
            failed: 0,
            ttft_ms: Some(85.0),
            tpot_ms: Some(7.0),
            goodput: Some(2.5),
            good: Some((50, 64)),
            warm: None,
            behind: None,
        };
        let view = ServeView {
            ctx_labels: vec!["1k".into()],
            columns: vec!["4/s".into(), "inf".into()],
            cells: vec![vec![cell, ServeCellView::NotRun]],
            knees: Vec::new(),
            goodput_slo: Some("TTFT ≤ 100 ms".into()),
            range_ratio: 0.0,
            dataset: None,
        };
        let opts = RenderOptions { style: BoxStyle::Ascii, dim_ansi: false, max_width: None };
        let text = render_text_blocks(&serve_blocks(&view), opts);
        assert!(text.contains("Serve goodput: good/requests"), "{text}");
        let row = text.lines().filter(|l| l.contains("1k")).nth(1).expect("the goodput row");
        assert!(row.contains("50/64") && row.contains(NOT_RUN), "{row}");
        assert!(text.contains("2.50/s") && text.contains("(TTFT ≤ 100 ms)."), "{text}");
    }
}
