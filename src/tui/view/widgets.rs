//! Small drawing helpers shared by the panels: bordered blocks, text bars, sparklines, clocks.

use super::super::theme;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Widget};
use std::time::Duration;

/// Eighth-block characters from empty to full, for sparklines.
const SPARK: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// A bordered panel with a title.
pub(crate) fn panel(title: impl Into<String>) -> Block<'static> {
    Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(theme::border())
        .title(Span::styled(format!(" {} ", title.into()), theme::title()))
}

/// Draws `block` over `area` and returns its inner area.
pub(crate) fn framed(block: Block<'_>, area: Rect, buf: &mut Buffer) -> Rect {
    let inner = block.inner(area);
    block.render(area, buf);
    inner
}

/// A horizontal bar of `width` cells filled to `ratio` (0..1), with eighth-cell resolution.
pub(crate) fn bar(ratio: f64, width: usize) -> String {
    let ratio = if ratio.is_finite() { ratio.clamp(0.0, 1.0) } else { 0.0 };
    let eighths = (ratio * width as f64 * 8.0).round() as usize;
    let (full, part) = (eighths / 8, eighths % 8);
    let mut s = "█".repeat(full.min(width));
    if full < width {
        const PARTS: [&str; 8] = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"];
        s.push_str(if part > 0 { PARTS[part] } else { "" });
        let used = full + usize::from(part > 0);
        s.push_str(&"·".repeat(width.saturating_sub(used)));
    }
    s
}

/// A one-line sparkline of the last `width` values, scaled to `max` (or their own maximum).
pub(crate) fn sparkline(values: &[f64], width: usize, max: Option<f64>) -> String {
    let tail = &values[values.len().saturating_sub(width)..];
    let top = max.unwrap_or_else(|| tail.iter().copied().filter(|v| v.is_finite()).fold(0.0, f64::max));
    let mut s: String = tail
        .iter()
        .map(|v| {
            if top <= 0.0 || !v.is_finite() {
                return SPARK[0];
            }
            let level = ((v / top).clamp(0.0, 1.0) * 8.0).round() as usize;
            SPARK[level.max(usize::from(*v > 0.0))]
        })
        .collect();
    let pad = width.saturating_sub(tail.len());
    s.insert_str(0, &" ".repeat(pad));
    s
}

/// A sparkline `height` rows tall over `area`, newest value at the right edge.
pub(crate) fn tall_sparkline(values: &[f64], area: Rect, buf: &mut Buffer, style: Style) {
    let (w, h) = (usize::from(area.width), usize::from(area.height));
    if w == 0 || h == 0 {
        return;
    }
    let tail = &values[values.len().saturating_sub(w)..];
    let top = tail.iter().copied().filter(|v| v.is_finite()).fold(0.0, f64::max);
    let offset = w - tail.len();
    for (i, v) in tail.iter().enumerate() {
        let eighths =
            if top > 0.0 && v.is_finite() { ((v / top).clamp(0.0, 1.0) * (h * 8) as f64).round() } else { 0.0 };
        let mut left = eighths as usize;
        for row in (0..h).rev() {
            let level = left.min(8);
            left -= level;
            let x = area.x + (offset + i) as u16;
            let y = area.y + row as u16;
            buf[(x, y)].set_char(SPARK[level]).set_style(style);
        }
    }
}

/// `HH:MM:SS` of a duration.
pub(crate) fn clock(d: Duration) -> String {
    let s = d.as_secs();
    format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

/// Seconds with one decimal: `12.3s`.
pub(crate) fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

/// `label value` spans.
pub(crate) fn kv<'a>(label: &'a str, value: String) -> [Span<'a>; 2] {
    [Span::styled(label, theme::label()), Span::styled(value, theme::value())]
}

/// Draws lines top to bottom inside `area`, clipping what does not fit.
pub(crate) fn lines(area: Rect, buf: &mut Buffer, lines: &[Line<'_>]) {
    for (i, line) in lines.iter().take(usize::from(area.height)).enumerate() {
        buf.set_line(area.x, area.y + i as u16, line, area.width);
    }
}

/// A centred popup of at most `w` x `h` inside `area`, cleared and framed; returns its inner area.
pub(crate) fn popup(area: Rect, w: u16, h: u16, block: Block<'_>, buf: &mut Buffer) -> Rect {
    let (w, h) = (w.min(area.width), h.min(area.height));
    let rect = Rect { x: area.x + (area.width - w) / 2, y: area.y + (area.height - h) / 2, width: w, height: h };
    Clear.render(rect, buf);
    framed(block, rect, buf)
}

/// A percentage without decimals: `93%`, or `—`.
pub(crate) fn pct(ratio: Option<f64>) -> String {
    ratio.filter(|r| r.is_finite()).map_or_else(|| "—".into(), |r| format!("{:.0}%", r * 100.0))
}

/// A count that may be missing: `3`, or `—`.
pub(crate) fn count(v: Option<f64>) -> String {
    v.filter(|r| r.is_finite()).map_or_else(|| "—".into(), |r| format!("{r:.0}"))
}

/// Cuts `s` to at most `width` characters, marking the cut with `…`.
pub(crate) fn fit(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return s.to_string();
    }
    let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
    if width > 0 {
        out.push('…');
    }
    out
}

/// Cuts `s` to at most `width` characters from the left, marking the cut with `…`: the end of
/// a name (`…0.1:8002`) usually tells replicas apart.
pub(crate) fn fit_left(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width || width == 0 {
        return if width == 0 { String::new() } else { s.to_string() };
    }
    let tail: String = s.chars().skip(n - (width - 1)).collect();
    format!("…{tail}")
}

/// `s` in at most `width` characters, cut in the middle when longer: the start and the end
/// (a host and its port) both stay, `127.0…:8091`.
pub(crate) fn fit_middle(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width || width < 3 {
        return fit_left(s, width);
    }
    let tail = (width - 1) / 2;
    let head = width - 1 - tail;
    let start: String = s.chars().take(head).collect();
    let end: String = s.chars().skip(n - tail).collect();
    format!("{start}…{end}")
}

/// `host:port` of a name or URL (`http://h:8001/x` → `h:8001`), if it has a numeric port.
fn host_and_port(s: &str) -> Option<(&str, &str)> {
    let rest = s.split_once("://").map_or(s, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let (host, port) = authority.rsplit_once(':')?;
    (!host.is_empty() && !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())).then_some((host, port))
}

/// Display names that tell `names` apart: when every name is a `host:port` (or URL) on one
/// host, just `:port`; otherwise the names unchanged.
pub(crate) fn distinct_names(names: &[&str]) -> Vec<String> {
    let parts: Option<Vec<(&str, &str)>> = names.iter().map(|n| host_and_port(n)).collect();
    match parts {
        Some(p) if p.len() > 1 && p.iter().all(|(h, _)| *h == p[0].0) => {
            p.iter().map(|(_, port)| format!(":{port}")).collect()
        }
        // Replica names may be the server's (Prometheus labels): control characters escaped.
        _ => names.iter().map(|n| crate::text_safe::line(n).into_owned()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_fill_by_eighths() {
        assert_eq!(bar(0.0, 4), "····");
        assert_eq!(bar(1.0, 4), "████");
        assert_eq!(bar(0.5, 4), "██··");
        assert_eq!(bar(0.5625, 4), "██▎·");
        assert_eq!(bar(f64::NAN, 2), "··");
    }

    #[test]
    fn sparklines_pad_left_and_scale() {
        assert_eq!(sparkline(&[0.0, 4.0, 8.0], 5, None), "   ▄█");
        assert_eq!(sparkline(&[1.0, 2.0, 3.0, 4.0], 2, Some(4.0)), "▆█");
        assert_eq!(sparkline(&[0.01, 100.0], 2, None), "▁█", "non-zero values stay visible");
    }

    #[test]
    fn formats() {
        assert_eq!(clock(Duration::from_secs(3725)), "01:02:05");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abc", 4), "abc");
        assert_eq!(pct(Some(0.934)), "93%");
        assert_eq!(count(None), "—");
        assert_eq!(fit_left("127.0.0.1:8002", 8), "….1:8002");
        assert_eq!(fit_left("abc", 4), "abc");
        assert_eq!(fit_middle("127.0.0.1:8091", 11), "127.0…:8091");
        assert_eq!(fit_middle("127.0.0.1:8091", 14), "127.0.0.1:8091");
        assert_eq!(fit_middle("abcdef", 2), "…f");
    }

    #[test]
    fn names_on_one_host_keep_their_ports() {
        assert_eq!(distinct_names(&["127.0.0.1:8001", "127.0.0.1:8002"]), [":8001", ":8002"]);
        assert_eq!(distinct_names(&["http://10.0.0.1:8001", "http://10.0.0.1:8002/"]), [":8001", ":8002"]);
        assert_eq!(distinct_names(&["a:8001", "b:8001"]), ["a:8001", "b:8001"]);
        assert_eq!(distinct_names(&["sim-a", "sim-b"]), ["sim-a", "sim-b"]);
        assert_eq!(distinct_names(&["127.0.0.1:8001"]), ["127.0.0.1:8001"], "one name is left whole");
    }
}
