//! The serve cells as a table: vLLM's figures of each cell's last attempt.

use super::page::{escape, pair, table};
use crate::report::json::SessionReport;
use crate::report::serve::ServeCellReport;
use crate::report::status::CellOutcome;
use crate::report::text::format::fmt_tps;

/// One row per serve cell, in plan order; empty without a serve section.
pub(super) fn serve_table(report: &SessionReport) -> String {
    let Some(section) = &report.serve else { return String::new() };
    if section.cells.is_empty() {
        return String::new();
    }
    let head = [
        "input len",
        "max conc",
        "rate req/s",
        "status",
        "attempts",
        "completed / failed",
        "output tok/s",
        "TTFT median/p99 ms",
        "TPOT median/p99 ms",
        "ITL median/p99 ms",
        "E2EL median/p99 ms",
    ];
    // Every column but the labels: input len, rate and status.
    let numeric = &[&head[1..2], &head[4..]].concat();
    let rows: Vec<Vec<String>> = section.cells.iter().map(serve_row).collect();
    let spread = match section.random_range_ratio {
        r if r > 0.0 => {
            format!(" (input and output lengths uniform within ±{:.0}%: --random-range-ratio {r})", r * 100.0)
        }
        _ => String::new(),
    };
    let workload = match section.workload_line() {
        Some(line) => escape(&line),
        None => format!("{} prompts per cell, {} output tokens each{spread}", section.num_prompts, section.output_len),
    };
    let intro = format!(
        "<p class=\"note\">{workload}, burstiness {}; figures as <code>vllm bench serve</code> defines them (completed requests).</p>\n",
        section.burstiness
    );
    format!("{intro}{}", table(&head, numeric, &rows))
}

fn serve_row(cell: &ServeCellReport) -> Vec<String> {
    let mut row = vec![
        escape(&cell.ctx_label),
        cell.max_concurrency.to_string(),
        escape(&cell.request_rate),
        escape(cell.status.as_str()),
        cell.attempts.len().to_string(),
    ];
    let shown = crate::report::runs::shown(&cell.attempts, cell.runs.as_ref());
    let Some(a) = shown.filter(|_| matches!(cell.status, CellOutcome::Measured | CellOutcome::Errored)) else {
        let why = cell.timeout_reason.as_deref().map(escape).unwrap_or_else(|| "—".into());
        row.extend([why, "—".into(), "—".into(), "—".into(), "—".into(), "—".into()]);
        return row;
    };
    if let Some(p) = a.prefix_cache.filter(|p| p.warm) {
        row[3] = format!("{}, {}", row[3], escape(&p.warm_note()));
    }
    if let Some(note) = a.schedule_lag.and_then(|l| l.behind_note()) {
        row[3] = format!("{}, {}", row[3], escape(&note));
    }
    let m = &a.metrics;
    row.extend([
        format!("{} / {}", m.completed, m.failed),
        fmt_tps(m.output_throughput),
        pair(m.median_ttft_ms, m.p99_ttft_ms, 1),
        pair(m.median_tpot_ms, m.p99_tpot_ms, 1),
        pair(m.median_itl_ms, m.p99_itl_ms, 1),
        pair(m.median_e2el_ms, m.p99_e2el_ms, 1),
    ]);
    row
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests_shapes::with_serve;

    #[test]
    fn serve_cells_are_one_row_each_with_vllm_figures() {
        let out = serve_table(&with_serve());
        let warm = "measured, warm cache: 98.0% of prompt tokens came from the prefix cache";
        assert!(out.contains(&format!("<td>1k</td><td class=\"num\">2</td><td>inf</td><td>{warm}")), "{out}");
        assert!(out.contains("1 / 1") && out.contains("85.0 / 90.5") && out.contains("7.2 / 8.0"), "{out}");
        assert!(
            out.contains("<td>4</td><td>skipped</td><td class=\"num\">0</td><td class=\"num\">does not fit</td>"),
            "{out}"
        );
        assert_eq!(serve_table(&crate::report::tests_schema::minimal_report()), "");
    }
}
