//! The decode cells as a table: every figure of each cell's last attempt, the attempt count and
//! the servers' error messages (escaped).

use super::page::{escape, table};
use crate::report::json::{DecodeCell, SessionReport};
use crate::report::status::CellOutcome;
use crate::report::text::format::fmt_tps;

/// One row per decode cell, in the report's order; empty without a decode section.
pub(super) fn cell_table(report: &SessionReport) -> String {
    let Some(section) = &report.decode else { return String::new() };
    if section.cells.is_empty() {
        return String::new();
    }
    let head = [
        "ctx",
        "conc",
        "status",
        "attempts",
        "tok/s",
        "per-req tok/s",
        "TTFT p50/p99 ms",
        "ITL p50/p99 ms",
        "running/req",
        "errors",
    ];
    let numeric = ["conc", "attempts", "tok/s", "per-req tok/s", "TTFT p50/p99 ms", "ITL p50/p99 ms", "running/req"];
    let rows: Vec<Vec<String>> = section.cells.iter().map(row).collect();
    format!("<h3>Cells</h3>\n{}", table(&head, &numeric, &rows))
}

/// `a / b` of two optional figures with no decimals.
fn pair(a: Option<f64>, b: Option<f64>) -> String {
    let one = |v: Option<f64>| v.filter(|x| x.is_finite()).map_or_else(|| "—".to_string(), |x| format!("{x:.0}"));
    format!("{} / {}", one(a), one(b))
}

/// The row of one cell (its last attempt's figures; `—` for a cell with no attempt).
fn row(cell: &DecodeCell) -> Vec<String> {
    let mut row = vec![escape(&cell.ctx_label), cell.conc.to_string(), escape(cell.status.as_str())];
    let Some(a) = cell.attempts.last() else {
        row.push("0".into());
        let reason = cell.timeout_reason.as_deref().map(escape).unwrap_or_default();
        row.extend(["—", "—", "—", "—", "—"].map(String::from));
        row.push(reason);
        return row;
    };
    let running = a.running_avg.map_or_else(|| "—".to_string(), |r| format!("{r:.1}"));
    let limit = match (a.capacity_limited, a.capacity_limit) {
        (true, Some(l)) => format!(" * {}", l.as_str()),
        (true, None) => " *".to_string(),
        _ => String::new(),
    };
    let errors: Vec<String> = a
        .errors
        .iter()
        .map(|(kind, n)| match a.error_examples.get(kind) {
            Some(example) => {
                format!("{n} {}: <q title=\"{}\">{}</q>", kind.as_str(), escape(example), escape(&clip(example)))
            }
            None => format!("{n} {}", kind.as_str()),
        })
        .collect();
    let measured = cell.status == CellOutcome::Measured && a.window_s > 0.0;
    row.extend([
        cell.attempts.len().to_string(),
        if measured { fmt_tps(a.aggregate_tps) } else { "—".into() },
        if measured { fmt_tps(a.per_request_tps) } else { "—".into() },
        pair(a.ttft_ms.map(|s| s.p50), a.ttft_ms.map(|s| s.p99)),
        pair(a.itl_ms.map(|s| s.p50), a.itl_ms.map(|s| s.p99)),
        format!("{running}/{}{}", a.requested, escape(&limit)),
        errors.join("<br>"),
    ]);
    row
}

/// `text` cut to about 120 characters (at a character boundary), with `…` when cut.
fn clip(text: &str) -> String {
    match text.char_indices().nth(120) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests_schema::{full_report, minimal_report};

    #[test]
    fn rows_carry_the_last_attempt_and_escaped_server_texts() {
        let mut report = full_report();
        if let Some(d) = report.decode.as_mut() {
            let examples = &mut d.cells[1].attempts[1].error_examples;
            examples.values_mut().for_each(|e| *e = "<html>bad gateway & co</html>".into());
        }
        let out = cell_table(&report);
        assert!(out.contains("<td>16k</td><td class=\"num\">8</td><td>measured</td><td class=\"num\">2</td>"), "{out}");
        assert!(out.contains("564.8") && out.contains("6.9/8 * max_num_seqs"), "{out}");
        let example = "&lt;html&gt;bad gateway &amp; co&lt;/html&gt;";
        assert!(out.contains(&format!("1 stalled: <q title=\"{example}\">{example}</q>")), "{out}");
        assert_eq!(clip(&"é".repeat(130)), format!("{}…", "é".repeat(120)));
        assert!(!out.contains("<html>"), "{out}");
        assert_eq!(cell_table(&minimal_report()), "");
    }
}
