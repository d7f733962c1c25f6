//! The replicas panel of a fleet (8 replicas and more): a summary line (sum, spread and the
//! hottest replica), then full rows while they fit, else condensed rows side by side; rows
//! that still do not fit are scrolled with PgDn / PgUp and counted on a last line
//! (`+52 replicas hidden, PgDn`), so no replica goes missing silently. `o` orders rows by load.

use super::super::app::App;
use super::super::fleet::Order;
use super::super::theme;
use super::widgets::{count, fit_left, pct};
use crate::cell::control::ReplicaLive;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

/// Replicas from which the panel shows the fleet summary line.
pub(crate) const FLEET_AT: usize = 8;
/// Width of one condensed row, gap included.
const CELL_W: usize = 36;
/// Width of the name in a condensed row.
const NAME_W: usize = 9;

/// Load of a replica for ordering: running + waiting, then requests served.
fn load(r: &ReplicaLive) -> (u64, u64) {
    let q = r.running.unwrap_or(0.0) + r.waiting.unwrap_or(0.0);
    ((q * 1000.0) as u64, r.requests)
}

/// Row indices in the operator's order (busiest first under [`Order::Load`]).
pub(crate) fn order(app: &App, rows: &[ReplicaLive]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..rows.len()).collect();
    if app.fleet.order == Order::Load {
        idx.sort_by_key(|&i| (std::cmp::Reverse(load(&rows[i])), i));
    }
    idx
}

/// The fleet line: replicas, the hottest replica (with requests attributed, the one that
/// served most and its share; else the most loaded and its running and waiting); running and waiting
/// summed, requests in all and per replica from least to most (spread = most / least) or
/// "not attributed", mean and (after `≤`) top KV usage.
pub(crate) fn summary(rows: &[ReplicaLive], names: &[String]) -> Line<'static> {
    let sum = |f: fn(&ReplicaLive) -> Option<f64>| rows.iter().filter_map(f).sum::<f64>();
    let total: u64 = rows.iter().map(|r| r.requests).sum();
    let (lo, hi) = rows.iter().fold((u64::MAX, 0), |(lo, hi), r| (lo.min(r.requests), hi.max(r.requests)));
    let spread = if lo > 0 {
        format!("{:.1}x", hi as f64 / lo as f64)
    } else if hi > 0 {
        "∞".into()
    } else {
        "—".into()
    };
    let kvs: Vec<f64> = rows.iter().filter_map(|r| r.kv_usage).collect();
    let kv_mean = (!kvs.is_empty()).then(|| kvs.iter().sum::<f64>() / kvs.len() as f64);
    let kv_max = kvs.iter().copied().reduce(f64::max);
    // With requests attributed, the replica that served most (its share is shown); else the
    // most loaded (running + waiting).
    let hot = match total {
        0 => (0..rows.len()).max_by_key(|&i| (load(&rows[i]), std::cmp::Reverse(i))),
        _ => (0..rows.len()).max_by_key(|&i| (rows[i].requests, load(&rows[i]), std::cmp::Reverse(i))),
    };
    let mut spans = vec![Span::styled(format!("fleet {}", rows.len()), theme::label())];
    if let Some(h) = hot.filter(|_| total > 0 || rows.iter().any(|r| load(r).0 > 0)) {
        let r = &rows[h];
        let text = match total {
            0 => format!(" · hottest {} run {} wait {}", names[h], count(r.running), count(r.waiting)),
            _ => format!(" · hottest {} {} reqs {}", names[h], r.requests, pct(Some(r.requests as f64 / total as f64))),
        };
        spans.push(Span::styled(text, theme::hot()));
    }
    let run = format!(" · run {} wait {}", count(Some(sum(|r| r.running))), count(Some(sum(|r| r.waiting))));
    spans.push(Span::styled(run, theme::value()));
    let reqs = match total {
        // No response named its replica (no routing header, or a gateway that names none).
        0 => " · reqs not attributed".to_string(),
        _ => format!(" · reqs {total}, {}..{hi} ({spread})", lo.min(hi)),
    };
    spans.push(Span::styled(reqs, theme::value()));
    spans.push(Span::styled(format!(" · KV {} ≤{}", pct(kv_mean), pct(kv_max)), theme::value()));
    Line::from(spans)
}

fn cell_header() -> String {
    format!("{:<NAME_W$}{:>4}{:>5}{:>5}{:>6}{:>6}  ", "replica", "run", "wait", "KV", "reqs", "share")
}

fn cell(app: &App, r: &ReplicaLive, name: &str, total: u64) -> Vec<Span<'static>> {
    let mark = if r.stale { "~" } else { "" };
    let name = format!("{:<NAME_W$}", fit_left(&format!("{name}{mark}"), NAME_W - 1));
    let style = if r.stale { theme::warn() } else { theme::value() };
    let share = (total > 0).then(|| r.requests as f64 / total as f64);
    let figures = if app.session.finished && !app.shown_live().1 {
        format!("{:<14}", "   ended")
    } else if r.stale {
        format!("{:<14}", "   stale")
    } else {
        format!("{:>4}{:>5}{:>5}", count(r.running), count(r.waiting), pct(r.kv_usage))
    };
    let hot = share.is_some_and(|s| s > 0.6) || r.waiting.unwrap_or(0.0) > 0.0;
    vec![
        Span::styled(name, style),
        Span::styled(figures, if r.stale { theme::warn() } else { theme::label() }),
        Span::styled(format!("{:>6}", r.requests), theme::value()),
        Span::styled(format!("{:>6}  ", pct(share)), if hot { theme::hot() } else { theme::label() }),
    ]
}

/// True when `n` full rows (plus header and summary) do not fit in `inner`.
pub(crate) fn needs_condensing(n: usize, inner: Rect) -> bool {
    n + 1 + usize::from(n >= FLEET_AT) > usize::from(inner.height)
}

/// Draws condensed rows, `cols` side by side, under the summary line; scrolled by PgDn.
pub(crate) fn render_condensed(app: &App, rows: &[ReplicaLive], names: &[String], inner: Rect, buf: &mut Buffer) {
    let idx = order(app, rows);
    let width = usize::from(inner.width);
    let cols = (width / CELL_W).max(1);
    let height = usize::from(inner.height);
    buf.set_line(inner.x, inner.y, &summary(rows, names), inner.width);
    let lines = height.saturating_sub(2);
    let fits = lines * cols >= rows.len();
    let per_page = if fits { rows.len() } else { lines.saturating_sub(1) * cols };
    app.fleet.page.set(per_page);
    let first = app.fleet.first(rows.len(), per_page);
    let shown = &idx[first..(first + per_page).min(idx.len())];
    let header: String = cell_header().repeat(cols.min(shown.len().max(1)));
    buf.set_line(inner.x, inner.y + 1, &Line::styled(header, theme::dim()), inner.width);
    let per_line = shown.len().div_ceil(cols).max(1);
    let total: u64 = rows.iter().map(|r| r.requests).sum();
    for line in 0..per_line.min(lines) {
        let mut spans = Vec::new();
        for c in 0..cols {
            // Column-major, so a column reads down in order.
            if let Some(&i) = shown.get(c * per_line + line) {
                spans.extend(cell(app, &rows[i], &names[i], total));
            }
        }
        buf.set_line(inner.x, inner.y + 2 + line as u16, &Line::from(spans), inner.width);
    }
    if !fits {
        let hidden = rows.len() - shown.len();
        let (a, b) = (first + 1, first + shown.len());
        let keys = match (first > 0, first + shown.len() < rows.len()) {
            (true, true) => "PgUp/PgDn",
            (true, false) => "PgUp",
            _ => "PgDn",
        };
        let note = format!("+{hidden} replicas hidden ({a}-{b}/{}), {keys}", rows.len());
        buf.set_line(inner.x, inner.y + inner.height - 1, &Line::styled(note, theme::warn()), inner.width);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(rows: &[ReplicaLive]) -> String {
        let names: Vec<String> = (0..rows.len()).map(|i| format!("r{i}")).collect();
        summary(rows, &names).spans.iter().map(|s| s.content.to_string()).collect()
    }

    #[test]
    fn the_hottest_is_named_by_what_is_known() {
        let busy = |running: f64, requests: u64| ReplicaLive { running: Some(running), requests, ..Default::default() };
        // No response named its replica: the most loaded, and no request spread of zeros.
        let t = text(&[busy(1.0, 0), busy(7.0, 0), busy(2.0, 0)]);
        assert!(t.contains("hottest r1 run 7 wait") && t.contains("reqs not attributed"), "{t}");
        // Requests attributed: the replica that served most, with its share.
        let t = text(&[busy(9.0, 1), busy(1.0, 3), busy(0.0, 0)]);
        assert!(t.contains("hottest r1 3 reqs 75%") && t.contains("reqs 4, 0..3"), "{t}");
    }
}
