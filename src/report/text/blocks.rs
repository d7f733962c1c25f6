//! The report as a list of blocks (a heading line, panels, tables, legend paragraphs): built
//! once by the decode and routing renderers, drawn as boxed text here and as GitHub markdown by
//! `report::markdown`, so both formats show the same tables with the same markers.

use super::panel::{PANEL_WIDTH, Panel, wrap_paragraphs};
use super::table::{RenderOptions, Row, Table};

/// One block of a rendered report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// A line of its own at the top (`llm-decode-bench v0.1.0`).
    Heading(String),
    /// A bordered panel: a section title and its paragraphs.
    Panel(Panel),
    /// A titled table.
    Table(Table),
    /// Legend paragraphs, wrapped to the panel width in text.
    Legend(Vec<String>),
    /// An empty line between sections (text only).
    Blank,
}

impl Block {
    /// Legend paragraphs from string slices.
    pub fn legend(paragraphs: &[&str]) -> Self {
        Block::Legend(paragraphs.iter().map(|p| p.to_string()).collect())
    }
}

impl Block {
    /// This block with the control characters of its text escaped (`crate::text_safe`), as
    /// the text and markdown formats draw it: model, replica and route names and labels in a
    /// report may be the server's. Our own dim escapes are added later, by the renderer.
    pub fn escaped(&self) -> Block {
        let one = |t: &String| crate::text_safe::line(t).into_owned();
        let many = |v: &[String]| v.iter().map(one).collect::<Vec<_>>();
        let paragraphs = |v: &[String]| v.iter().map(|p| crate::text_safe::text(p).into_owned()).collect();
        match self {
            Block::Heading(line) => Block::Heading(one(line)),
            Block::Panel(p) => Block::Panel(Panel { title: one(&p.title), paragraphs: paragraphs(&p.paragraphs) }),
            Block::Table(t) => Block::Table(Table {
                title: one(&t.title),
                header: many(&t.header),
                rows: t.rows.iter().map(|r| Row { cells: many(&r.cells), dim: r.dim.as_deref().map(many) }).collect(),
            }),
            Block::Legend(p) => Block::Legend(paragraphs(p)),
            Block::Blank => Block::Blank,
        }
    }
}

/// The text lines of `blocks`, without newlines; server text in them escaped ([`Block::escaped`]).
pub(crate) fn text_lines(blocks: &[Block], opts: RenderOptions) -> Vec<String> {
    let mut out = Vec::new();
    for block in blocks.iter().map(Block::escaped) {
        match &block {
            Block::Heading(line) => out.push(line.clone()),
            Block::Panel(panel) => out.extend(panel.render_lines(PANEL_WIDTH, opts.style)),
            Block::Table(table) => out.extend(table.render_lines(opts)),
            Block::Legend(paragraphs) => {
                let refs: Vec<&str> = paragraphs.iter().map(String::as_str).collect();
                out.extend(wrap_paragraphs(&refs));
            }
            Block::Blank => out.push(String::new()),
        }
    }
    out
}

/// The text of `blocks`: their lines joined by `\n`, without a trailing newline.
pub(crate) fn render_text_blocks(blocks: &[Block], opts: RenderOptions) -> String {
    text_lines(blocks, opts).join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::text::Row;

    #[test]
    fn each_block_draws_as_its_renderer_does() {
        let panel = Panel::new("T", &["hello"]);
        let mut table = Table::new("Demo", vec!["k".into(), "v".into()]);
        table.rows.push(Row::new(vec!["a".into(), "1".into()]));
        let blocks = vec![
            Block::Heading("top".into()),
            Block::Panel(panel.clone()),
            Block::Table(table.clone()),
            Block::legend(&["legend"]),
            Block::Blank,
        ];
        let opts = RenderOptions::default();
        let mut want = vec!["top".to_string()];
        want.extend(panel.render_lines(PANEL_WIDTH, opts.style));
        want.extend(table.render_lines(opts));
        want.extend(["legend".to_string(), String::new()]);
        assert_eq!(text_lines(&blocks, opts), want);
        assert_eq!(render_text_blocks(&blocks, opts), want.join("\n"));
        assert_eq!(render_text_blocks(&[], opts), "");
    }

    #[test]
    fn server_text_is_escaped_and_our_dim_escapes_stay() {
        let evil = "pod\u{1b}]0;x\u{7}\u{9b}2J";
        let mut table = Table::new(evil, vec!["replica".into(), "tok/s".into()]);
        table.rows.push(Row::with_dim(vec![evil.into(), "1".into()], vec![String::new(), evil.into()]));
        let blocks = vec![Block::Heading(evil.into()), Block::Panel(Panel::new(evil, &[evil])), Block::Table(table)];
        let opts = RenderOptions { dim_ansi: true, ..RenderOptions::default() };
        let text = render_text_blocks(&blocks, opts);
        let ours = text.replace("\x1b[2m", "").replace("\x1b[0m", "");
        assert!(!ours.chars().any(|c| c != '\n' && crate::text_safe::is_unsafe(c)), "{}", text.escape_debug());
        assert!(text.contains("pod\\x1b]0;x\\x07\\u{9b}2J") && text.contains("\x1b[2m"), "{text}");
        assert!(blocks.iter().map(Block::escaped).all(|b| b.escaped() == b), "escaping twice changes nothing");
    }
}
