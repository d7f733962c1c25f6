//! The decode matrices (aggregate and per-request tok/s) and the burst matrix as heatmaps:
//! context down, concurrency across, the text report's notation in the cells (`*` capacity
//! limited, `(Ne)` failed requests, `∅` skipped, `·` not run).

use super::page::escape;
use super::svg::{self, Area, Drawn, HPos, INK, MUTED, VPos};
use crate::report::json::SessionReport;
use crate::report::tables::{burst_view, decode_view};
use crate::report::text::format::{NOT_RUN, SKIPPED, fmt_error_suffix, fmt_errored, fmt_running_suffix, fmt_tps};
use crate::report::text::{BurstCellView, CellView};
use plotters::prelude::*;

/// One cell of a heatmap.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Heat {
    /// A measured value: colour from `value`, `label` in the cell, `detail` under it.
    Value { value: f64, label: String, detail: String },
    /// Every request failed: the label (`0.0 (2e)`) on red.
    Errored(String),
    /// Does not fit in the KV cache (`∅`).
    Skipped,
    /// Not run (`·`).
    NotRun,
}

/// A matrix to draw: row labels (contexts), column values (concurrencies), cells `[row][col]`.
pub(super) struct Matrix {
    pub rows: Vec<String>,
    pub cols: Vec<u32>,
    pub cells: Vec<Vec<Heat>>,
}

/// The heatmaps of the decode section (aggregate, then per-request tok/s) and of the burst.
pub(super) fn heatmaps(report: &SessionReport) -> String {
    let mut out = String::new();
    if let Some(view) = decode_view(report) {
        let grid = |per_request: bool| Matrix {
            rows: view.ctx_labels.clone(),
            cols: view.conc.clone(),
            cells: view.cells.iter().map(|row| row.iter().map(|c| decode_heat(c, per_request)).collect()).collect(),
        };
        out.push_str("<h3>Aggregate tok/s</h3>\n");
        out.push_str(&heatmap("Aggregate tok/s by context and concurrency", &grid(false)));
        out.push_str("<h3>Per-request tok/s</h3>\n");
        out.push_str(&heatmap("Per-request tok/s by context and concurrency", &grid(true)));
        out.push_str(&legend());
        let sources: Vec<&str> = view.aggregate_sources.iter().map(String::as_str).collect();
        if !sources.is_empty() {
            out.push_str(&format!("<p class=\"legend\">Aggregate source(s): {}</p>\n", escape(&sources.join(", "))));
        }
    }
    out
}

/// The burst heatmap (output tok/s over the makespan), empty without a burst section.
pub(super) fn burst_heatmap(report: &SessionReport) -> String {
    let Some(view) = burst_view(report) else { return String::new() };
    let cells = view.cells.iter().map(|row| row.iter().map(burst_heat).collect()).collect();
    let matrix = Matrix { rows: view.ctx_labels, cols: view.conc, cells };
    heatmap("Burst output tok/s by context and burst size", &matrix)
}

/// The legend of the decode notation.
fn legend() -> String {
    "<p class=\"legend\">Darker is faster (scaled to each matrix's largest value). \
     <b>*kv</b> / <b>*seq</b> / <b>*?</b> capacity-limited: the engine held the cell below its \
     concurrency by its KV cache, by its sequence cap (max_num_seqs), or by a limit the metrics \
     do not name (running/requested under the value when they differ; <b>*</b> alone in reports \
     that predate the cause); running/requested with no mark: fewer ran but no limit was seen \
     (failed requests, or streams between requests) · <b>!</b> warmup timed out: a measurement failure, not a server \
     limit · <b>(Ne)</b> N failed requests · <b>∅</b> skipped: the \
     cell does not fit in the KV cache · <b>·</b> not run: skipped by the operator or the \
     session ended first.</p>\n"
        .to_string()
}

/// A decode cell as a heat cell: aggregate tok/s, or per-request tok/s when `per_request`.
fn decode_heat(cell: &CellView, per_request: bool) -> Heat {
    match cell {
        CellView::Measured(m) => {
            let value = if per_request { m.per_request_tps.unwrap_or(0.0) } else { m.aggregate_tps };
            // The mark (`*kv`, `!`, ...) goes beside the value, `X/Y` under it.
            let star = m.limit.text();
            let suffix = fmt_running_suffix(m.running_avg, m.requested, m.limit);
            let running = suffix.trim().strip_suffix(star.as_str()).unwrap_or(suffix.trim());
            let running = running.trim().trim_matches(|c| c == '(' || c == ')').to_string();
            let errors = fmt_error_suffix(m.errors).trim().to_string();
            let detail = [running, errors].into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>().join(" · ");
            Heat::Value { value, label: format!("{}{star}", fmt_tps(value)), detail }
        }
        CellView::Errored { errors } => Heat::Errored(fmt_errored(*errors)),
        CellView::Skipped => Heat::Skipped,
        CellView::NotRun | CellView::PastKnee => Heat::NotRun,
    }
}

/// A burst cell as a heat cell: output tok/s, `success/requests ok` under it when some failed.
fn burst_heat(cell: &BurstCellView) -> Heat {
    match cell {
        BurstCellView::Measured(b) if b.success == 0 && b.requests > 0 => Heat::Errored(fmt_errored(b.requests)),
        BurstCellView::Measured(b) => {
            let value = b.output_tps.unwrap_or(0.0);
            let detail =
                if b.success < b.requests { format!("{}/{} ok", b.success, b.requests) } else { String::new() };
            Heat::Value { value, label: fmt_tps(value), detail }
        }
        BurstCellView::Skipped => Heat::Skipped,
        BurstCellView::NotRun => Heat::NotRun,
    }
}

/// The fill of a value at `t` of the matrix's largest (0..1): light to dark blue.
pub(super) fn ramp(t: f64) -> RGBColor {
    const STOPS: [(f64, f64, f64); 3] = [(222.0, 235.0, 247.0), (107.0, 174.0, 214.0), (8.0, 48.0, 107.0)];
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 };
    let (a, b, u) = if t < 0.5 { (STOPS[0], STOPS[1], t * 2.0) } else { (STOPS[1], STOPS[2], t * 2.0 - 1.0) };
    let mix = |x: f64, y: f64| (x + (y - x) * u).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// One heatmap chart of `m`, or a note when the matrix is empty.
pub(super) fn heatmap(label: &str, m: &Matrix) -> String {
    if m.rows.is_empty() || m.cols.is_empty() {
        return format!("<p class=\"note\">{}: no cells</p>\n", escape(label));
    }
    let width = (150 + 118 * m.cols.len() as u32).clamp(520, svg::WIDTH);
    let height = 96 + 50 * m.rows.len() as u32;
    svg::chart(label, width, height, |area| draw(area, m)) + "\n"
}

/// The fill, label colour and texts of one cell; `max` is the matrix's largest value.
fn look(cell: &Heat, max: f64) -> (RGBColor, RGBColor, String, String) {
    match cell {
        Heat::Value { value, label, detail } => {
            let fill = ramp(if max > 0.0 { value / max } else { 0.0 });
            let dark = f64::from(fill.0) * 0.299 + f64::from(fill.1) * 0.587 + f64::from(fill.2) * 0.114 < 140.0;
            (fill, if dark { WHITE } else { INK }, label.clone(), detail.clone())
        }
        Heat::Errored(label) => (RGBColor(0xff, 0xd8, 0xd3), RGBColor(0xa4, 0x0e, 0x26), label.clone(), String::new()),
        Heat::Skipped => (RGBColor(0xee, 0xee, 0xee), MUTED, SKIPPED.to_string(), String::new()),
        Heat::NotRun => (WHITE, MUTED, NOT_RUN.to_string(), String::new()),
    }
}

/// Draws the cells of `m` on `area`, first row at the top.
fn draw(area: &Area, m: &Matrix) -> Drawn {
    let (nr, nc) = (m.rows.len() as u32, m.cols.len() as u32);
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(svg::slots(nc), svg::slots(nr))?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(0)
        .y_labels(0)
        .x_desc("concurrency (streams)")
        .y_desc("context")
        .label_style(svg::text(13, INK))
        .axis_desc_style(svg::text(13, MUTED))
        .axis_style(svg::GRID)
        .draw()?;
    let x_at = |c: usize| chart.backend_coord(&(svg::mid(c), 0.0));
    svg::x_slot_labels(area, m.cols.iter().enumerate().map(|(c, v)| (v.to_string(), x_at(c))), false)?;
    let y_at = |r: usize| chart.backend_coord(&(0.0, svg::mid((nr - 1) as usize - r)));
    svg::y_slot_labels(area, m.rows.iter().enumerate().map(|(r, v)| (v.clone(), y_at(r))))?;
    let max =
        m.cells.iter().flatten().filter_map(|c| if let Heat::Value { value, .. } = c { Some(*value) } else { None });
    let max = max.filter(|v| v.is_finite()).fold(0.0_f64, f64::max);
    for (r, row) in m.cells.iter().enumerate() {
        let y = nr - 1 - r as u32;
        for (c, cell) in row.iter().enumerate().take(nc as usize) {
            let (fill, ink, label, detail) = look(cell, max);
            let (x0, y0) = (c as f64, f64::from(y));
            let (x1, y1) = (x0 + 1.0, y0 + 1.0);
            chart.draw_series([Rectangle::new([(x0, y0), (x1, y1)], fill.filled())])?;
            chart.draw_series([Rectangle::new([(x0, y0), (x1, y1)], WHITE.stroke_width(2))])?;
            let center = (svg::mid(c), svg::mid(y as usize));
            let centred = |size: u32| svg::anchored(size, ink, HPos::Center, VPos::Center);
            let dy = if detail.is_empty() { 0 } else { -7 };
            let main = EmptyElement::at(center) + Text::new(label, (0, dy), centred(15));
            chart.plotting_area().draw(&main)?;
            if !detail.is_empty() {
                let under = EmptyElement::at(center) + Text::new(detail, (0, 11), centred(11));
                chart.plotting_area().draw(&under)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests_schema::{full_report, minimal_report};

    #[test]
    fn cells_carry_the_text_notation() {
        let report = full_report();
        let out = heatmaps(&report);
        assert!(out.contains("aria-label=\"Aggregate tok/s by context and concurrency\""), "{out}");
        assert!(out.contains("564.8*seq!") && out.contains("7/8 · (2e)") && out.contains("0.0 (2e)"), "{out}");
        assert!(out.contains("70.6*seq!"), "per-request matrix: {out}");
        assert!(out.contains("\n16k\n</text>"), "row label: {out}");
        assert!(burst_heatmap(&report).contains("307.2"));
        assert_eq!(heatmaps(&minimal_report()), "");
        assert_eq!(burst_heatmap(&minimal_report()), "");
    }

    #[test]
    fn skipped_and_not_run_cells_show_their_marks() {
        let m = Matrix {
            rows: vec!["0".into(), "32k".into()],
            cols: vec![1, 2],
            cells: vec![
                vec![Heat::Skipped, Heat::NotRun],
                vec![Heat::Value { value: f64::NAN, label: "—".into(), detail: String::new() }],
            ],
        };
        let out = heatmap("m", &m);
        assert!(out.contains("\n∅\n") && out.contains("\n·\n") && out.contains("\n32k\n"), "{out}");
        assert!(heatmap("empty", &Matrix { rows: vec![], cols: vec![1], cells: vec![] }).contains("no cells"));
    }

    #[test]
    fn a_single_cell_fills_the_plot() {
        let cell = Heat::Value { value: 1.0, label: "1.0".into(), detail: String::new() };
        let out = heatmap("one", &Matrix { rows: vec!["0".into()], cols: vec![1], cells: vec![vec![cell]] });
        let widths = out
            .split("<rect ")
            .skip(1)
            .filter_map(|r| r.split("width=\"").nth(1)?.split('"').next()?.parse::<u32>().ok());
        assert!(
            widths.clone().any(|w| (200..520).contains(&w)),
            "cell rectangle collapsed: {:?}",
            widths.collect::<Vec<_>>()
        );
    }

    #[test]
    fn the_ramp_runs_light_to_dark() {
        assert_eq!(ramp(0.0), RGBColor(222, 235, 247));
        assert_eq!(ramp(1.0), RGBColor(8, 48, 107));
        assert_eq!(ramp(f64::NAN), ramp(0.0));
        assert_eq!(ramp(7.0), ramp(1.0));
    }
}
