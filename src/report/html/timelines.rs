//! Timelines over the session: KV usage and running/waiting requests per replica (from
//! `replica_series`, with the stretches a replica's polls failed shaded), and the operator's
//! actions, drawn as marks on every timeline and on one of their own.

use super::page::{escape, table};
use super::routing::{replica_names, swatch};
use super::svg::{self, Area, Drawn, GRID, HPos, INK, MUTED, VPos};
use crate::report::json::{ActionRecord, SeriesPoint, SessionReport};
use plotters::prelude::*;
use std::ops::Range;

/// The time span every timeline shares, seconds since the session start.
fn time_span(report: &SessionReport) -> Range<f64> {
    let series = report.replica_series.values().flatten().map(|p| p.t_s);
    let times: Vec<f64> = series.chain(report.actions.iter().map(|a| a.at_s)).filter(|t| t.is_finite()).collect();
    let lo = times.iter().copied().fold(f64::INFINITY, f64::min).min(0.0);
    let hi = times.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    svg::span(lo, hi)
}

/// One plotted quantity of a series point.
type Field = fn(&SeriesPoint) -> Option<f64>;

/// The timelines section's content: KV, queue, actions; empty when the report has none.
pub(super) fn timelines(report: &SessionReport) -> String {
    let mut out = String::new();
    let span = time_span(report);
    let names = replica_names(report);
    let has = |f: Field| report.replica_series.values().flatten().any(|p| f(p).is_some());
    if has(|p| p.kv_usage) {
        let label = "KV-cache usage per replica, % over session time";
        let lines: Vec<Line> = lines(report, &names, &[(|p| p.kv_usage.map(|v| v * 100.0), "")]);
        out.push_str("<h3>KV-cache usage</h3>\n");
        out.push_str(&svg::chart(label, svg::WIDTH, 280, |a| {
            draw_timeline(a, report, &span, &lines, "KV used, %", Some(100.0))
        }));
        out.push('\n');
    }
    if has(|p| p.running) || has(|p| p.waiting) {
        let label = "Running and waiting requests per replica over session time";
        let lines = lines(report, &names, &[(|p| p.running, "running"), (|p| p.waiting, "waiting")]);
        out.push_str("<h3>Running and waiting requests</h3>\n");
        out.push_str(&svg::chart(label, svg::WIDTH, 300, |a| {
            draw_timeline(a, report, &span, &lines, "requests", None)
        }));
        out.push_str("\n<p class=\"legend\">Solid: running; dashed: waiting (queued).</p>\n");
    }
    if !out.is_empty() {
        let legend: Vec<String> = names
            .iter()
            .enumerate()
            .filter(|(_, n)| report.replica_series.contains_key(*n))
            .map(|(i, n)| swatch(i, n))
            .collect();
        out.push_str(&format!(
            "<p class=\"legend\">{} · red bands: the replica's metrics polls failed · grey lines: operator actions.</p>\n",
            legend.join(" ")
        ));
    }
    out
}

/// One line of a timeline: replica colour index, dashed or not, the points.
struct Line {
    color: usize,
    dashed: bool,
    points: Vec<(f64, f64)>,
}

/// The lines of `fields` (a quantity and its name; later fields dashed) for every replica.
fn lines(report: &SessionReport, names: &[String], fields: &[(Field, &str)]) -> Vec<Line> {
    let mut out = Vec::new();
    for (name, points) in &report.replica_series {
        let color = names.iter().position(|n| n == name).unwrap_or(0);
        for (k, (field, _)) in fields.iter().enumerate() {
            let points: Vec<(f64, f64)> = points
                .iter()
                .filter_map(|p| Some((p.t_s, field(p)?)))
                .filter(|(t, v)| t.is_finite() && v.is_finite())
                .collect();
            for run in runs(points) {
                out.push(Line { color, dashed: k > 0, points: run });
            }
        }
    }
    out
}

/// A gap between two polled points longer than this, seconds, is drawn as a break: nothing was
/// polled there (an interrupted and resumed session, a replica down), so no line is made up.
const GAP_S: f64 = 3.0;

/// `points` split where consecutive times are more than [`GAP_S`] apart.
fn runs(points: Vec<(f64, f64)>) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    for p in points {
        match out.last_mut() {
            Some(run) if run.last().is_some_and(|q| p.0 - q.0 <= GAP_S) => run.push(p),
            _ => out.push(vec![p]),
        }
    }
    out
}

/// Draws `lines` over `span`, the stale stretches and the action marks; `top` fixes the y range.
fn draw_timeline(
    area: &Area,
    report: &SessionReport,
    span: &Range<f64>,
    lines: &[Line],
    y_desc: &str,
    top: Option<f64>,
) -> Drawn {
    let hi =
        top.unwrap_or_else(|| lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)).fold(1.0_f64, f64::max) * 1.1);
    let mut chart = ChartBuilder::on(area)
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(span.clone(), 0.0..hi)?;
    chart
        .configure_mesh()
        .light_line_style(WHITE)
        .bold_line_style(GRID)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| svg::compact(*v))
        .x_desc("seconds since session start")
        .y_desc(y_desc)
        .label_style(svg::text(12, INK))
        .axis_desc_style(svg::text(13, MUTED))
        .draw()?;
    let stale = report.replica_stale.values().flatten();
    let band = RGBColor(0xd6, 0x27, 0x28).mix(0.12).filled();
    chart.draw_series(stale.map(|s| Rectangle::new([(s.from_s, 0.0), (s.to_s.unwrap_or(span.end), hi)], band)))?;
    for a in &report.actions {
        chart.draw_series([PathElement::new([(a.at_s, 0.0), (a.at_s, hi)], MUTED.mix(0.45).stroke_width(1))])?;
    }
    for line in lines {
        let style = svg::series(line.color).stroke_width(2);
        if line.dashed {
            chart.draw_series(DashedLineSeries::new(line.points.iter().copied(), 6, 4, style))?;
        } else {
            chart.draw_series(LineSeries::new(line.points.iter().copied(), style))?;
        }
    }
    Ok(())
}

/// The actions on their own timeline (labels in staggered lanes) and as a table; empty without actions.
pub(super) fn actions(report: &SessionReport) -> String {
    if report.actions.is_empty() {
        return String::new();
    }
    let span = time_span(report);
    let label = "Operator actions and session events over session time";
    let mut out = svg::chart(label, svg::WIDTH, 190, |a| draw_actions(a, &span, &report.actions));
    out.push('\n');
    let rows: Vec<Vec<String>> = report
        .actions
        .iter()
        .map(|a| vec![format!("{:.1}", a.at_s), escape(&a.action), escape(a.cell.as_deref().unwrap_or("—"))])
        .collect();
    out.push_str(&table(&["at, s", "action", "cell or phase"], &["at, s"], &rows));
    out
}

/// Lanes the action labels are spread over.
const LANES: usize = 4;

/// Draws one mark per action with its name (and cell) beside it, each in the first lane where it
/// overlaps no earlier label; names near the right edge are written leftwards.
fn draw_actions(area: &Area, span: &Range<f64>, actions: &[ActionRecord]) -> Drawn {
    let mut chart = ChartBuilder::on(area)
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(span.clone(), 0.0..LANES as f64)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .light_line_style(WHITE)
        .bold_line_style(GRID)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .x_desc("seconds since session start")
        .label_style(svg::text(12, INK))
        .axis_desc_style(svg::text(13, MUTED))
        .draw()?;
    let right = chart.backend_coord(&(span.end, 0.0)).0;
    let mut lane_end = [i32::MIN; LANES];
    for a in actions {
        let name = match &a.cell {
            Some(cell) => format!("{} {cell}", a.action),
            None => a.action.clone(),
        };
        let x = chart.backend_coord(&(a.at_s, 0.0)).0;
        let width = 8 * name.chars().count() as i32 + 16;
        let leftwards = x + width > right + 10;
        let (from, to) = if leftwards { (x - width, x) } else { (x, x + width) };
        let lane = (0..LANES)
            .find(|&k| lane_end[k] < from)
            .unwrap_or_else(|| (0..LANES).min_by_key(|&k| lane_end[k]).unwrap_or(0));
        lane_end[lane] = to;
        let y = LANES as f64 - 0.45 - lane as f64;
        let color = action_color(&a.action);
        chart.draw_series([PathElement::new([(a.at_s, 0.0), (a.at_s, y)], color.stroke_width(1))])?;
        let (dx, anchor) = if leftwards { (-7, HPos::Right) } else { (7, HPos::Left) };
        let mark = EmptyElement::at((a.at_s, y))
            + Circle::new((0, 0), 4, color.filled())
            + Text::new(name, (dx, 0), svg::anchored(12, INK, anchor, VPos::Center));
        chart.draw_series([mark])?;
    }
    Ok(())
}

/// The mark colour of an action: red for the session stopping, orange for operator
/// interventions, blue for the rest.
fn action_color(action: &str) -> RGBColor {
    match action {
        "interrupted" | "quit" | "stopped" => svg::series(3),
        "pause" | "resume" | "skip" | "rerun" => svg::series(1),
        _ => svg::series(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::json::StaleInterval;
    use crate::report::tests_schema::{full_report, minimal_report};

    #[test]
    fn series_and_actions_are_drawn() {
        let mut report = full_report();
        let point = |t: f64| SeriesPoint { t_s: t, ..report.replica_series["r0"][0].clone() };
        report.replica_series.insert("r1".into(), vec![point(10.0), point(20.0)]);
        report
            .replica_stale
            .insert("r1".into(), vec![StaleInterval { from_s: 12.0, to_s: None, error: "refused".into() }]);
        let out = timelines(&report);
        assert!(out.contains("aria-label=\"KV-cache usage per replica, % over session time\""), "{out}");
        assert!(out.contains("aria-label=\"Running and waiting requests per replica over session time\""), "{out}");
        assert!(out.contains("polyline"), "lines drawn: {out}");
        let acts = actions(&report);
        assert!(acts.contains("rerun ctx=16k conc=8") && acts.contains("<td>rerun</td>"), "{acts}");
    }

    #[test]
    fn a_gap_in_the_polls_breaks_the_line() {
        let points = vec![(0.0, 1.0), (1.0, 2.0), (8.5, 2.0), (19.9, 0.0), (21.2, 2.0)];
        let got: Vec<usize> = runs(points).iter().map(Vec::len).collect();
        assert_eq!(got, [2, 1, 2], "no line across 1 s..8.5 s nor 8.5 s..19.9 s");
        assert!(runs(Vec::new()).is_empty());
    }

    #[test]
    fn nothing_to_draw_renders_nothing() {
        assert_eq!(timelines(&minimal_report()), "");
        assert_eq!(actions(&minimal_report()), "");
        assert_eq!(time_span(&minimal_report()), 0.0..1.0);
    }
}
