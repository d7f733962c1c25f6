//! The page around the charts: HTML escaping, the inline stylesheet, the header (model, target,
//! runtime, start, completeness, warnings), sections and tables.

use crate::report::json::SessionReport;

/// `s` with the five HTML-significant characters escaped, safe in text and in quoted attributes,
/// and every control, bidi or separator character a visible escape (`\x1b`, as
/// `crate::text_safe` writes it): server text such as `ESC ]0;…BEL` is invalid in HTML and,
/// with the page printed to a terminal, would retitle or clear it.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in crate::text_safe::text(s).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// `a / b` of two optional figures with `decimals` decimals (`—` for one absent or not finite).
pub(super) fn pair(a: Option<f64>, b: Option<f64>, decimals: usize) -> String {
    let one =
        |v: Option<f64>| v.filter(|x| x.is_finite()).map_or_else(|| "—".to_string(), |x| format!("{x:.decimals$}"));
    format!("{} / {}", one(a), one(b))
}

/// The inline stylesheet: system fonts only, nothing fetched.
const STYLE: &str = "
:root{--ink:#24292f;--muted:#6a737d;--line:#d0d7de;--soft:#f6f8fa;--accent:#1f77b4}
*{box-sizing:border-box}
body{margin:0;background:#eef1f4;color:var(--ink);font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif}
main{max-width:1220px;margin:0 auto;padding:24px 20px 48px}
header.top{background:#fff;border:1px solid var(--line);border-radius:8px;padding:18px 22px;margin-bottom:18px}
h1{font-size:22px;margin:0 0 4px;font-weight:600}
h1 .tool{color:var(--muted);font-weight:400;font-size:15px;margin-left:8px}
h2{font-size:17px;margin:0 0 8px;font-weight:600}
h3{font-size:14px;margin:18px 0 6px;font-weight:600}
h2.source{font-size:20px;margin:34px 0 12px;padding-top:14px;border-top:3px solid var(--line)}
h2.source .tool{color:var(--muted);font-weight:400;font-size:14px;margin-left:8px}
section{background:#fff;border:1px solid var(--line);border-radius:8px;padding:16px 20px;margin-bottom:18px}
dl.meta{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:6px 24px;margin:12px 0 0}
dl.meta div{display:flex;gap:8px;min-width:0}
dl.meta dt{color:var(--muted);flex:0 0 auto}
dl.meta dd{margin:0;font-variant-numeric:tabular-nums;overflow-wrap:anywhere}
.badge{display:inline-block;padding:1px 9px;border-radius:10px;font-size:12px;font-weight:600;vertical-align:middle;margin-left:8px}
.badge.ok{background:#dafbe1;color:#116329}
.badge.warn{background:#fff1c2;color:#7d4e00}
.badge.bad{background:#ffe1de;color:#a40e26}
.warnings{margin:14px 0 0;padding:10px 14px;background:#fff8e1;border:1px solid #f0d58a;border-radius:6px}
.warnings ul{margin:4px 0 0;padding-left:20px}
p.intro{color:var(--muted);margin:0 0 10px;max-width:900px}
p.note,p.legend{color:var(--muted);font-size:12.5px;margin:6px 0 0}
svg.chart{display:block;max-width:100%;height:auto;margin:6px 0}
svg.chart text{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif}
table.data{border-collapse:collapse;width:100%;font-size:13px;margin:8px 0 0;font-variant-numeric:tabular-nums}
table.data th{background:var(--soft);text-align:left;font-weight:600;border-bottom:1px solid var(--line);padding:5px 8px;white-space:nowrap}
table.data td{border-bottom:1px solid #eaeef2;padding:4px 8px;vertical-align:top}
table.data td.num{text-align:right;white-space:nowrap}
nav.toc{margin-top:12px;font-size:13px}
nav.toc a{color:var(--accent);text-decoration:none;margin-right:14px}
footer{color:var(--muted);font-size:12px;text-align:center}
";

/// The whole document: `title` in the tab, `body` inside `<main>`.
pub(super) fn document(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n{body}</main>\n</body>\n</html>\n",
        escape(title)
    )
}

/// One section of the page: anchor `id`, heading, an optional introduction, the content.
pub(super) fn section(id: &str, title: &str, intro: &str, content: &str) -> String {
    let intro = if intro.is_empty() { String::new() } else { format!("<p class=\"intro\">{}</p>\n", escape(intro)) };
    format!("<section id=\"{id}\">\n<h2>{}</h2>\n{intro}{content}</section>\n", escape(title))
}

/// A table: `head` names the columns (plain text); rows hold cells already escaped. Cells whose
/// column name is in `numeric` are right-aligned.
pub(super) fn table(head: &[&str], numeric: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::from("<table class=\"data\">\n<thead><tr>");
    for h in head {
        out.push_str(&format!("<th>{}</th>", escape(h)));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in rows {
        out.push_str("<tr>");
        for (cell, h) in row.iter().zip(head) {
            let class = if numeric.contains(h) { " class=\"num\"" } else { "" };
            out.push_str(&format!("<td{class}>{cell}</td>"));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

/// How the session ended, as a badge: complete, interrupted (an `interrupted` or `quit` action)
/// or still incomplete.
fn status_badge(report: &SessionReport) -> &'static str {
    let stopped = report.actions.iter().any(|a| a.action == "interrupted" || a.action == "quit");
    match (report.complete, stopped) {
        (true, _) => "<span class=\"badge ok\">complete</span>",
        (false, true) => "<span class=\"badge bad\">interrupted</span>",
        (false, false) => "<span class=\"badge warn\">incomplete</span>",
    }
}

/// One `<dt>`/`<dd>` pair of the header; `value` is plain text.
fn meta(name: &str, value: &str) -> String {
    format!("<div><dt>{}</dt><dd>{}</dd></div>", escape(name), escape(value))
}

/// The header: model and status, the facts of the session, its warnings, and links to the
/// sections present (`toc`: anchor id and title).
pub(super) fn header(report: &SessionReport, toc: &[(&str, &str)]) -> String {
    let t = &report.target;
    let or_dash = |v: Option<&str>| v.unwrap_or("—").to_string();
    let tokens = |v: Option<u64>| v.map_or_else(|| "—".to_string(), |n| format!("{n} tokens"));
    let replicas: Vec<&str> = t.replica_info.iter().map(|r| r.name.as_str()).collect();
    let replicas = if replicas.is_empty() { report.replicas.to_string() } else { replicas.join(", ") };
    let window = format!("window {} s", report.plan.window_s);
    let plan =
        if report.plan.kinds.is_empty() { window } else { format!("{} · {window}", report.plan.kinds.join(" + ")) };
    let mut items = vec![
        meta("Target", &format!("{} ({})", t.base_url, t.endpoint)),
        meta("Runtime", &or_dash(report.runtime.as_deref())),
        meta("Engine metrics", &t.engine_dialect),
        meta("Started", &report.started_at),
        meta("Last written", &report.updated_at),
        meta("Replicas", &replicas),
        meta("Max model len", &tokens(t.max_model_len)),
        meta("KV capacity", &tokens(t.kv_capacity_tokens)),
        meta("Plan", &plan),
    ];
    if let Some(g) = &report.gateway_version {
        items.insert(2, meta("Gateway", g));
    }
    if report.planned_phases > 0 {
        items.push(meta("Routing phases", &format!("{}/{} measured", report.measured_phases, report.planned_phases)));
    }
    let links: String = toc.iter().map(|(id, title)| format!("<a href=\"#{id}\">{}</a>", escape(title))).collect();
    format!(
        "<header class=\"top\">\n<h1>{}{}<span class=\"tool\">{} {}</span></h1>\n<dl class=\"meta\">{}</dl>\n{}{}</header>\n",
        escape(&report.model),
        status_badge(report),
        escape(&report.tool.name),
        escape(&report.tool.version),
        items.join(""),
        warnings(&report.warnings),
        if links.is_empty() { String::new() } else { format!("<nav class=\"toc\">{links}</nav>\n") },
    )
}

/// The warnings box, empty without warnings.
fn warnings(list: &[String]) -> String {
    if list.is_empty() {
        return String::new();
    }
    let items: String = list.iter().map(|w| format!("<li>{}</li>", escape(w))).collect();
    format!("<div class=\"warnings\"><strong>Warnings ({})</strong><ul>{items}</ul></div>\n", list.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::json::ActionRecord;
    use crate::report::tests_schema::minimal_report;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape("<a href=\"x\">Tom & 'Jerry'</a>"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;"
        );
        assert_eq!(escape("plain ∅ · text"), "plain ∅ · text");
    }

    #[test]
    fn header_escapes_report_strings_and_says_how_it_ended() {
        let mut report = minimal_report();
        report.model = "<script>alert(1)</script>".into();
        report.warnings = vec!["metrics \"down\" & <b>".into()];
        let out = header(&report, &[]);
        assert!(!out.contains("<script>") && out.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{out}");
        assert!(out.contains("<li>metrics &quot;down&quot; &amp; &lt;b&gt;</li>"), "{out}");
        assert!(out.contains("badge warn\">incomplete"), "{out}");
        report.actions.push(ActionRecord { at_s: 3.0, action: "interrupted".into(), cell: None });
        assert!(header(&report, &[]).contains(">interrupted</span>"));
        report.complete = true;
        assert!(header(&report, &[("decode", "Decode")]).contains("<a href=\"#decode\">Decode</a>"));
    }

    #[test]
    fn tables_align_numeric_columns() {
        let out = table(&["cell", "tok/s"], &["tok/s"], &[vec!["16k".into(), "1.0".into()]]);
        assert!(out.contains("<tr><td>16k</td><td class=\"num\">1.0</td></tr>"), "{out}");
    }
}
