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
            match c.attempts.last().filter(|_| shown) {
                Some(a) => {
                    row.push(format!("{} / {}", a.requests, a.error_count()));
                    row.push(fmt_tps(a.output_tps));
                    row.push(fmt_latency_ms(a.ttft_p50_ms));
                    row.extend(own.iter().map(|(n, _)| figure(a, n).map_or("—".into(), |v| format!("{v:.3}"))));
                }
                None => {
                    row.push(c.timeout_reason.as_deref().map(escape).unwrap_or_else(|| "—".into()));
                    row.extend(std::iter::repeat_n("—".to_string(), 2 + own.len()));
                }
            }
            row
        })
        .collect();
    table(&head, &numeric, &rows)
}
