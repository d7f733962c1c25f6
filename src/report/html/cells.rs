//! The decode cells as a table (every figure of each cell's last attempt, the attempt count and
//! the servers' error messages, escaped) and the load levels the knob walked attempts through.

use super::page::{escape, pair, table};
use crate::report::json::{DecodeCell, SessionReport};
use crate::report::status::CellOutcome;
use crate::report::text::format::fmt_tps;

/// One row per decode cell, in the report's order; empty without a decode section.
pub(super) fn cell_table(report: &SessionReport) -> String {
    let Some(section) = &report.decode else { return String::new() };
    if section.cells.is_empty() {
        return String::new();
    }
    let mut head = vec![
        "ctx",
        "conc",
        "status",
        "attempts",
        "tok/s",
        "per-req tok/s",
        "TTFT p50/p99 ms",
        "TPOT p50/p99 ms",
        "running/req",
        "errors",
    ];
    let numeric = ["conc", "attempts", "tok/s", "per-req tok/s", "TTFT p50/p99 ms", "TPOT p50/p99 ms", "running/req"];
    let mut rows: Vec<Vec<String>> = section.cells.iter().map(row).collect();
    // Goodput only where the session judged one (a `--goodput` SLO), before the errors.
    if section.cells.iter().any(|c| c.attempts.last().is_some_and(|a| a.goodput.is_some())) {
        head.insert(9, "goodput");
        for (r, cell) in rows.iter_mut().zip(&section.cells) {
            r.insert(9, goodput(cell));
        }
    }
    format!("<h3>Cells</h3>\n{}", table(&head, &numeric, &rows))
}

/// `7/8 good (88%), 0.35/s` for a measured cell's last attempt; `—` otherwise, as the other
/// figures of a cell whose window did not run.
fn goodput(cell: &DecodeCell) -> String {
    let measured = cell.status == CellOutcome::Measured;
    let shown = crate::report::runs::shown(&cell.attempts, cell.runs.as_ref());
    match shown.as_ref().and_then(|a| a.goodput.as_ref()).filter(|_| measured) {
        Some(g) => escape(&format!("{}, {:.2}/s", g.describe(), g.rps)),
        None => "—".into(),
    }
}

/// The row of one cell (its last attempt's figures, with repetitions the mean of its runs; `—`
/// for a cell with no attempt).
fn row(cell: &DecodeCell) -> Vec<String> {
    let mut row = vec![escape(&cell.ctx_label), cell.conc.to_string(), escape(cell.status.as_str())];
    let Some(a) = crate::report::runs::shown(&cell.attempts, cell.runs.as_ref()) else {
        row.push("0".into());
        let reason = cell.timeout_reason.as_deref().map(escape).unwrap_or_default();
        row.extend(["—", "—", "—", "—", "—"].map(String::from));
        row.push(reason);
        return row;
    };
    if let Some(p) = a.prefix_cache.filter(|p| p.warm) {
        row[2] = format!("{}, {}", row[2], escape(&p.warm_note()));
    }
    let running = a.running_avg.map_or_else(|| "—".to_string(), |r| format!("{r:.1}"));
    // The matrices' mark (`*kv`, `*seq`, `*?`, `!`), as the text tables print it.
    let mark = crate::report::text::format::LimitMark::of(&a);
    let limit = if mark.any() { format!(" {}", mark.text()) } else { String::new() };
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
        // A stopped or errored attempt's partial figures are not the cell's: `—`, as the matrix's `·`.
        if measured { fmt_tps(a.aggregate_tps) } else { "—".into() },
        if measured { fmt_tps(a.per_request_tps) } else { "—".into() },
        if measured { pair(a.ttft_ms.map(|s| s.p50), a.ttft_ms.map(|s| s.p99), 0) } else { "—".into() },
        // One decimal: a TPOT below 1 ms is not 0.
        if measured { pair(a.itl_ms.map(|s| s.p50), a.itl_ms.map(|s| s.p99), 1) } else { "—".into() },
        // A shard's server-wide running count reads against the cell's conc over every shard.
        match measured {
            true => format!("{running}/{}{}", a.running_requested(), escape(&limit)),
            false => format!("—/{}", a.running_requested()),
        },
        errors.join("<br>"),
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
        assert!(out.contains("564.8") && out.contains("6.9/8 *seq!"), "{out}");
        let example = "&lt;html&gt;bad gateway &amp; co&lt;/html&gt;";
        assert!(out.contains(&format!("1 stalled: <q title=\"{example}\">{example}</q>")), "{out}");
        assert_eq!(clip(&"é".repeat(130)), format!("{}…", "é".repeat(120)));
        assert!(!out.contains("<html>"), "{out}");
        assert_eq!(cell_table(&minimal_report()), "");
        let a = report.decode.as_mut().unwrap().cells[1].attempts.last_mut().unwrap();
        a.prefix_cache = crate::report::prefix_cache::PrefixCacheCheck::judge(900.0, 1000.0, Some(0.01));
        let warm = "<td>measured, warm cache: 90.0% of prompt tokens came from the prefix cache, the workload shares at most 1.0%</td>";
        assert!(cell_table(&report).contains(warm), "a warm cell says so in its status");
    }

    /// A `--goodput` session shows the decode goodput per cell; a session without one has no
    /// goodput column (issue 23).
    #[test]
    fn goodput_shows_where_the_session_judged_one() {
        let mut report = full_report();
        let cells = &mut report.decode.as_mut().unwrap().cells;
        cells.iter_mut().flat_map(|c| c.attempts.iter_mut()).for_each(|a| a.goodput = None);
        assert!(!cell_table(&report).contains("goodput"), "no SLO, no column");
        let cells = &mut report.decode.as_mut().unwrap().cells;
        cells[1].attempts.last_mut().unwrap().goodput = Some(crate::report::goodput::Goodput::new(7, 8, 20.0));
        let out = cell_table(&report);
        assert!(out.contains("<th>goodput</th><th>errors</th>"), "{out}");
        assert!(out.contains("<td>7/8 good (88%), 0.35/s</td>"), "{out}");
        assert!(out.contains("<td>—</td>"), "a cell without goodput reads —: {out}");
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
