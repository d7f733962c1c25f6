//! The `markdown` report format: the tables of the text format (`report::tables::report_blocks`)
//! as GitHub tables, for pull requests. Each table keeps its title (as a heading), its header
//! and an alignment row (first column left, the others right, as the text draws them); a dim
//! detail line goes under its cell's figure after a `<br>`. The markers (`*`, `∅`, `(Ne)`,
//! `·`) and the legends stay, the legends as plain paragraphs.

use super::json::SessionReport;
use super::tables::report_blocks;
use super::text::{Block, Panel, Table};

/// Renders the report's tables as GitHub markdown, ending in a newline; an empty string when
/// the report has no tables (no decode section and no routing phase). Server text in them has
/// its control characters escaped ([`Block::escaped`]).
pub(crate) fn render(report: &SessionReport) -> String {
    let parts: Vec<String> = report_blocks(report).iter().map(Block::escaped).filter_map(|b| block(&b)).collect();
    match parts.is_empty() {
        true => String::new(),
        false => format!("{}\n", parts.join("\n\n")),
    }
}

/// One block as markdown (`None` for the blank lines only the text format needs).
fn block(b: &Block) -> Option<String> {
    match b {
        Block::Heading(line) => Some(format!("# {}", inline(line))),
        Block::Panel(p) => Some(panel(p)),
        Block::Table(t) => Some(table(t)),
        Block::Legend(paragraphs) => Some(paragraphs.iter().map(|p| inline(p)).collect::<Vec<_>>().join("\n\n")),
        Block::Blank => None,
    }
}

/// A panel: its title as a section heading; with several paragraphs the first (the panel's
/// subject) in bold.
fn panel(p: &Panel) -> String {
    let mut parts = vec![format!("## {}", inline(&p.title))];
    for (i, paragraph) in p.paragraphs.iter().enumerate() {
        match i == 0 && p.paragraphs.len() > 1 {
            true => parts.push(format!("**{}**", inline(paragraph))),
            false => parts.push(inline(paragraph)),
        }
    }
    parts.join("\n\n")
}

/// A GitHub table under its title.
fn table(t: &Table) -> String {
    let columns = t.column_count();
    let mut lines = Vec::new();
    if !t.title.is_empty() {
        lines.push(format!("### {}", inline(&t.title)));
        lines.push(String::new());
    }
    let header: Vec<String> = (0..columns).map(|i| t.header.get(i).map_or(String::new(), |c| cell(c))).collect();
    lines.push(row_line(&header));
    let align: Vec<String> = (0..columns).map(|i| if i == 0 { ":---" } else { "---:" }.to_string()).collect();
    lines.push(row_line(&align));
    for row in &t.rows {
        let cells: Vec<String> = (0..columns)
            .map(|i| {
                let main = row.cells.get(i).map_or(String::new(), |c| cell(c));
                let dim = row.dim.as_ref().and_then(|d| d.get(i)).filter(|d| !d.is_empty()).map(|d| cell(d));
                match (main.is_empty(), dim) {
                    (_, None) => main,
                    (true, Some(dim)) => dim,
                    (false, Some(dim)) => format!("{main}<br>{dim}"),
                }
            })
            .collect();
        lines.push(row_line(&cells));
    }
    lines.join("\n")
}

/// `| a | b |`.
fn row_line(cells: &[String]) -> String {
    format!("| {} |", cells.join(" | "))
}

/// A table cell's text: escaped, on one line.
fn cell(text: &str) -> String {
    escape(&text.replace(['\n', '\r'], " "))
}

/// A paragraph or heading's text: escaped, and a leading character that would start a list,
/// a heading, a quote or a rule escaped as well.
fn inline(text: &str) -> String {
    let escaped = escape(text);
    let lead = escaped.trim_start();
    let digits = lead.chars().take_while(char::is_ascii_digit).count();
    let list_number = digits > 0 && lead[digits..].starts_with(['.', ')']);
    match lead.chars().next() {
        Some('#' | '-' | '+' | '=' | '>') => format!("\\{lead}"),
        Some(_) if list_number => format!("{}\\{}", &lead[..digits], &lead[digits..]),
        _ => lead.to_string(),
    }
}

/// Backslash-escapes what markdown would read as markup: `\ ` * | < [ ] ~ &` always, `_`
/// at a word boundary (inside a word, as in `chunk_count`, GitHub reads it literally).
fn escape(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    for (i, &c) in chars.iter().enumerate() {
        let word = |j: Option<usize>| j.and_then(|j| chars.get(j)).is_some_and(|c| c.is_alphanumeric());
        let boundary = !(word(i.checked_sub(1)) && word(Some(i + 1)));
        if matches!(c, '\\' | '`' | '*' | '|' | '<' | '[' | ']' | '~' | '&') || (c == '_' && boundary) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
#[path = "markdown_tests.rs"]
mod tests;
