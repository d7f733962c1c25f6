//! Routing: the gateway's routing-counter changes since the running phase started, e.g.
//! AIBrix `routing_decisions_total{match_percent_bucket}` and `routing_selection_total{selection}`.
//! Rows that do not fit are counted on a last `+N more counters` line.

use super::super::app::App;
use super::super::theme;
use super::widgets::{bar, distinct_names, fit, framed, panel};
use crate::metrics::CounterDelta;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

/// Name prefixes left out to keep lines short.
const PREFIXES: [&str; 4] = ["aibrix_prefix_cache_routing_", "aibrix_prefix_cache_", "aibrix_", "vllm_router_"];
/// Labels that say nothing about the routing decision.
const QUIET_LABELS: [&str; 3] = ["using_kv_sync", "model", "model_name"];

/// Short display name of a counter series: `decisions 76-100` for
/// `aibrix_prefix_cache_routing_decisions_total{match_percent_bucket="76-100"}`.
/// Label values equal to `route` (the phase's own strategy) are left out too.
pub(crate) fn short_name(d: &CounterDelta, route: Option<&str>) -> String {
    let mut name = d.name.as_str();
    if let Some(p) = PREFIXES.iter().find(|p| name.starts_with(*p)) {
        name = &name[p.len()..];
    }
    let name = name.strip_suffix("_total").unwrap_or(name);
    let labels = d.labels.iter().filter(|(k, v)| !QUIET_LABELS.contains(&k.as_str()) && Some(v.as_str()) != route);
    let labels: Vec<&str> = labels.map(|(_, v)| strip_scheme(v)).collect();
    let full = if labels.is_empty() { name.to_string() } else { format!("{name} {}", labels.join(",")) };
    // Label values are the gateway's: its control characters are shown escaped.
    crate::text_safe::line(&full).into_owned()
}

/// A URL label value without its `http://` / `https://` and trailing `/`.
fn strip_scheme(v: &str) -> &str {
    let v = v.strip_prefix("http://").or_else(|| v.strip_prefix("https://")).unwrap_or(v);
    v.strip_suffix('/').unwrap_or(v)
}

/// Rewrites the `host:port` words of `names` as `:port` when they all share one host, so
/// workers on one machine stay apart once rows are cut.
pub(crate) fn shorten_hosts(names: Vec<String>) -> Vec<String> {
    let is_word = |c: char| c == ' ' || c == ',';
    let mut words: Vec<&str> = names.iter().flat_map(|n| n.split(is_word)).filter(|w| w.contains(':')).collect();
    words.sort_unstable();
    words.dedup();
    let short = distinct_names(&words);
    if words.len() < 2 || short.iter().zip(&words).all(|(s, w)| s == w) {
        return names;
    }
    let map: Vec<(String, String)> = words.iter().map(|w| w.to_string()).zip(short).collect();
    let rewrite = |n: &String| {
        let pieces = n.split_inclusive(is_word).map(|piece| {
            let word = piece.trim_end_matches(is_word);
            let to = map.iter().find(|(from, _)| from == word).map_or(word, |(_, to)| to.as_str());
            format!("{to}{}", &piece[word.len()..])
        });
        pieces.collect::<String>()
    };
    names.iter().map(rewrite).collect()
}

/// Labels that name a worker: series differing only in one are per-worker copies.
const WORKER_LABELS: [&str; 3] = ["worker", "worker_id", "pod"];
/// Per-worker copies of a counter from which they are summed into one row.
const GROUP_AT: usize = 4;

/// One line of the panel.
struct Row {
    name: String,
    delta: f64,
    reset: bool,
}

/// The display rows: one per series, except that `GROUP_AT` or more per-worker copies of one
/// counter (e.g. `vllm_router_processed_requests_total{worker}` on a fleet) become one row
/// `processed_requests ×64, max :8017 69` with their sum.
fn rows_of(deltas: &[CounterDelta], route: Option<&str>) -> Vec<Row> {
    let names = shorten_hosts(deltas.iter().map(|d| short_name(d, route)).collect());
    let key = |d: &CounterDelta| {
        let rest: Vec<_> = d.labels.iter().filter(|(k, _)| !WORKER_LABELS.contains(&k.as_str())).collect();
        (d.name.clone(), format!("{rest:?}"), rest.len() < d.labels.len())
    };
    let keys: Vec<_> = deltas.iter().map(key).collect();
    let mut out: Vec<Row> = Vec::new();
    let mut done = vec![false; deltas.len()];
    for i in 0..deltas.len() {
        if done[i] {
            continue;
        }
        let k = &keys[i];
        let group: Vec<usize> = (i..deltas.len()).filter(|&j| !done[j] && keys[j] == *k).collect();
        if !k.2 || group.len() < GROUP_AT {
            done[i] = true;
            out.push(Row { name: names[i].clone(), delta: deltas[i].delta, reset: deltas[i].reset });
            continue;
        }
        let top = group.iter().copied().max_by(|&a, &b| deltas[a].delta.total_cmp(&deltas[b].delta)).unwrap_or(i);
        let worker = deltas[top].labels.iter().find(|(k, _)| WORKER_LABELS.contains(&k.as_str())).map(|(_, v)| v);
        let short = |n: &str| n.rsplit([' ', ',']).next().unwrap_or(n).to_string();
        let base = short_name(&CounterDelta { labels: Default::default(), ..deltas[i].clone() }, route);
        let max = worker.map(|_| short(&names[top])).unwrap_or_default();
        out.push(Row {
            name: format!("{base} ×{}, max {max} {:.0}", group.len(), deltas[top].delta),
            delta: group.iter().map(|&j| deltas[j].delta).sum(),
            reset: group.iter().any(|&j| deltas[j].reset),
        });
        for j in group {
            done[j] = true;
        }
    }
    out
}

/// Draws the routing panel.
pub(crate) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    // After the session: the last phase's counters as it ended, marked final.
    let (live, last) = app.shown_live();
    // The long title where it fits its border, the short one on a narrow panel.
    let narrow = usize::from(area.width) < 44;
    let title = match (last, narrow) {
        (true, false) => format!("Routing: gateway counters Δ (final: {})", live.label),
        (true, true) => format!("Gateway Δ (final: {})", live.label),
        (false, false) => "Routing: gateway counters Δ this phase".into(),
        (false, true) => "Gateway counters Δ this phase".into(),
    };
    let inner = framed(panel(title), area, buf);
    let deltas = &live.routing;
    if deltas.is_empty() {
        let msg = "no gateway routing counters changed in this phase";
        buf.set_line(inner.x, inner.y, &Line::styled(msg, theme::dim()), inner.width);
        return;
    }
    let route = live.cell.and_then(|c| app.session.cells.get(c)).and_then(|c| c.spec.route());
    let rows_all = rows_of(deltas, route);
    let top = rows_all.iter().map(|d| d.delta).fold(0.0, f64::max);
    let width = usize::from(inner.width);
    let value_w = 8;
    let name_w = rows_all.iter().map(|n| n.name.chars().count()).max().unwrap_or(10).min(width / 2 + 8);
    let bar_w = width.saturating_sub(name_w + value_w + 2);
    let rows = usize::from(inner.height);
    let shown = if rows_all.len() <= rows { rows_all.len() } else { rows.saturating_sub(1) };
    for (i, d) in rows_all.iter().take(shown).enumerate() {
        let ratio = if top > 0.0 { d.delta / top } else { 0.0 };
        let reset = if d.reset { "↺" } else { " " };
        let line = Line::from(vec![
            Span::styled(format!("{:<name_w$} ", fit(&d.name, name_w)), theme::label()),
            Span::styled(format!("{:>7.0}{reset}", d.delta), theme::value()),
            Span::styled(bar(ratio, bar_w), theme::spark()),
        ]);
        buf.set_line(inner.x, inner.y + i as u16, &line, inner.width);
    }
    if shown < rows_all.len() {
        let more = format!("+{} more counters", rows_all.len() - shown);
        buf.set_line(inner.x, inner.y + shown as u16, &Line::styled(more, theme::dim()), inner.width);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_on_one_host_are_told_apart_by_port() {
        let names = vec![
            "worker_selection cache_aware,127.0.0.1:8001".to_string(),
            "worker_selection cache_aware,127.0.0.1:8002".to_string(),
            "requests".to_string(),
        ];
        let short = shorten_hosts(names);
        assert_eq!(short, ["worker_selection cache_aware,:8001", "worker_selection cache_aware,:8002", "requests"]);
        let apart = vec!["w a:1".to_string(), "w b:1".to_string()];
        assert_eq!(shorten_hosts(apart.clone()), apart);
        assert_eq!(strip_scheme("http://10.0.0.1:8001/"), "10.0.0.1:8001");
    }

    #[test]
    fn per_worker_copies_of_a_counter_are_summed_in_one_row() {
        let d = |w: usize, delta: f64| CounterDelta {
            name: "vllm_router_processed_requests_total".into(),
            labels: [("worker".to_string(), format!("http://127.0.0.1:{}", 8001 + w))].into(),
            delta,
            reset: false,
        };
        let mut deltas: Vec<CounterDelta> = (0..64).map(|w| d(w, if w == 16 { 69.0 } else { 20.0 })).collect();
        deltas.push(CounterDelta {
            name: "vllm_router_requests_total".into(),
            labels: Default::default(),
            delta: 5.0,
            reset: false,
        });
        let rows = rows_of(&deltas, None);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].name, "processed_requests ×64, max :8017 69");
        assert_eq!(rows[0].delta, 63.0 * 20.0 + 69.0);
        assert_eq!(rows_of(&deltas[..3], None).len(), 3, "a few workers keep a row each");
    }
}
