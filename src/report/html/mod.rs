//! The `html` report format: one self-contained page (no network, no script, no external font or
//! stylesheet): the decode and burst matrices as heatmaps, tok/s against concurrency, TTFT/TPOT
//! distributions per cell and the knob's load levels, the routing phases' per-replica split, the
//! serve cells, tok/s per user against aggregate tok/s with the Pareto frontier, KV and queue
//! timelines and the operator's actions. Charts are drawn with plotters' SVG backend and
//! inlined as `<svg>`. Several reports render as one page ([`render_many`]): each report's
//! sections in turn and one Pareto chart over all of them.

mod cells;
mod charts;
mod extension;
mod heatmap;
mod many;
mod page;
mod pareto;
mod placement;
mod routing;
mod runs;
mod serve;
mod svg;
mod sweep;
mod timelines;

#[cfg(test)]
mod tests;

pub use many::render_many;
pub use page::escape;
pub use pareto::pareto;
pub(crate) use sweep::render_sweep;

use super::json::SessionReport;
use super::kind::ExperimentKind;

/// One section of the page: anchor id, title, introduction and content (empty: not shown).
type Part = (String, String, String, String);

/// A part from fixed words.
fn part(id: &str, title: &str, intro: &str, content: String) -> Part {
    (id.into(), title.into(), intro.into(), content)
}

/// The section of experiment `kind`.
fn experiment_part(report: &SessionReport, kind: ExperimentKind) -> Part {
    match kind {
        ExperimentKind::Decode => part(
            "decode",
            "Sustained decode",
            "Steady-state decode throughput after the engine admitted the requested concurrency and passed warmup: \
             the main tuning and regression signal.",
            match report.decode.is_some() {
                true => [
                    heatmap::heatmaps(report),
                    charts::tps_by_conc(report),
                    charts::decode_distributions(report),
                    cells::cell_table(report),
                    cells::levels_table(report),
                ]
                .concat(),
                false => String::new(),
            },
        ),
        ExperimentKind::Burst => part(
            "burst",
            "Burst (end to end)",
            "Finite bursts of requests sent at once, each measured from first send to last token.",
            [heatmap::burst_heatmap(report), charts::burst_distributions(report)].concat(),
        ),
        ExperimentKind::Routing => part(
            "routing",
            "Prefix-cache routing",
            "The latest attempt of every routing phase: how its requests spread over the replicas and what they achieved.",
            routing::routing(report),
        ),
        ExperimentKind::Serve => part(
            "serve",
            "Serve workload",
            "vllm bench serve's random workload, one cell per input len x max concurrency x request rate.",
            serve::serve_table(report),
        ),
        ExperimentKind::Extension(name) => {
            let section = report.extensions.iter().find(|s| s.kind == name.as_str());
            let intro = format!("Kind `{name}`, an experiment registered from outside the built-in set.");
            let content = section.map(extension::extension_table).unwrap_or_default();
            (format!("ext-{name}"), section.map_or(name.to_string(), |s| s.title.clone()), intro, content)
        }
    }
}

/// The Pareto section over `sources` (empty content when no cell gives a point).
fn pareto_part(sources: &[crate::report::pareto::Source<'_>]) -> Part {
    part(
        "pareto",
        "Throughput per user against aggregate throughput",
        "Every measured cell at the output tok/s one user sees and the output tok/s of the whole cell, \
         with the Pareto frontier: the cells no other cell beats on both.",
        pareto::pareto(sources),
    )
}

/// Every section the page can have, in page order: one per experiment, the Pareto view of its
/// cells when `with_pareto`, then the timelines and the actions.
fn parts(report: &SessionReport, with_pareto: bool) -> Vec<Part> {
    let kinds = ExperimentKind::BUILT_IN.into_iter().chain(crate::report::extension::kinds(report));
    let mut parts: Vec<Part> = kinds.map(|k| experiment_part(report, k)).collect();
    if with_pareto {
        parts.push(pareto_part(&[crate::report::pareto::Source { label: "", report }]));
    }
    parts.push(part(
        "runs",
        "Repetitions",
        "Every cell ran several times back to back (--num-runs): its figures on this page are the mean of its runs.",
        runs::runs_table(report),
    ));
    parts.push(part(
        "timelines",
        "Replica timelines",
        "Polled from each replica's Prometheus metrics, about once a second.",
        timelines::timelines(report),
    ));
    parts.push(part(
        "actions",
        "Actions",
        "What the operator did and what happened to the session, in order.",
        timelines::actions(report),
    ));
    parts
}

/// Renders `report` as one self-contained HTML page.
pub fn render(report: &SessionReport) -> String {
    let mut body = report_body(report, "", true);
    body.push_str(&footer(report));
    page::document(&format!("{} · llm-decode-bench · {}", report.model, report.started_at), &body)
}

/// The header and sections of `report`, their anchors prefixed with `prefix` (several reports
/// on one page), its Pareto section when `with_pareto`.
fn report_body(report: &SessionReport, prefix: &str, with_pareto: bool) -> String {
    let mut parts = parts(report, with_pareto);
    parts.iter_mut().for_each(|p| p.0.insert_str(0, prefix));
    let present: Vec<&Part> = parts.iter().filter(|p| !p.3.is_empty()).collect();
    let toc: Vec<(&str, &str)> = present.iter().map(|p| (p.0.as_str(), p.1.as_str())).collect();
    let mut body = page::header(report, &toc);
    if present.is_empty() {
        body.push_str(&page::section(
            &format!("{prefix}empty"),
            "Nothing measured",
            "",
            "<p class=\"note\">This session has no measured cell, phase, series or action yet.</p>\n",
        ));
    }
    for (id, title, intro, content) in present {
        body.push_str(&page::section(id, title, intro, content));
    }
    body
}

/// The line under a report: the tool and schema that wrote it.
fn footer(report: &SessionReport) -> String {
    format!(
        "<footer>Written by {} {} from a schema v{} session report.</footer>\n",
        escape(&report.tool.name),
        escape(&report.tool.version),
        report.schema_version
    )
}
