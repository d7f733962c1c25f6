//! Drawing one chart with plotters' SVG backend into a string, ready to inline in the page,
//! and the colours and fonts every chart shares.

use super::page::escape;
use plotters::coord::Shift;
use plotters::prelude::*;
pub(super) use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::error::Error;

/// The drawing area a chart draws on.
pub(super) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// What a drawing closure returns; errors become a one-line note in place of the chart.
pub(super) type Drawn = Result<(), Box<dyn Error>>;

/// Width of a full-width chart, px (the page's content column).
pub(super) const WIDTH: u32 = 1160;

/// Series colours, in order of use.
pub(super) const SERIES: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xe8, 0x6a, 0x10),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

/// Text and axis colour.
pub(super) const INK: RGBColor = RGBColor(0x24, 0x29, 0x2f);
/// Grid lines.
pub(super) const GRID: RGBColor = RGBColor(0xe4, 0xe7, 0xeb);
/// Muted text (legends, notes).
pub(super) const MUTED: RGBColor = RGBColor(0x6a, 0x73, 0x7d);

/// The colour of series `i` (cycling through [`SERIES`]).
pub(super) fn series(i: usize) -> RGBColor {
    SERIES[i % SERIES.len()]
}

/// A text style of `size` px in `color`.
pub(super) fn text(size: u32, color: RGBColor) -> TextStyle<'static> {
    // plotters writes font-size as the given size / 1.24.
    let mut style = TextStyle::from(("sans-serif", f64::from(size) * 1.24).into_font());
    style.color = color.to_backend_color();
    style
}

/// A text style of `size` px in `color`, anchored at `h`, `v`.
pub(super) fn anchored(size: u32, color: RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    text(size, color).pos(Pos::new(h, v))
}

/// Draws a `width` x `height` chart with `draw` and returns the inline `<svg>` element (or a
/// note saying why it could not be drawn). `label` names the chart for screen readers and tests.
pub(super) fn chart(label: &str, width: u32, height: u32, draw: impl FnOnce(&Area) -> Drawn) -> String {
    let mut buf = String::new();
    let result = {
        let root = SVGBackend::with_string(&mut buf, (width, height)).into_drawing_area();
        let drawn = root.fill(&WHITE).map_err(Box::<dyn Error>::from).and_then(|()| draw(&root));
        drawn.and_then(|()| root.present().map_err(Box::<dyn Error>::from))
    };
    match result {
        Ok(()) => inline(&buf, label),
        Err(e) => format!("<p class=\"note\">{}: chart not drawn ({})</p>", escape(label), escape(&e.to_string())),
    }
}

/// The backend's standalone SVG document as an element of the page: no namespace attribute
/// (inline SVG needs none), a class for the page's styles and an accessible label.
fn inline(svg: &str, label: &str) -> String {
    let body = svg.trim_start_matches("<?xml version=\"1.0\" encoding=\"UTF-8\"?>").trim_start();
    let attrs = format!("class=\"chart\" role=\"img\" aria-label=\"{}\"", escape(label));
    body.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1).replacen("<svg ", &format!("<svg {attrs} "), 1)
}

/// The axis of `n` categorical slots: slot `i` spans `i..i + 1` (at least one slot; plotters'
/// segmented integer axes collapse when they hold one value, so slots are plain numbers).
pub(super) fn slots(n: u32) -> std::ops::Range<f64> {
    0.0..f64::from(n.max(1))
}

/// The centre of slot `i`.
pub(super) fn mid(i: usize) -> f64 {
    i as f64 + 0.5
}

/// Writes the name of each categorical slot under the x axis; `at` is the slot's centre on the
/// axis line, in pixels. Names are turned a quarter when `rotate` (many slots).
pub(super) fn x_slot_labels(area: &Area, labels: impl Iterator<Item = (String, (i32, i32))>, rotate: bool) -> Drawn {
    for (name, (x, y)) in labels {
        let style = if rotate {
            anchored(11, INK, HPos::Right, VPos::Center).transform(FontTransform::Rotate270)
        } else {
            anchored(13, INK, HPos::Center, VPos::Top)
        };
        let at = if rotate { (x, y + 8) } else { (x, y + 7) };
        area.draw(&PathElement::new([(x, y), (x, y + 4)], INK))?;
        area.draw(&Text::new(name, at, style))?;
    }
    Ok(())
}

/// Writes the name of each categorical slot left of the y axis; `at` is the slot's centre on
/// the axis line, in pixels.
pub(super) fn y_slot_labels(area: &Area, labels: impl Iterator<Item = (String, (i32, i32))>) -> Drawn {
    for (name, (x, y)) in labels {
        area.draw(&Text::new(name, (x - 8, y), anchored(13, INK, HPos::Right, VPos::Center)))?;
    }
    Ok(())
}

/// A range `lo..hi` widened to be non-empty and finite (charts of one value or none).
pub(super) fn span(lo: f64, hi: f64) -> std::ops::Range<f64> {
    let (lo, hi) = if lo.is_finite() && hi.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    if hi - lo > f64::EPSILON * hi.abs().max(1.0) { lo..hi } else { (lo - 0.5).min(0.0)..hi + 1.0 }
}

/// `lo..hi` padded by 5% of its length on top (and below when `lo` is above 0).
pub(super) fn padded(lo: f64, hi: f64) -> std::ops::Range<f64> {
    let r = span(lo, hi);
    let pad = (r.end - r.start) * 0.05;
    let start = if r.start > 0.0 { (r.start - pad).max(0.0) } else { r.start };
    start..r.end + pad
}

/// Compact number for axes and labels: `850`, `1.2k`, `12k`, `0.25`.
pub(super) fn compact(v: f64) -> String {
    let a = v.abs();
    if a >= 10_000.0 {
        format!("{:.0}k", v / 1000.0)
    } else if a >= 1000.0 {
        format!("{:.1}k", v / 1000.0)
    } else if a >= 100.0 || a == 0.0 || (a - a.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_is_an_inline_svg_without_namespace() {
        let svg = chart("a <b> & c", 120, 80, |area| {
            area.draw(&Text::new("x<y", (10, 10), text(12, INK)))?;
            Ok(())
        });
        assert!(svg.starts_with("<svg class=\"chart\" role=\"img\" aria-label=\"a &lt;b&gt; &amp; c\" "), "{svg}");
        assert!(!svg.contains("http") && !svg.contains("<?xml"), "{svg}");
        assert!(svg.contains("x&lt;y") && svg.trim_end().ends_with("</svg>"), "{svg}");
    }

    #[test]
    fn a_failed_drawing_is_a_note() {
        let out = chart("KV", 100, 50, |_| Err("no data".into()));
        assert_eq!(out, "<p class=\"note\">KV: chart not drawn (no data)</p>");
    }

    #[test]
    fn ranges_are_never_empty() {
        assert_eq!(span(3.0, 3.0), 0.0..4.0);
        assert_eq!(span(f64::NAN, 1.0), 0.0..1.0);
        assert_eq!(span(0.0, 2.0), 0.0..2.0);
        assert_eq!(padded(0.0, 100.0), 0.0..105.0);
        assert_eq!(
            [compact(850.0), compact(1234.0), compact(12_345.0), compact(0.25), compact(2.0)],
            ["850", "1.2k", "12k", "0.25", "2"]
        );
    }
}
