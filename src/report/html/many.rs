//! Several session reports as one page (`report --format html A.json B.json ...`, or an
//! engine-config sweep's sets): a header naming every source, one Pareto chart over all their
//! cells, then each report's usual header and sections in turn, under its source's label, with
//! anchors of their own (`s2-decode`).

use super::page::{self, escape};
use crate::report::pareto::Source;

/// Renders `sources` as one self-contained HTML page: the Pareto chart over all of them (each
/// point labelled by cell and source), then each report's sections, in the order given.
pub fn render_many(sources: &[Source<'_>]) -> String {
    let (id, title, intro, content) = super::pareto_part(sources);
    let mut body = top(sources, !content.is_empty());
    if !content.is_empty() {
        body.push_str(&page::section(&id, &title, &intro, &content));
    }
    for (i, s) in sources.iter().enumerate() {
        body.push_str(&format!(
            "<h2 class=\"source\" id=\"s{}\">{} <span class=\"tool\">report {} of {}</span></h2>\n",
            i + 1,
            escape(s.label),
            i + 1,
            sources.len()
        ));
        body.push_str(&super::report_body(s.report, &format!("s{}-", i + 1), false));
        body.push_str(&super::footer(s.report));
    }
    let labels: Vec<&str> = sources.iter().map(|s| s.label).collect();
    page::document(&format!("{} · llm-decode-bench", labels.join(" · ")), &body)
}

/// The page's own header: how many reports, one line per source (model, start, whether it
/// finished) and links to the Pareto chart (`pareto`: it is on the page) and each report.
fn top(sources: &[Source<'_>], pareto: bool) -> String {
    let items: String = sources
        .iter()
        .map(|s| {
            let state = if s.report.complete { "complete" } else { "incomplete" };
            let facts = format!("{} · started {} · {state}", s.report.model, s.report.started_at);
            format!("<div><dt>{}</dt><dd>{}</dd></div>", escape(s.label), escape(&facts))
        })
        .collect();
    let mut links = String::new();
    if pareto {
        links.push_str("<a href=\"#pareto\">Pareto view</a>");
    }
    for (i, s) in sources.iter().enumerate() {
        links.push_str(&format!("<a href=\"#s{}\">{}</a>", i + 1, escape(s.label)));
    }
    format!(
        "<header class=\"top\">\n<h1>{} session reports<span class=\"tool\">llm-decode-bench {}</span></h1>\n\
         <dl class=\"meta\">{items}</dl>\n<nav class=\"toc\">{links}</nav>\n</header>\n",
        sources.len(),
        escape(crate::version::VERSION)
    )
}
