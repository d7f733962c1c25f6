//! The page of a sweep report (`run --server-cmd`): the sweep's header, the sets side by side,
//! the Pareto view over every set's cells, then every set's own sections under its heading (their anchors prefixed `setN-`, so the
//! links of one set lead into that set), or its error and log tail when it has no session.

use super::page::{self, escape};
use crate::report::json::SessionReport;
use crate::report::pareto::Source;
use crate::report::sweep::render::heading;
use crate::report::sweep::side::side_by_side;
use crate::report::sweep::{SweepSection, SweepSet};

/// The side-by-side table.
fn side(sweep: &SweepSection) -> String {
    let (header, rows) = side_by_side(sweep).grid();
    let head: Vec<&str> = header.iter().map(String::as_str).collect();
    let rows: Vec<Vec<String>> = rows.iter().map(|r| r.iter().map(|c| escape(c)).collect()).collect();
    page::table(&head, &head[2..], &rows)
}

/// A set's own sections (its page without the document around it), anchors prefixed.
fn set_body(set: &SweepSet, report: &SessionReport) -> String {
    let parts = super::parts(report, false);
    let present: Vec<_> = parts.iter().filter(|p| !p.3.is_empty()).collect();
    let toc: Vec<(&str, &str)> = present.iter().map(|p| (p.0.as_str(), p.1.as_str())).collect();
    let mut body = page::header(report, &toc);
    for (id, title, intro, content) in present {
        body.push_str(&page::section(id, title, intro, content));
    }
    let prefix = format!("set{}-", set.index);
    body.replace("id=\"", &format!("id=\"{prefix}")).replace("href=\"#", &format!("href=\"#{prefix}"))
}

/// A set without a session: its error and the last lines of its server's log.
fn failure(set: &SweepSet) -> String {
    let mut out = String::new();
    if let Some(e) = &set.error {
        out.push_str(&format!("<p class=\"note\">{}</p>\n", escape(e)));
    }
    if !set.log_tail.is_empty() {
        let tail: Vec<String> = set.log_tail.iter().map(|l| escape(l)).collect();
        out.push_str(&format!("<pre>{}</pre>\n", tail.join("\n")));
    }
    out
}

/// The Pareto view over every set that ran, each point labelled by its cell and set (empty
/// content when no cell gives a point).
fn pareto(sweep: &SweepSection) -> super::Part {
    let sessions = sweep.sessions();
    let sources: Vec<Source<'_>> =
        sessions.iter().map(|(label, r)| Source { label: label.as_str(), report: r }).collect();
    super::pareto_part(&sources)
}

/// Renders the sweep report `report` as one self-contained page.
pub(crate) fn render_sweep(report: &SessionReport, sweep: &SweepSection) -> String {
    let (pareto_id, pareto_title, pareto_intro, chart) = pareto(sweep);
    let mut toc: Vec<(String, String)> = vec![("sets".into(), "Sets side by side".into())];
    if !chart.is_empty() {
        toc.push((pareto_id.clone(), pareto_title.clone()));
    }
    toc.extend(sweep.sets.iter().map(|s| (format!("set-{}", s.index), sweep.title(s))));
    let links: Vec<(&str, &str)> = toc.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let mut body = page::header(report, &links);
    let intro = format!(
        "One column per parameter set of `{}`: the server each set started, then every cell's headline figures.",
        sweep.server_cmd
    );
    body.push_str(&page::section("sets", "Sets side by side", &intro, &side(sweep)));
    if !chart.is_empty() {
        body.push_str(&page::section(&pareto_id, &pareto_title, &pareto_intro, &chart));
    }
    for set in &sweep.sets {
        let content = match set.report.as_deref() {
            Some(r) => set_body(set, r) + &failure(set),
            None => failure(set),
        };
        let content = if content.is_empty() { "<p class=\"note\">Not run.</p>\n".to_string() } else { content };
        body.push_str(&page::section(&format!("set-{}", set.index), &heading(sweep, set), "", &content));
    }
    body.push_str(&format!(
        "<footer>Written by {} {} from a schema v{} sweep report.</footer>\n",
        escape(&report.tool.name),
        escape(&report.tool.version),
        report.schema_version
    ));
    page::document(&format!("sweep · {} · llm-decode-bench · {}", report.model, report.started_at), &body)
}
