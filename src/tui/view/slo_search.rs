//! SLO search: a running search's mode, target and SLO, its bracket [last pass, first fail]
//! narrowing, the probe running, and the latest probes done (load, requests pooled at the load,
//! attainment with its 95% interval, verdict: `pass`, `fail`, or `again` when the interval held
//! the target and the load is probed again). Shown in place of the routing panels while an SLO
//! search cell runs.

use super::super::app::App;
use super::super::theme;
use super::widgets::{fit, framed, panel};
use crate::cell::search_live::{ProbeLive, SearchLive};
use crate::experiment::Attempt;
use crate::experiment::slo_search::live::from_attempt;
use crate::experiment::slo_search::probe::fmt_load;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use std::borrow::Cow;

/// Width the panel would like, borders included.
pub(crate) const WIDTH: u16 = 46;

/// Lines above the probe rows: target, bracket, running probe, column header (left out when
/// only one row fits).
const HEAD_LINES: usize = 4;

/// The running cell's search, if it is one; after the session, the last one's as its attempt
/// ended (read back from the attempt: the last live view a probe published cannot hold that
/// probe's own verdict).
pub(crate) fn live(app: &App) -> Option<Cow<'_, SearchLive>> {
    let (live, done) = app.shown_live();
    let shown = live.slo_search.as_ref()?;
    let latest = live.cell.and_then(|c| app.session.cells.get(c)).and_then(|c| c.latest.as_deref());
    let ended = match latest {
        Some(Attempt::Extension(a)) if done => from_attempt(a),
        _ => None,
    };
    Some(ended.map_or(Cow::Borrowed(shown), Cow::Owned))
}

/// Rows the panel would like, borders included.
pub(crate) fn height(app: &App) -> u16 {
    live(app).map_or(0, |s| (s.done.len() + HEAD_LINES) as u16 + 2).max(6)
}

/// One row of the probe table: index, load, requests, attainment, interval, verdict.
fn row(cells: [&str; 6]) -> String {
    let [i, load, reqs, met, interval, verdict] = cells;
    format!("{i:>3} {load:>7} {reqs:>5} {met:>6} {interval:>11} {verdict:>5}")
}

fn pct(v: f64) -> String {
    format!("{:.1}", v * 100.0)
}

fn probe_row(index: usize, p: &ProbeLive) -> String {
    let met = p.attainment.map_or_else(|| "—".into(), |a| format!("{}%", pct(a)));
    let interval = format!("{}–{}", pct(p.interval.0), pct(p.interval.1));
    let verdict = match p.verdict {
        Some(true) => "pass",
        Some(false) => "fail",
        None => "again",
    };
    row([&index.to_string(), &fmt_load(p.load), &p.requests.to_string(), &met, &interval, verdict])
}

/// The panel's lines for `s`: the target, the bracket, the running probe (or how the search
/// ended), the header and the latest probes that fit in `rows` lines.
pub(crate) fn lines(s: &SearchLive, rows: usize, width: usize) -> Vec<Line<'static>> {
    let show = |v: Option<f64>| v.map_or_else(|| "—".to_string(), fmt_load);
    let state = match (&s.ended, s.running) {
        (Some(e), _) => e.clone(),
        (None, Some((i, load, 1))) => format!("probe {i}: {} {}", fmt_load(load), s.unit),
        (None, Some((i, load, r))) => format!("probe {i}: {} {} (repeat {r})", fmt_load(load), s.unit),
        (None, None) => "stopped".into(),
    };
    let mut out = vec![
        Line::from(fit(&format!("{} · {}% meet {}", s.mode, fmt_load(s.target * 100.0), s.slo), width)),
        Line::styled(
            fit(&format!("bracket [{}, {}] {}", show(s.last_pass), show(s.first_fail), s.unit), width),
            theme::title(),
        ),
        Line::from(fit(&state, width)),
    ];
    // With room for one line only, the latest probe goes without the header.
    let mut room = rows.saturating_sub(HEAD_LINES - 1);
    if room > 1 && !s.done.is_empty() {
        out.push(Line::styled(fit(&row(["#", "load", "reqs", "met", "interval", ""]), width), theme::dim()));
        room -= 1;
    }
    let skip = s.done.len().saturating_sub(room);
    for (i, p) in s.done.iter().enumerate().skip(skip) {
        out.push(Line::from(fit(&probe_row(i + 1, p), width)));
    }
    out
}

/// Draws the panel.
pub(crate) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let title = if app.shown_live().1 { "SLO search (final)" } else { "SLO search" };
    let inner = framed(panel(title), area, buf);
    let Some(s) = live(app) else { return };
    for (i, line) in lines(&s, usize::from(inner.height), usize::from(inner.width)).iter().enumerate() {
        buf.set_line(inner.x, inner.y + i as u16, line, inner.width);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(load: f64, repeat: u32, requests: u64, a: f64, verdict: Option<bool>) -> ProbeLive {
        ProbeLive { load, repeat, requests, attainment: Some(a), interval: (a - 0.03, 1.0), verdict }
    }

    #[test]
    fn the_bracket_over_the_latest_probes() {
        let s = SearchLive {
            mode: "concurrency",
            unit: "streams",
            slo: "ttft:500".into(),
            target: 0.99,
            last_pass: Some(8.0),
            first_fail: Some(16.0),
            running: Some((5, 12.0, 1)),
            done: vec![
                probe(4.0, 1, 96, 1.0, None),
                probe(4.0, 2, 192, 1.0, Some(true)),
                probe(8.0, 1, 96, 1.0, Some(true)),
                probe(16.0, 1, 96, 0.5, Some(false)),
            ],
            ended: None,
        };
        let text: Vec<String> = lines(&s, 7, 44).iter().map(|l| l.to_string()).collect();
        assert_eq!(text[0], "concurrency · 99% meet ttft:500");
        assert_eq!(text[1], "bracket [8, 16] streams");
        assert_eq!(text[2], "probe 5: 12 streams");
        assert_eq!(text.len(), 7, "the latest three probes fit");
        assert_eq!(text[4], "  2       4   192 100.0%  97.0–100.0  pass");
        assert_eq!(text[6], "  4      16    96  50.0%  47.0–100.0  fail");
        let tight: Vec<String> = lines(&s, 4, 44).iter().map(|l| l.to_string()).collect();
        assert_eq!(tight.len(), 4);
        assert_eq!(tight[3], text[6], "one line left: the latest probe, without the header");
        let again = lines(&s, 10, 44)[4].to_string();
        assert!(again.ends_with("again"), "{again}");
        let ended = SearchLive { ended: Some("bracketed".into()), running: None, ..s };
        assert_eq!(lines(&ended, 10, 44)[2].to_string(), "bracketed");
    }
}
