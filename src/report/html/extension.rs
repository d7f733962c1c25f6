//! An extension experiment's section (`report::extension`) as a table: the common figures of
//! each cell's last attempt, then the experiment's own, one column each.

use super::page::{escape, table};
use crate::report::extension::{ExtensionSection, figure, figure_names};
use crate::report::status::CellOutcome;
use crate::report::text::format::{fmt_latency_ms, fmt_tps};

/// One row per cell of `section`, in plan order; empty without cells.
pub(super) fn extension_table(section: &ExtensionSection) -> String {
    if section.cells.is_empty() {
        return String::new();
    }
    let own = figure_names(section);
    let own_heads: Vec<String> = own.iter().map(|(n, _)| n.clone()).collect();
    let common = ["cell", "status", "attempts", "requests / errors", "output tok/s", "TTFT p50 ms"];
    let head: Vec<&str> = common.iter().copied().chain(own_heads.iter().map(String::as_str)).collect();
    let numeric: Vec<&str> = head[2..].to_vec();
    let rows: Vec<Vec<String>> = section
        .cells
        .iter()
        .map(|c| {
            let mut row = vec![escape(&c.label), escape(c.status.as_str()), c.attempts.len().to_string()];
            let shown = matches!(c.status, CellOutcome::Measured | CellOutcome::Errored);
            match crate::report::runs::shown(&c.attempts, c.runs.as_ref()).filter(|_| shown) {
                Some(a) => {
                    row.push(format!("{} / {}", a.requests, a.error_count()));
                    row.push(fmt_tps(a.output_tps));
                    row.push(fmt_latency_ms(a.ttft_p50_ms));
                    let value =
                        |(n, unit): &(String, String)| crate::report::text::extension::fmt_value(unit, figure(&a, n));
                    row.extend(own.iter().map(value));
                }
                None => {
                    row.push(c.timeout_reason.as_deref().map(escape).unwrap_or_else(|| "—".into()));
                    row.extend(std::iter::repeat_n("—".to_string(), 2 + own.len()));
                }
            }
            row
        })
        .collect();
    let mut out = table(&head, &numeric, &rows);
    for c in section.cells.iter().filter(|c| matches!(c.status, CellOutcome::Measured | CellOutcome::Errored)) {
        let line = c.attempts.last().and_then(|a| crate::report::text::extension::labels_line(&c.label, a));
        if let Some(line) = line {
            out.push_str(&format!("<p>{}</p>", escape(&line)));
        }
        for (name, t) in c.attempts.last().map(|a| &a.tables).into_iter().flatten() {
            out.push_str(&format!("<h4>{}</h4>", escape(&format!("{name} of {}", c.label))));
            out.push_str(&breakdown(t));
        }
    }
    out
}

/// One of an attempt's own breakdowns (a conversation's `turns`): a row per key.
fn breakdown(t: &crate::report::extension::ExtensionTable) -> String {
    let heads: Vec<String> = std::iter::once(t.key.clone()).chain(t.columns.iter().map(|c| c.name.clone())).collect();
    let head: Vec<&str> = heads.iter().map(String::as_str).collect();
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| {
            let values = t.columns.iter().zip(&r.values);
            let cells = values.map(|(c, v)| crate::report::text::extension::fmt_value(&c.unit, *v));
            std::iter::once(r.key.to_string()).chain(cells).collect()
        })
        .collect();
    table(&head, &head, &rows)
}
