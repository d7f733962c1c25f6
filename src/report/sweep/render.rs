//! How a sweep report reads in every format: each set's own tables under a heading naming the
//! set (or, for a set without a session, why: its error and the last lines of its server's
//! log), then the sets side by side ([`super::side`]). CSV and the `vllm` export keep one row
//! per cell, each led by its set.

use super::side::side_by_side;
use super::{SweepSection, SweepSet};
use crate::report::formats::{RenderSettings, ReportFormat};
use crate::report::json::SessionReport;
use crate::report::text::{BoxStyle, RenderOptions, Row, Table};

/// Renders the sweep report `report` (whose `sweep` is `sweep`) in `format`.
pub(crate) fn render(format: ReportFormat, report: &SessionReport, sweep: &SweepSection, s: RenderSettings) -> String {
    match format {
        ReportFormat::Text => text(sweep, s),
        ReportFormat::Markdown => markdown(sweep),
        ReportFormat::Html => crate::report::html::render_sweep(report, sweep),
        ReportFormat::Csv => per_set_csv(report, sweep, crate::report::csv::render),
        ReportFormat::Vllm => vllm(sweep, &crate::stats::PercentileList::vllm_default()),
    }
}

/// `set 1/2 · max_num_seqs=4 · done · up in 0.4 s · log: r.set-1.server.log`.
pub(crate) fn heading(sweep: &SweepSection, set: &SweepSet) -> String {
    let mut h = format!("{} · {}", sweep.title(set), set.status.as_str());
    if let Some(t) = set.startup_s {
        h.push_str(&format!(" · up in {} s", super::seconds(t)));
    }
    if let Some(log) = &set.log {
        h.push_str(&format!(" · log: {log}"));
    }
    h
}

/// What a set without tables says instead: its error and its log's last lines.
fn failure_lines(set: &SweepSet) -> Vec<String> {
    let mut out: Vec<String> = set.error.iter().map(|e| format!("error: {e}")).collect();
    if !set.log_tail.is_empty() {
        out.push("last lines of the server log:".into());
        out.extend(set.log_tail.iter().map(|l| format!("  | {l}")));
    }
    out
}

/// The side-by-side table of `sweep` as a text table.
fn side_table(sweep: &SweepSection) -> Table {
    let (header, rows) = side_by_side(sweep).grid();
    let safe = |r: &[String]| r.iter().map(|c| crate::text_safe::line(c).into_owned()).collect::<Vec<_>>();
    let (header, rows): (Vec<String>, Vec<Vec<String>>) = (safe(&header), rows.iter().map(|r| safe(r)).collect());
    // The cell and its figure share the first column, which every part of a split table keeps.
    let join = |r: &[String]| match (r[0].is_empty(), r[1].is_empty()) {
        (_, true) => r[0].clone(),
        (true, false) => format!("  {}", r[1]),
        (false, false) => format!("{} · {}", r[0], r[1]),
    };
    let mut table =
        Table::new("Sets side by side", std::iter::once(String::new()).chain(header[2..].iter().cloned()).collect());
    for r in &rows {
        table.rows.push(Row::new(std::iter::once(join(r)).chain(r[2..].iter().cloned()).collect()));
    }
    table
}

fn text(sweep: &SweepSection, s: RenderSettings) -> String {
    let mut out: Vec<String> = Vec::new();
    for set in &sweep.sets {
        let rule = if s.ascii { "==" } else { "━━" };
        out.push(crate::text_safe::line(&format!("{rule} {} {rule}", heading(sweep, set))).into_owned());
        let tables = set.report.as_deref().map(|r| ReportFormat::Text.render(r, s)).unwrap_or_default();
        match tables.is_empty() {
            true if set.status.failed() => {}
            true => out.push("(no tables)".into()),
            false => out.push(tables),
        }
        out.extend(failure_lines(set).iter().map(|l| crate::text_safe::line(l).into_owned()));
        out.push(String::new());
    }
    let style = if s.ascii { BoxStyle::Ascii } else { BoxStyle::Unicode };
    let opts = RenderOptions { style, dim_ansi: s.dim_ansi, max_width: s.width };
    out.extend(side_table(sweep).render_lines(opts));
    out.join("\n")
}

fn markdown(sweep: &SweepSection) -> String {
    let cell = |s: &str| crate::text_safe::line(s).replace('|', "\\|");
    let mut out: Vec<String> = Vec::new();
    for set in &sweep.sets {
        out.push(format!("## {}", cell(&heading(sweep, set))));
        out.push(String::new());
        if let Some(md) = set.report.as_deref().map(crate::report::markdown::render).filter(|m| !m.is_empty()) {
            out.push(md);
        }
        let failure = failure_lines(set);
        if !failure.is_empty() {
            out.push("```".into());
            out.extend(failure.iter().map(|l| crate::text_safe::line(l).replace("```", "'''")));
            out.push("```".into());
            out.push(String::new());
        }
    }
    let (header, rows) = side_by_side(sweep).grid();
    out.push("## Sets side by side".into());
    out.push(String::new());
    out.push(format!("| {} |", header.iter().map(|h| cell(h)).collect::<Vec<_>>().join(" | ")));
    out.push(format!("|---|---|{}", "---:|".repeat(header.len() - 2)));
    for r in rows {
        out.push(format!("| {} |", r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")));
    }
    out.join("\n") + "\n"
}

/// Each set's CSV (`one`: cells or requests), every row led by the set's index, parameters
/// and status, under one header line (`top`'s when no set has a session).
pub(crate) fn per_set_csv(top: &SessionReport, sweep: &SweepSection, one: fn(&SessionReport) -> String) -> String {
    let lead = "set,set_params,set_status,";
    let first = |csv: &str| csv.split_inclusive("\r\n").next().map(|h| format!("{lead}{h}")).unwrap_or_default();
    let mut header = None;
    let mut rows = String::new();
    for set in &sweep.sets {
        let Some(report) = set.report.as_deref() else { continue };
        let csv = one(report);
        header.get_or_insert_with(|| first(&csv));
        let params = crate::report::csv::quote(&sweep.describe(set));
        for line in csv.split_inclusive("\r\n").skip(1) {
            rows.push_str(&format!("{},{params},{},{line}", set.index, set.status.as_str()));
        }
    }
    header.unwrap_or_else(|| first(&one(top))) + &rows
}

/// `vllm bench serve`'s fields for every cell of every set, each row with `set` (its index)
/// and `set_params` (its parameters).
pub(crate) fn vllm(sweep: &SweepSection, percentiles: &crate::stats::PercentileList) -> String {
    let mut all = Vec::new();
    for set in &sweep.sets {
        let Some(report) = set.report.as_deref() else { continue };
        let serde_json::Value::Array(rows) = crate::report::vllm::export(report, percentiles) else { continue };
        for mut row in rows {
            if let Some(o) = row.as_object_mut() {
                o.insert("set".into(), set.index.into());
                o.insert("set_params".into(), serde_json::json!(set.params));
            }
            all.push(row);
        }
    }
    format!("{}\n", serde_json::to_string_pretty(&all).unwrap_or_else(|_| "[]".into()))
}
