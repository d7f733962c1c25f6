//! Tests of the markdown format: the tables of the text format as GitHub tables, every shape.

use super::*;
use crate::report::tests_example::full_report;
use crate::report::tests_shapes::{interrupted, shapes, with_burst};

/// The lines of `md` that belong to tables.
fn table_lines(md: &str) -> Vec<&str> {
    md.lines().filter(|l| l.starts_with('|')).collect()
}

/// Column separators of a table line (a `\|` is a cell's text, not a separator).
fn separators(line: &str) -> usize {
    line.replace("\\|", "").matches('|').count()
}

#[test]
fn the_full_report_shows_its_tables_markers_and_legends() {
    let md = render(&full_report());
    for want in [
        "# llm-decode-bench v0.1.0\n",
        "## Phase 2\n\n**Sustained Decode**\n\nSteady-state decode throughput",
        "### Aggregate tok/s  + TTFT/TPOT\n\n| ctx \\\\ conc | 4 | 8 |\n| :--- | ---: | ---: |\n",
        "| 16k | 0.0 (2e) | 564.8 (2e) (7/8)\\*seq!<br>722/20 |\n",
        "Aggregate source(s): chunk_count, openai_continuous_usage\n",
        "(X/Y) = avg running / requested concurrency from Prometheus; \\*seq = held back",
        "### Per-Request tok/s\n",
        "### Client request latency: p50 / p90 ms\n",
        "## Phase 3\n\n**Burst / E2E Decode**\n",
        "### Burst output tok/s  + E2E p50/p90 ms\n",
        "| 16k | 307.2 (1e)<br>3.8k/6.2k |\n",
        "## Primary Summary\n",
        "## Prefix-Cache Routing\n",
        "### Scenario hot90\n\n| route | good/req | TTFT p50/p99 ms | split | hit | tok/s |\n",
        "| prefix-cache | 61/96 | 2.1k/12.0k | L20-A 69 · L20-B 27 | 0.938 | 180.5 |\n",
    ] {
        assert!(md.contains(want), "no {want:?} in\n{md}");
    }
    // The footnote of failed requests ends the page: each cell's kinds with their reasons.
    let footnote = "routing r1-hot90-prefix-cache: overloaded 1: \"HTTP 503: the engine is overloaded\"\n";
    assert!(md.contains("(Ne) = N failed requests") && md.ends_with(footnote), "{md}");
    assert!(!md.contains('\x1b') && !md.contains('╭') && !md.contains("\n\n\n"), "{md}");
}

#[test]
fn skipped_and_not_run_cells_keep_their_markers_and_legends() {
    let md = render(&with_burst());
    assert!(md.contains("| 16k | 307.2 (1e)<br>3.8k/6.2k | ∅ |"), "{md}");
    assert!(md.contains("\n∅ = skipped/hidden because the cell does not fit in KV cache"), "{md}");
    let md = render(&interrupted());
    assert!(md.contains("| 16k | 564.8 (2e) (7/8)\\*seq!<br>722/20 | · | · |"), "{md}");
    assert!(md.contains("\n· = not run: skipped by the operator"), "{md}");
    assert!(md.contains("| random | 61/96 |"), "{md}");
}

#[test]
fn every_shape_is_well_formed_markdown() {
    for (name, report) in shapes() {
        let md = render(&report);
        let blocks = report_blocks(&report);
        let tables = blocks.iter().filter(|b| matches!(b, Block::Table(_))).count();
        assert_eq!(md.matches("\n| :--- |").count(), tables, "{name}: one alignment row per table\n{md}");
        for table in md.split("\n\n").filter(|p| p.starts_with('|')) {
            let lines: Vec<&str> = table.lines().collect();
            let columns = separators(lines[0]);
            assert!(lines.iter().all(|l| separators(l) == columns), "{name}: ragged table\n{table}");
            assert!(lines[1].starts_with("| :--- |"), "{name}: no alignment row\n{table}");
        }
        assert!(table_lines(&md).iter().all(|l| l.ends_with(" |")), "{name}\n{md}");
        assert_eq!(md.is_empty(), blocks.is_empty(), "{name}");
    }
}

#[test]
fn every_cell_of_the_text_tables_is_in_the_markdown() {
    for (name, report) in shapes() {
        let md = render(&report);
        for block in report_blocks(&report) {
            let Block::Table(t) = block else { continue };
            for row in &t.rows {
                let line = row_line(&row.cells.iter().map(|c| cell(c)).collect::<Vec<_>>());
                let first = line.split(" | ").next().unwrap_or_default().to_string();
                assert!(md.contains(&first), "{name}: no row {first:?} in\n{md}");
                for c in row.cells.iter().chain(row.dim.iter().flatten()) {
                    assert!(md.contains(&cell(c)), "{name}: no cell {c:?} in\n{md}");
                }
            }
        }
    }
}

#[test]
fn text_is_escaped_where_markdown_would_read_markup() {
    assert_eq!(escape("a|b"), "a\\|b");
    assert_eq!(escape("(7/8)*"), "(7/8)\\*");
    assert_eq!(escape("ctx \\ conc"), "ctx \\\\ conc");
    assert_eq!(escape("chunk_count"), "chunk_count", "inside a word");
    assert_eq!(escape("_x_ <b> [l](u) `c` ~~s~~ &amp;"), "\\_x\\_ \\<b> \\[l\\](u) \\`c\\` \\~\\~s\\~\\~ \\&amp;");
    assert_eq!(inline("- item"), "\\- item");
    assert_eq!(inline("# not a heading"), "\\# not a heading");
    assert_eq!(inline("12. not a list"), "12\\. not a list");
    assert_eq!(inline("    not code"), "not code");
    assert_eq!(inline("∅ = skipped"), "∅ = skipped");
    assert_eq!(cell("two\nlines"), "two lines");
}

#[test]
fn snapshot_of_the_full_report() {
    insta::assert_snapshot!("markdown_full_report", render(&full_report()));
}

#[test]
fn server_text_in_the_tables_is_escaped_in_markdown_and_text() {
    let mut report = full_report();
    let evil = "pod\u{1b}[2J\u{9b}\u{202e}";
    for phase in &mut report.phases {
        if let Some((_, record)) = phase.replicas.pop_first() {
            phase.replicas.insert(evil.into(), record);
        }
    }
    let text = crate::report::tables::render_text(&report, false, false);
    // Markdown escapes the backslashes and the bracket of the escapes once more, as its own markup.
    let shown = [
        ("markdown", render(&report), "pod\\\\x1b\\[2J\\\\u{9b}\\\\u{202e}"),
        ("text", text, "pod\\x1b[2J\\u{9b}\\u{202e}"),
    ];
    for (what, out, escaped) in shown {
        assert!(!out.chars().any(|c| c != '\n' && crate::text_safe::is_unsafe(c)), "{what}: {}", out.escape_debug());
        assert!(out.contains(escaped), "{what} shows the escapes:\n{out}");
    }
}
