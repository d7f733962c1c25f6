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
pub fn short_name(d: &CounterDelta, route: Option<&str>) -> String {
    let mut name = d.name.as_str();
    if let Some(p) = PREFIXES.iter().find(|p| name.starts_with(*p)) {
        name = &name[p.len()..];
    }
    let name = name.strip_suffix("_total").unwrap_or(name);
    let labels = d.labels.iter().filter(|(k, v)| !QUIET_LABELS.contains(&k.as_str()) && Some(v.as_str()) != route);
    let labels: Vec<&str> = labels.map(|(_, v)| strip_scheme(v)).collect();
    if labels.is_empty() { name.to_string() } else { format!("{name} {}", labels.join(",")) }
}

/// A URL label value without its `http://` / `https://` and trailing `/`.
fn strip_scheme(v: &str) -> &str {
    let v = v.strip_prefix("http://").or_else(|| v.strip_prefix("https://")).unwrap_or(v);
    v.strip_suffix('/').unwrap_or(v)
}

/// Rewrites the `host:port` words of `names` as `:port` when they all share one host, so
/// workers on one machine stay apart once rows are cut.
pub fn shorten_hosts(names: Vec<String>) -> Vec<String> {
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

/// Draws the routing panel.
pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let inner = framed(panel("Routing: gateway counters Δ this phase"), area, buf);
    let deltas = &app.live.routing;
    if deltas.is_empty() {
        let msg = "no gateway routing counters changed in this phase";
        buf.set_line(inner.x, inner.y, &Line::styled(msg, theme::dim()), inner.width);
        return;
    }
    let route = app.live.cell.and_then(|c| app.session.cells.get(c)).and_then(|c| c.spec.route());
    let names = shorten_hosts(deltas.iter().map(|d| short_name(d, route)).collect());
    let top = deltas.iter().map(|d| d.delta).fold(0.0, f64::max);
    let width = usize::from(inner.width);
    let value_w = 8;
    let name_w = names.iter().map(|n| n.chars().count()).max().unwrap_or(10).min(width / 2 + 8);
    let bar_w = width.saturating_sub(name_w + value_w + 2);
    let rows = usize::from(inner.height);
    let shown = if deltas.len() <= rows { deltas.len() } else { rows.saturating_sub(1) };
    for (i, (d, name)) in deltas.iter().zip(&names).take(shown).enumerate() {
        let ratio = if top > 0.0 { d.delta / top } else { 0.0 };
        let reset = if d.reset { "↺" } else { " " };
        let line = Line::from(vec![
            Span::styled(format!("{:<name_w$} ", fit(name, name_w)), theme::label()),
            Span::styled(format!("{:>7.0}{reset}", d.delta), theme::value()),
            Span::styled(bar(ratio, bar_w), theme::spark()),
        ]);
        buf.set_line(inner.x, inner.y + i as u16, &line, inner.width);
    }
    if shown < deltas.len() {
        let more = format!("+{} more counters", deltas.len() - shown);
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
}
