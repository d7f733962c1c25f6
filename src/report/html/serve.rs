//! The serve cells as a table (vLLM's figures of each cell's last attempt) and the load levels
//! the knob walked decode attempts through, one row per level.

use super::page::{escape, table};
use crate::report::json::SessionReport;
use crate::report::serve::ServeCellReport;
use crate::report::status::CellOutcome;
use crate::report::text::format::fmt_tps;

/// `median / p99` of a vLLM figure pair, ms with one decimal (`—` when absent).
fn pair(median: Option<f64>, p99: Option<f64>) -> String {
    let one = |v: Option<f64>| v.filter(|x| x.is_finite()).map_or_else(|| "—".to_string(), |x| format!("{x:.1}"));
    format!("{} / {}", one(median), one(p99))
}

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
    let numeric = &head[1..].iter().copied().filter(|h| !matches!(*h, "status" | "rate req/s")).collect::<Vec<_>>();
    let rows: Vec<Vec<String>> = section.cells.iter().map(serve_row).collect();
    let intro = format!(
        "<p class=\"note\">{} prompts per cell, {} output tokens each, burstiness {}; figures as <code>vllm bench serve</code> defines them (completed requests).</p>\n",
        section.num_prompts, section.output_len, section.burstiness
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
    let Some(a) = cell.attempts.last().filter(|_| matches!(cell.status, CellOutcome::Measured | CellOutcome::Errored))
    else {
        let why = cell.timeout_reason.as_deref().map(escape).unwrap_or_else(|| "—".into());
        row.extend([why, "—".into(), "—".into(), "—".into(), "—".into(), "—".into()]);
        return row;
    };
    let m = &a.metrics;
    row.extend([
        format!("{} / {}", m.completed, m.failed),
        fmt_tps(m.output_throughput),
        pair(m.median_ttft_ms, m.p99_ttft_ms),
        pair(m.median_tpot_ms, m.p99_tpot_ms),
        pair(m.median_itl_ms, m.p99_itl_ms),
        pair(m.median_e2el_ms, m.p99_e2el_ms),
    ]);
    row
}

/// The load levels of every decode attempt the knob stepped (`+` / `-`), one row per level;
/// empty when no attempt has levels.
pub(super) fn levels_table(report: &SessionReport) -> String {
    let cells = report.decode.iter().flat_map(|d| &d.cells);
    let mut rows = Vec::new();
    for cell in cells {
        for a in cell.attempts.iter().filter(|a| !a.levels.is_empty()) {
            for l in &a.levels {
                let ttft = l.ttft_ms.map_or_else(|| "—".to_string(), |s| format!("{:.0}", s.p50));
                rows.push(vec![
                    escape(&format!("ctx={} conc={} #{}", cell.ctx_label, cell.conc, a.attempt)),
                    escape(&l.load.label()),
                    escape(&l.action),
                    format!("{:.1}–{:.1}", l.started_s, l.ended_s),
                    fmt_tps(l.tok_s),
                    ttft,
                    l.running_mean.map_or_else(|| "—".to_string(), |r| format!("{r:.1}")),
                    l.requests.to_string(),
                ]);
            }
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    let head = ["attempt", "load", "action", "s", "tok/s", "TTFT p50 ms", "running", "requests"];
    format!("<h3>Load levels</h3>\n{}", table(&head, &["s", "tok/s", "TTFT p50 ms", "running", "requests"], &rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests_shapes::with_serve;

    #[test]
    fn serve_cells_are_one_row_each_with_vllm_figures() {
        let out = serve_table(&with_serve());
        assert!(out.contains("<td>1k</td><td class=\"num\">2</td><td>inf</td><td>measured</td>"), "{out}");
        assert!(out.contains("1 / 1") && out.contains("85.0 / 90.5") && out.contains("7.2 / 8.0"), "{out}");
        assert!(
            out.contains("<td>4</td><td>skipped</td><td class=\"num\">0</td><td class=\"num\">does not fit</td>"),
            "{out}"
        );
        assert_eq!(serve_table(&crate::report::tests_schema::minimal_report()), "");
    }

    #[test]
    fn knob_levels_are_listed_per_attempt() {
        use crate::report::levels::{LevelLoad, LoadLevel};
        let mut report = crate::report::tests_schema::full_report();
        assert_eq!(levels_table(&report), "", "no knob, no table");
        let level = |conc, action: &str, s: f64| LoadLevel {
            load: LevelLoad { conc: Some(conc), rate: None },
            started_s: s,
            ended_s: s + 5.0,
            action: action.into(),
            tok_s: 250.0 * f64::from(conc),
            ttft_ms: None,
            itl_ms: None,
            running_mean: Some(f64::from(conc)),
            waiting_mean: None,
            requests: 12,
        };
        let a = &mut report.decode.as_mut().unwrap().cells[1].attempts[1];
        a.levels = vec![level(8, "planned", 10.0), level(9, "operator +", 15.0)];
        let out = levels_table(&report);
        assert!(out.contains("<td>ctx=16k conc=8 #2</td><td>9</td><td>operator +</td>"), "{out}");
        assert!(out.contains("<td class=\"num\">15.0–20.0</td><td class=\"num\">2250.0</td>"), "{out}");
    }
}
