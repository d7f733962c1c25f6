//! The `html` report format: one self-contained page (no network, no script, no external font or
//! stylesheet): the decode and burst matrices as heatmaps, tok/s against concurrency, TTFT/ITL
//! distributions per cell, the routing phases' per-replica split, KV and queue timelines and the
//! operator's actions. Charts are drawn with plotters' SVG backend and inlined as `<svg>`.

mod cells;
mod charts;
mod heatmap;
mod page;
mod routing;
mod svg;
mod timelines;

#[cfg(test)]
mod tests;

pub use page::escape;

use super::json::SessionReport;

/// One section of the page: anchor id, title, introduction and content (empty: not shown).
type Part = (&'static str, &'static str, &'static str, String);

/// Every section the page can have, in page order.
fn parts(report: &SessionReport) -> [Part; 5] {
    let decode = [
        heatmap::heatmaps(report),
        charts::tps_by_conc(report),
        charts::decode_distributions(report),
        cells::cell_table(report),
    ];
    [
        (
            "decode",
            "Sustained decode",
            "Steady-state decode throughput after the engine admitted the requested concurrency and passed warmup: \
             the main tuning and regression signal.",
            if report.decode.is_some() { decode.concat() } else { String::new() },
        ),
        (
            "burst",
            "Burst (end to end)",
            "Finite bursts of requests sent at once, each measured from first send to last token.",
            [heatmap::burst_heatmap(report), charts::burst_distributions(report)].concat(),
        ),
        (
            "routing",
            "Prefix-cache routing",
            "The latest attempt of every routing phase: how its requests spread over the replicas and what they achieved.",
            routing::routing(report),
        ),
        (
            "timelines",
            "Replica timelines",
            "Polled from each replica's Prometheus metrics, about once a second.",
            timelines::timelines(report),
        ),
        (
            "actions",
            "Actions",
            "What the operator did and what happened to the session, in order.",
            timelines::actions(report),
        ),
    ]
}

/// Renders `report` as one self-contained HTML page.
pub fn render(report: &SessionReport) -> String {
    let parts = parts(report);
    let present: Vec<&Part> = parts.iter().filter(|p| !p.3.is_empty()).collect();
    let toc: Vec<(&str, &str)> = present.iter().map(|p| (p.0, p.1)).collect();
    let mut body = page::header(report, &toc);
    if present.is_empty() {
        body.push_str(&page::section(
            "empty",
            "Nothing measured",
            "",
            "<p class=\"note\">This session has no measured cell, phase, series or action yet.</p>\n",
        ));
    }
    for (id, title, intro, content) in present {
        body.push_str(&page::section(id, title, intro, content));
    }
    body.push_str(&format!(
        "<footer>Written by {} {} from a schema v{} session report.</footer>\n",
        escape(&report.tool.name),
        escape(&report.tool.version),
        report.schema_version
    ));
    page::document(&format!("{} · llm-decode-bench · {}", report.model, report.started_at), &body)
}
