//! Pages for every report shape (decode, burst, routing, interrupted, nothing measured, the
//! committed example), checked to be self-contained and to escape what the report says.

use super::render;
use crate::report::json::{ActionRecord, SessionReport};
use crate::report::phase::RoutingPhase;
use crate::report::tests_schema::{full_report, minimal_report};

/// The committed example report.
const EXAMPLE: &str = include_str!("../../../tests/fixtures/report_example.json");

/// Asserts `page` loads nothing: no script, link, import, `url(...)`, `src` or external `href`.
fn assert_self_contained(page: &str) {
    let lower = page.to_lowercase();
    for banned in ["<script", "<link", "@import", "url(", " src=\"", "<iframe", "<object", "<embed", "<img"] {
        assert!(!lower.contains(banned), "page contains {banned:?}");
    }
    for (i, _) in lower.match_indices("href=") {
        assert!(lower[i..].starts_with("href=\"#"), "external link at {}", &page[i..(i + 60).min(page.len())]);
    }
    assert!(page.starts_with("<!doctype html>") && page.trim_end().ends_with("</html>"));
    assert_eq!(page.matches("<svg").count(), page.matches("</svg>").count(), "unbalanced svg");
    assert_eq!(page.matches("<section").count(), page.matches("</section>").count(), "unbalanced sections");
}

/// `report` with every URL it carries replaced by a bare host, so any `http` left is ours.
fn without_urls(mut report: SessionReport) -> SessionReport {
    report.target.base_url = "127.0.0.1:8000".into();
    report.target.replica_info.iter_mut().for_each(|r| r.metrics_url = "10.0.0.1:8000/metrics".into());
    report
}

/// Renders, checks self-containment and that no network address was added, returns the page.
fn page_of(report: SessionReport) -> String {
    let page = render(&without_urls(report));
    assert_self_contained(&page);
    assert!(!page.contains("http://") && !page.contains("https://"), "a network reference was emitted");
    page
}

#[test]
fn a_decode_session_has_heatmaps_lines_distributions_and_cells() {
    let page = page_of(SessionReport { burst: None, phases: vec![], phase_history: vec![], ..full_report() });
    for want in [
        "<section id=\"decode\">",
        "aria-label=\"Aggregate tok/s by context and concurrency\"",
        "aria-label=\"Per-request tok/s by context and concurrency\"",
        "aria-label=\"Aggregate tok/s against concurrency, one line per context\"",
        "aria-label=\"TTFT per cell (ctx/conc), ms\"",
        "aria-label=\"TPOT per cell (ctx/conc), ms\"",
        "<h3>Cells</h3>",
        "<section id=\"timelines\">",
        "<section id=\"actions\">",
        "badge ok\">complete",
    ] {
        assert!(page.contains(want), "no {want:?}");
    }
    assert!(!page.contains("id=\"burst\"") && !page.contains("id=\"routing\""));
}

#[test]
fn a_burst_session_has_its_heatmap_and_latencies() {
    let page = page_of(SessionReport { decode: None, phases: vec![], ..full_report() });
    assert!(page.contains("<section id=\"burst\">") && !page.contains("<section id=\"decode\">"));
    assert!(page.contains("aria-label=\"Burst output tok/s by context and burst size\""));
    assert!(page.contains("aria-label=\"Burst end-to-end latency per cell (ctx/burst), ms\""));
    assert!(page.contains("307.2"));
}

#[test]
fn a_routing_session_has_the_replica_split() {
    let page = page_of(SessionReport { decode: None, burst: None, ..full_report() });
    assert!(page.contains("<section id=\"routing\">"), "routing section");
    assert!(page.contains("aria-label=\"Requests per replica, one bar per routing phase\""));
    assert!(page.contains("Routing phases</dt><dd>1/2 measured"));
}

#[test]
fn an_interrupted_session_says_so() {
    let mut report = full_report();
    report.complete = false;
    report.actions.push(ActionRecord { at_s: 80.0, action: "interrupted".into(), cell: None });
    if let Some(d) = report.decode.as_mut() {
        d.cells[1].status = crate::report::status::CellOutcome::Pending;
    }
    let page = page_of(report);
    assert!(page.contains("badge bad\">interrupted"));
    assert!(page.contains("·"), "the pending cell shows as not run");
}

#[test]
fn a_report_with_nothing_measured_still_renders() {
    let page = page_of(minimal_report());
    assert!(page.contains("Nothing measured") && page.contains("<h1>test-model"), "{page}");
    assert!(!page.contains("<svg"));
    let unrun = SessionReport { phases: vec![RoutingPhase::not_run("r1-x", "failed")], ..minimal_report() };
    assert!(page_of(unrun).contains("No per-replica request counts"));
}

#[test]
fn the_example_fixture_renders_every_section() {
    let report: SessionReport = serde_json::from_str(EXAMPLE).expect("fixture parses");
    let page = page_of(report);
    for id in ["decode", "burst", "routing", "timelines", "actions"] {
        assert!(page.contains(&format!("<section id=\"{id}\">")), "no {id} section");
        assert!(page.contains(&format!("<a href=\"#{id}\">")), "no link to {id}");
    }
}

#[test]
fn every_report_string_is_escaped() {
    let evil = "<img src=x onerror=alert(1)>&\"'";
    let mut report = full_report();
    report.model = evil.into();
    report.runtime = Some(evil.into());
    report.warnings.push(evil.into());
    report.actions[0].cell = Some(evil.into());
    report.actions[0].action = evil.into();
    report.phases[0].phase = evil.into();
    report.phases[0].replicas = std::mem::take(&mut report.phases[0].replicas)
        .into_values()
        .enumerate()
        .map(|(i, r)| (format!("{evil}{i}"), r))
        .collect();
    if let Some(d) = report.decode.as_mut() {
        d.ctx_labels = vec![evil.into()];
        d.cells.iter_mut().for_each(|c| c.ctx_label = evil.into());
    }
    report.replica_series.insert(evil.into(), report.replica_series["r0"].clone());
    let page = page_of(report);
    assert!(!page.contains("<img") && !page.contains("onerror=alert(1)>"), "raw markup leaked");
    assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;&amp;&quot;&#39;"), "HTML-escaped");
}

#[test]
fn terminal_escapes_from_the_server_are_visible_text() {
    let evil = "evil\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{202e}model";
    let mut report = full_report();
    report.model = evil.into();
    report.warnings.push(evil.into());
    if let Some(d) = report.decode.as_mut() {
        let a = &mut d.cells[1].attempts[1];
        a.error_examples.values_mut().for_each(|e| *e = format!("HTTP 500: {evil}"));
    }
    let page = page_of(report);
    let raw: Vec<char> = page.chars().filter(|c| crate::text_safe::is_unsafe(*c) && *c != '\n').collect();
    assert!(raw.is_empty(), "raw control characters reach the page: {raw:?}");
    assert!(page.contains("evil\\x1b]0;pwned\\x07\\x1b[2J\\u{9b}31m\\u{202e}model"), "shown as escapes");
}

#[test]
fn the_pareto_view_places_every_measured_cell() {
    let page = page_of(full_report());
    assert!(page.contains("<section id=\"pareto\">") && page.contains("<a href=\"#pareto\">"), "pareto section");
    assert!(page.contains(&format!("aria-label=\"{}\"", super::pareto::LABEL)));
    assert!(page.contains("1000 / the cell&#39;s median TPOT") || page.contains("1000 / the cell's median TPOT"));
    // The measured decode cell (itl p50 19.5 ms) and the burst (TPOT p50 14.25 ms): neither
    // beats the other on both, so both are on the frontier; the errored cell has no point.
    let row = |n: u32, kind: &str, cell: &str, user: &str, agg: &str| {
        format!(
            "<tr><td class=\"num\">{n}</td><td>{kind}</td><td>{cell}</td><td class=\"num\">{user}</td>\
             <td class=\"num\">{agg}</td><td>yes</td></tr>"
        )
    };
    assert!(page.contains(&row(1, "decode", "ctx 16k · conc 8", "51.3", "564.8")), "{page}");
    assert!(page.contains(&row(2, "burst", "ctx 16k · burst 4", "70.2", "307.2")), "{page}");
    assert!(!page.contains("<th>source</th>"), "one source is not named");
    assert!(!page.contains("ctx 16k · conc 4"), "the errored cell has no point");
    let routing = SessionReport { decode: None, burst: None, ..full_report() };
    assert!(!page_of(routing).contains("id=\"pareto\""), "routing phases give no point");
}

#[test]
fn several_reports_make_one_page_with_one_pareto_chart() {
    use crate::report::pareto::Source;
    let (a, b) = (full_report(), crate::report::tests_shapes::with_serve());
    let (a, b) = (without_urls(a), without_urls(b));
    let evil = "b<i>\"\u{1b}]0;x\u{7}";
    let page = super::render_many(&[Source { label: "runs/a", report: &a }, Source { label: evil, report: &b }]);
    assert_self_contained(&page);
    assert_eq!(page.matches("<section id=\"pareto\">").count(), 1, "one chart over both");
    assert_eq!(page.matches(&format!("aria-label=\"{}\"", super::pareto::LABEL)).count(), 1);
    for want in [
        "<h1>2 session reports",
        "<h2 class=\"source\" id=\"s1\">runs/a ",
        "<h2 class=\"source\" id=\"s2\">b&lt;i&gt;&quot;\\x1b]0;x\\x07 ",
        "<section id=\"s1-decode\">",
        "<section id=\"s1-burst\">",
        "<section id=\"s2-serve\">",
        "<a href=\"#s1-decode\">",
        "<a href=\"#s2\">b&lt;i&gt;&quot;\\x1b]0;x\\x07</a>",
        "<th>source</th>",
        "<td>runs/a</td><td>decode</td><td>ctx 16k · conc 8</td>",
        "<td>b&lt;i&gt;&quot;\\x1b]0;x\\x07</td><td>serve</td><td>in 1k · conc 2 · rate inf</td>",
    ] {
        assert!(page.contains(want), "no {want:?}");
    }
    assert!(!page.contains("<i>") && !page.contains("<section id=\"decode\">"), "escaped, and ids prefixed");
    let raw: Vec<char> = page.chars().filter(|c| crate::text_safe::is_unsafe(*c) && *c != '\n').collect();
    assert!(raw.is_empty(), "raw control characters reach the page (the chart's key and labels too): {raw:?}");
    let mut ids: Vec<&str> = page.split("id=\"").skip(1).filter_map(|s| s.split('"').next()).collect();
    let n = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n, "every id once: {ids:?}");
    for (i, _) in page.match_indices("href=\"#") {
        let target = page[i + 7..].split('"').next().unwrap_or_default();
        assert!(ids.contains(&target), "a link to #{target}, which is not on the page");
    }
}

#[test]
fn several_reports_without_points_have_no_pareto_section() {
    use crate::report::pareto::Source;
    let (a, b) = (minimal_report(), minimal_report());
    let page = super::render_many(&[Source { label: "a", report: &a }, Source { label: "a (2)", report: &b }]);
    assert_self_contained(&page);
    assert!(!page.contains("pareto") && !page.contains("<svg"), "{page}");
    assert!(page.contains("<section id=\"s2-empty\">") && page.contains("<a href=\"#s2\">a (2)</a>"), "{page}");
}
