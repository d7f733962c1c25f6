//! Charts of the matrices: tok/s against concurrency, one line per context, and the TTFT/TPOT
//! distributions of each cell's last attempt (from its summaries, or its request samples when a
//! summary is missing).

use super::page::escape;
use super::svg::{self, Area, Drawn, GRID, HPos, INK, MUTED, VPos};
use crate::report::json::{RequestRecord, SessionReport};
use crate::report::tables::decode_view;
use crate::report::text::CellView;
use crate::stats::Summary;
use plotters::prelude::*;

/// The spread of one distribution, ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Dist {
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub count: u64,
}

impl Dist {
    /// From a report summary.
    pub(super) fn of_summary(s: &Summary) -> Self {
        Self { min: s.min, p50: s.p50, p90: s.p90, p99: s.p99, count: s.count }
    }

    /// From raw samples (nearest rank); `None` without a finite sample.
    pub(super) fn of_samples(values: impl Iterator<Item = f64>) -> Option<Self> {
        let mut v: Vec<f64> = values.filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        let rank = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        (!v.is_empty()).then(|| Self {
            min: v[0],
            p50: rank(0.5),
            p90: rank(0.9),
            p99: rank(0.99),
            count: v.len() as u64,
        })
    }

    /// From a summary when the report has one, else from the request samples' `field`.
    pub(super) fn of(
        summary: Option<&Summary>,
        samples: &[RequestRecord],
        field: fn(&RequestRecord) -> Option<f64>,
    ) -> Option<Self> {
        summary.map(Self::of_summary).or_else(|| Self::of_samples(samples.iter().filter_map(field)))
    }
}

/// One context's line: its label and points of (column, tok/s, capacity limited).
type CtxLine = (String, Vec<(u32, f64, bool)>);

/// Aggregate tok/s against concurrency, one line per context; empty without measured cells.
pub(super) fn tps_by_conc(report: &SessionReport) -> String {
    let Some(view) = decode_view(report) else { return String::new() };
    let lines: Vec<CtxLine> = view
        .ctx_labels
        .iter()
        .zip(&view.cells)
        .map(|(label, row)| {
            let points = row.iter().enumerate().filter_map(|(i, c)| match c {
                CellView::Measured(m) if m.aggregate_tps.is_finite() => {
                    Some((i as u32, m.aggregate_tps, m.limit.any()))
                }
                _ => None,
            });
            (label.clone(), points.collect::<Vec<_>>())
        })
        .filter(|(_, p)| !p.is_empty())
        .collect();
    if lines.is_empty() {
        return "<p class=\"note\">No measured cell yet.</p>\n".to_string();
    }
    let label = "Aggregate tok/s against concurrency, one line per context";
    let chart = svg::chart(label, svg::WIDTH, 380, |area| draw_lines(area, &view.conc, &lines));
    chart
        + "\n<p class=\"legend\">Filled dots: measured at the requested concurrency; hollow dots: \
             capacity-limited (*). Cells that errored, were skipped or not run have no dot.</p>\n"
}

/// Draws `lines` (context label, points of (column, tok/s, capacity limited)) over the `conc` columns.
fn draw_lines(area: &Area, conc: &[u32], lines: &[CtxLine]) -> Drawn {
    let top = lines.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)).fold(0.0_f64, f64::max);
    let n = conc.len() as u32;
    let mut chart = ChartBuilder::on(area)
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(svg::slots(n), svg::padded(0.0, top))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(WHITE)
        .bold_line_style(GRID)
        .x_labels(0)
        .y_label_formatter(&|v| svg::compact(*v))
        .x_desc("concurrency (streams)")
        .y_desc("aggregate tok/s")
        .label_style(svg::text(13, INK))
        .axis_desc_style(svg::text(13, MUTED))
        .draw()?;
    let x_at = |c: usize| chart.backend_coord(&(svg::mid(c), 0.0));
    svg::x_slot_labels(area, conc.iter().enumerate().map(|(c, v)| (v.to_string(), x_at(c))), false)?;
    for (i, (ctx, points)) in lines.iter().enumerate() {
        let color = svg::series(i);
        let at = |p: &(u32, f64, bool)| (svg::mid(p.0 as usize), p.1);
        chart
            .draw_series(LineSeries::new(points.iter().map(at), color.stroke_width(2)))?
            .label(format!("ctx {ctx}"))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2)));
        let dots = points.iter().map(|p| {
            let style = if p.2 { WHITE.filled() } else { color.filled() };
            EmptyElement::at(at(p)) + Circle::new((0, 0), 4, style) + Circle::new((0, 0), 4, color.stroke_width(2))
        });
        chart.draw_series(dots)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(GRID)
        .label_font(svg::text(13, INK))
        .draw()?;
    Ok(())
}

/// TTFT and TPOT (per stream, docs/reports.md §1.2) distributions of every decode cell's last attempt; empty without a decode section.
pub(super) fn decode_distributions(report: &SessionReport) -> String {
    let Some(section) = &report.decode else { return String::new() };
    let rows = section.cells.iter().filter_map(|cell| {
        let a = cell.attempts.last()?;
        let itl = a.itl_ms.as_ref().or(a.itl_token_ms.as_ref());
        let ttft = Dist::of(a.ttft_ms.as_ref(), &a.request_samples, |r| r.ttft_ms);
        Some((format!("{}/{}", cell.ctx_label, cell.conc), ttft, Dist::of(itl, &a.request_samples, |r| r.itl_ms)))
    });
    two_distributions(rows, ["TTFT per cell (ctx/conc), ms", "TPOT per cell (ctx/conc), ms"])
}

/// TTFT and end-to-end latency of every burst cell's last attempt; empty without a burst.
pub(super) fn burst_distributions(report: &SessionReport) -> String {
    let Some(section) = &report.burst else { return String::new() };
    let rows = section.cells.iter().filter_map(|cell| {
        let a = cell.attempts.last()?;
        let ttft = Dist::of(a.ttft_ms.as_ref(), &a.request_samples, |r| r.ttft_ms);
        let e2e = Dist::of(a.e2e_ms.as_ref(), &a.request_samples, |r| Some(r.e2e_ms));
        Some((format!("{}/{}", cell.ctx_label, cell.conc), ttft, e2e))
    });
    two_distributions(
        rows,
        ["Burst TTFT per cell (ctx/burst), ms", "Burst end-to-end latency per cell (ctx/burst), ms"],
    )
}

/// Two distribution charts from `(cell name, first, second)` rows, then the legend.
fn two_distributions(rows: impl Iterator<Item = (String, Option<Dist>, Option<Dist>)>, titles: [&str; 2]) -> String {
    let (mut first, mut second) = (Vec::new(), Vec::new());
    for (name, a, b) in rows {
        first.extend(a.map(|d| (name.clone(), d)));
        second.extend(b.map(|d| (name, d)));
    }
    let mut out = distribution(titles[0], &first);
    out.push_str(&distribution(titles[1], &second));
    out.push_str(DIST_LEGEND);
    out
}

/// How to read the distribution glyphs.
const DIST_LEGEND: &str = "<p class=\"legend\">Each cell's last attempt: the line runs from the \
    fastest request to p99, the box from p50 to p90; the figure above is p50. From the attempt's \
    summary, or its request samples when it has none.</p>\n";

/// One distribution chart: a glyph per named distribution, or a note when there is none.
fn distribution(label: &str, dists: &[(String, Dist)]) -> String {
    if dists.is_empty() {
        return format!("<p class=\"note\">{}: no samples.</p>\n", escape(label));
    }
    format!("<h3>{}</h3>\n{}\n", escape(label), svg::chart(label, svg::WIDTH, 300, |area| draw_dists(area, dists)))
}

/// Draws the glyphs of `dists` side by side.
fn draw_dists(area: &Area, dists: &[(String, Dist)]) -> Drawn {
    let top = dists.iter().map(|(_, d)| d.p99).filter(|v| v.is_finite()).fold(0.0_f64, f64::max);
    let n = dists.len() as u32;
    let mut chart = ChartBuilder::on(area)
        .margin(14)
        .x_label_area_size(if n > 14 { 64 } else { 36 })
        .y_label_area_size(64)
        .build_cartesian_2d(svg::slots(n), svg::padded(0.0, top * 1.06))?;
    let y0 = chart.y_range().start;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(WHITE)
        .bold_line_style(GRID)
        .x_labels(0)
        .y_label_formatter(&|v| svg::compact(*v))
        .y_desc("ms")
        .label_style(svg::text(12, INK))
        .axis_desc_style(svg::text(13, MUTED))
        .draw()?;
    let x_at = |c: usize| chart.backend_coord(&(svg::mid(c), y0));
    svg::x_slot_labels(area, dists.iter().enumerate().map(|(c, d)| (d.0.clone(), x_at(c))), n > 14)?;
    let half = (380 / n.max(1)).clamp(4, 20) as i32;
    for (i, (_, d)) in dists.iter().enumerate() {
        let at = |y: f64| chart.backend_coord(&(svg::mid(i), y));
        let ((x, y_min), (_, y50), (_, y90), (_, y99)) = (at(d.min), at(d.p50), at(d.p90), at(d.p99));
        area.draw(&PathElement::new([(x, y_min), (x, y99)], INK.stroke_width(1)))?;
        for y in [y_min, y99] {
            area.draw(&PathElement::new([(x - half / 2, y), (x + half / 2, y)], INK.stroke_width(1)))?;
        }
        let fill = svg::series(0).mix(0.8).filled();
        area.draw(&Rectangle::new([(x - half, y90), (x + half, y50.max(y90 + 2))], fill))?;
        area.draw(&PathElement::new([(x - half, y50), (x + half, y50)], INK.stroke_width(2)))?;
        let centred = svg::anchored(11, MUTED, HPos::Center, VPos::Bottom);
        area.draw(&Text::new(svg::compact(d.p50), (x, y99 - 4), centred))?;
    }
    Ok(())
}
