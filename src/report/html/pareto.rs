//! The Pareto chart: every measured cell of one or more sources (report files, or an
//! engine-config sweep's sets) at its aggregate output tok/s (across) and the output tok/s one
//! user sees (up), the frontier as a stepped line with its cells filled, each point numbered
//! (frontier points named on the chart) and a table naming every point's cell and source.
//! Readable without colour: the marker's shape is the experiment, filled or hollow is on or
//! off the frontier; colour only tells sources apart, which the table names too.

use super::page::{escape, table};
use super::placement::{Placer, Spot, text_width};
use super::svg::{self, Area, Drawn, GRID, HPos, INK, MUTED, VPos};
use crate::report::pareto::frontier::{Frontier, Xy, frontier, staircase};
use crate::report::pareto::{Point, PointKind, Source, points};
use crate::report::text::format::fmt_tps;
use plotters::prelude::*;

/// The chart's accessible label (and the tests' handle on it).
pub(super) const LABEL: &str = "Output tok/s per user against aggregate output tok/s, with the Pareto frontier";

/// Width of the key right of the plot, px.
const KEY_WIDTH: i32 = 250;

/// `s` cut to `n` characters, an ellipsis ending a cut one.
fn short(s: &str, n: usize) -> String {
    match s.chars().count() > n {
        true => format!("{}…", s.chars().take(n - 1).collect::<String>()),
        false => s.to_string(),
    }
}

/// How to read the chart: the definitions of both axes (`report::pareto`).
const LEGEND: &str = "<p class=\"legend\">Each point is a measured cell as its tables show it (its latest attempt, or with --num-runs the mean of its runs). Across: \
    the cell's aggregate output tok/s (decode: window tokens / window; serve: <code>output_throughput</code>; \
    burst: tokens / makespan; conversation: tokens / attempt). Up: the output tok/s one user sees, \
    1000 / the cell's median TPOT in ms, a request's TPOT being (last token − first token) / (tokens − 1) \
    (decode: per stream over the window; serve: vLLM's <code>median_tpot_ms</code>; burst and conversation: \
    per completed request). Up and to the right is better. The stepped line is the Pareto frontier: the \
    cells no other cell beats on both (filled markers); a hollow marker is beaten on both by a frontier \
    cell. Markers: ● decode, ■ serve, ▲ burst, ◆ conversation (and other extensions). Errored, skipped \
    and unfinished cells have no point.</p>\n";

/// The chart, its legend and the table of points over `sources`; empty when no cell gives a
/// point. Sources are named on the chart and in the table when there are several.
pub fn pareto(sources: &[Source<'_>]) -> String {
    let points = points(sources);
    if points.is_empty() {
        return String::new();
    }
    let xy: Vec<Xy> = points.iter().map(Point::xy).collect();
    let front = frontier(&xy);
    let view = View { sources, points: &points, front: &front, named: sources.len() > 1 };
    let chart = svg::chart(LABEL, svg::WIDTH, 500, |area| view.draw(area));
    format!("{chart}\n{LEGEND}{}", view.table())
}

/// What the chart and the table are drawn from.
struct View<'a> {
    sources: &'a [Source<'a>],
    points: &'a [Point],
    front: &'a Frontier,
    /// Several sources: each point says which.
    named: bool,
}

/// A marker's shape, by the point's experiment.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Circle,
    Square,
    Triangle,
    Diamond,
}

impl Shape {
    fn of(kind: &PointKind) -> Self {
        match kind {
            PointKind::Decode => Self::Circle,
            PointKind::Serve => Self::Square,
            PointKind::Burst => Self::Triangle,
            PointKind::Extension(_) => Self::Diamond,
        }
    }

    /// The outline around `(x, y)` at half-size `r`, px.
    fn outline(self, (x, y): (i32, i32), r: i32) -> Vec<(i32, i32)> {
        match self {
            Self::Circle => (0..=16)
                .map(|k| f64::from(k) * std::f64::consts::TAU / 16.0)
                .map(|a| (x + (f64::from(r) * a.cos()).round() as i32, y + (f64::from(r) * a.sin()).round() as i32))
                .collect(),
            Self::Square => vec![(x - r, y - r), (x + r, y - r), (x + r, y + r), (x - r, y + r), (x - r, y - r)],
            Self::Triangle => vec![(x, y - r - 1), (x + r + 1, y + r), (x - r - 1, y + r), (x, y - r - 1)],
            Self::Diamond => vec![(x, y - r - 1), (x + r + 1, y), (x, y + r + 1), (x - r - 1, y), (x, y - r - 1)],
        }
    }

    /// Draws the marker: filled with `fill`, outlined in `line`.
    fn draw(self, area: &Area, at: (i32, i32), r: i32, fill: RGBColor, line: ShapeStyle) -> Drawn {
        let outline = self.outline(at, r);
        area.draw(&Polygon::new(outline.clone(), fill.filled()))?;
        area.draw(&PathElement::new(outline, line))?;
        Ok(())
    }
}

impl View<'_> {
    /// The label a frontier point carries on the chart: `3 ctx 16k · conc 8`, its source after
    /// it when there are several (control characters as visible escapes, `crate::text_safe`).
    fn long_label(&self, i: usize) -> String {
        let p = &self.points[i];
        let label = match self.named {
            true => format!("{} {} ({})", i + 1, p.cell, short(self.sources[p.source].label, 24)),
            false => format!("{} {}", i + 1, p.cell),
        };
        crate::text_safe::text(&label).into_owned()
    }

    fn draw(&self, area: &Area) -> Drawn {
        let (plot, _) = area.split_horizontally(svg::WIDTH as i32 - KEY_WIDTH);
        let top = |f: fn(&Point) -> f64| self.points.iter().map(f).fold(0.0_f64, f64::max) * 1.06;
        let mut chart =
            ChartBuilder::on(&plot).margin(16).x_label_area_size(44).y_label_area_size(64).build_cartesian_2d(
                svg::padded(0.0, top(|p| p.aggregate_tps)),
                svg::padded(0.0, top(|p| p.per_user_tps)),
            )?;
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .bold_line_style(GRID)
            .x_label_formatter(&|v| svg::compact(*v))
            .y_label_formatter(&|v| svg::compact(*v))
            .x_desc("aggregate output tok/s (the cell)")
            .y_desc("output tok/s per user (1000 / median TPOT ms)")
            .label_style(svg::text(13, INK))
            .axis_desc_style(svg::text(13, MUTED))
            .draw()?;
        let corners: Vec<Xy> = self.front.corners.iter().map(|&c| self.points[c].xy()).collect();
        chart.draw_series(LineSeries::new(staircase(&corners), INK.mix(0.75).stroke_width(2)))?;
        let (left, top_px) = chart.backend_coord(&(chart.x_range().start, chart.y_range().end));
        let (right, bottom_px) = chart.backend_coord(&(chart.x_range().end, chart.y_range().start));
        let at: Vec<(i32, i32)> = self.points.iter().map(|p| chart.backend_coord(&p.xy())).collect();
        // Labels stay inside the plot and off every marker.
        let mut placer = Placer::default();
        let far = 1 << 20;
        for r in
            [(-far, -far, left, far), (right, -far, far, far), (-far, -far, far, top_px), (-far, bottom_px, far, far)]
        {
            placer.block(r);
        }
        // Hollow (beaten) points first, so frontier markers stay on top.
        let mut order: Vec<usize> = (0..self.points.len()).collect();
        order.sort_by_key(|&i| self.front.on[i]);
        for &i in &order {
            let (p, (x, y)) = (&self.points[i], at[i]);
            let (shape, colour) = (Shape::of(&p.kind), svg::series(p.source));
            match self.front.on[i] {
                true => shape.draw(area, (x, y), 6, colour, INK.stroke_width(2))?,
                false => shape.draw(area, (x, y), 5, WHITE, colour.stroke_width(2))?,
            }
            placer.block((x - 7, y - 7, x + 7, y + 7));
        }
        // Frontier labels first: they are the ones named in full.
        for &i in order.iter().rev() {
            let (x, y) = at[i];
            let on = self.front.on[i];
            let (size, ink) = if on { (12, INK) } else { (11, MUTED) };
            let number = (i + 1).to_string();
            let texts = if on { vec![self.long_label(i), number] } else { vec![number] };
            let left_first = x > left + (right - left) * 3 / 5;
            let fits = texts.iter().find_map(|t| {
                let wh = (text_width(t.chars().count(), size), size as i32 + 2);
                [8, 18, 28]
                    .into_iter()
                    .find_map(|gap| placer.place((x, y), wh, gap, left_first))
                    .map(|s| (t.clone(), s))
            });
            // Nowhere free: the number anyway, over whatever is there (the table names it).
            let fallback =
                || (texts[texts.len() - 1].clone(), Spot { at: (x + 8, y - 6), leftward: false, above: true });
            let (text, spot) = fits.unwrap_or_else(fallback);
            area.draw(&Text::new(text, spot.at, svg::text(size, ink).pos(spot.pos())))?;
        }
        self.draw_key(area, (svg::WIDTH as i32 - KEY_WIDTH + 4, top_px))
    }

    /// The key, right of the plot from `at` (its top-left corner): one line per marker shape
    /// present, what filled and hollow mean, then one colour per source when there are several.
    fn draw_key(&self, area: &Area, at: (i32, i32)) -> Drawn {
        let mut lines: Vec<(Option<Shape>, RGBColor, String)> = Vec::new();
        for p in self.points {
            let shape = Shape::of(&p.kind);
            if !lines.iter().any(|(s, _, _)| *s == Some(shape)) {
                let name = if shape == Shape::Diamond { "conversation" } else { p.kind.name() };
                lines.push((Some(shape), INK, name.to_string()));
            }
        }
        lines.push((None, INK, "filled: on the frontier".into()));
        lines.push((None, INK, "hollow: beaten on both".into()));
        if self.named {
            for (i, s) in self.sources.iter().enumerate() {
                lines.push((Some(Shape::Square), svg::series(i), short(&crate::text_safe::text(s.label), 30)));
            }
        }
        let (w, h) = (KEY_WIDTH - 12, lines.len() as i32 * 18 + 10);
        let (x0, y0) = at;
        area.draw(&Rectangle::new([(x0, y0), (x0 + w, y0 + h)], GRID.stroke_width(1)))?;
        for (k, (shape, colour, name)) in lines.iter().enumerate() {
            let y = y0 + 14 + k as i32 * 18;
            if let Some(shape) = shape {
                let fill = if *colour == INK { WHITE } else { *colour };
                shape.draw(area, (x0 + 14, y), 5, fill, colour.stroke_width(2))?;
            }
            area.draw(&Text::new(name.clone(), (x0 + 28, y), svg::anchored(12, INK, HPos::Left, VPos::Center)))?;
        }
        Ok(())
    }

    /// One row per point, numbered as on the chart.
    fn table(&self) -> String {
        let mut head = vec!["#"];
        if self.named {
            head.push("source");
        }
        head.extend(["kind", "cell", "tok/s per user", "aggregate tok/s", "frontier"]);
        let rows: Vec<Vec<String>> = self
            .points
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut row = vec![(i + 1).to_string()];
                if self.named {
                    row.push(escape(self.sources[p.source].label));
                }
                let on = if self.front.on[i] { "yes" } else { "" };
                row.extend([escape(p.kind.name()), escape(&p.cell), fmt_tps(p.per_user_tps), fmt_tps(p.aggregate_tps)]);
                row.push(on.into());
                row
            })
            .collect();
        table(&head, &["#", "tok/s per user", "aggregate tok/s"], &rows)
    }
}
