//! Generic boxed table renderer (rounded Unicode or ASCII) used by the text reports.

use super::width::{display_width, pad_left, pad_right};
use super::wrap::wrap;

/// Which characters draw table and panel borders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BoxStyle {
    /// Rounded Unicode box drawing: `╭ ╮ ╰ ╯ │ ─ ┬ ┼ ┴ ├ ┤`.
    #[default]
    Unicode,
    /// Plain ASCII: `+` for corners and joints, `-` and `|` for lines.
    Ascii,
}

/// The glyph set of one [`BoxStyle`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Glyphs {
    pub top_left: char,
    pub top_right: char,
    pub bottom_left: char,
    pub bottom_right: char,
    pub horizontal: char,
    pub vertical: char,
    pub top_join: char,
    pub cross: char,
    pub bottom_join: char,
    pub left_join: char,
    pub right_join: char,
}

impl BoxStyle {
    /// The glyphs used to draw this style.
    pub(crate) fn glyphs(self) -> Glyphs {
        match self {
            BoxStyle::Unicode => Glyphs {
                top_left: '╭',
                top_right: '╮',
                bottom_left: '╰',
                bottom_right: '╯',
                horizontal: '─',
                vertical: '│',
                top_join: '┬',
                cross: '┼',
                bottom_join: '┴',
                left_join: '├',
                right_join: '┤',
            },
            BoxStyle::Ascii => Glyphs {
                top_left: '+',
                top_right: '+',
                bottom_left: '+',
                bottom_right: '+',
                horizontal: '-',
                vertical: '|',
                top_join: '+',
                cross: '+',
                bottom_join: '+',
                left_join: '+',
                right_join: '+',
            },
        }
    }
}

/// How to draw a report: border style and whether dim lines get ANSI escapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RenderOptions {
    /// Border characters for tables and panels.
    pub style: BoxStyle,
    /// Wrap dim detail lines in `ESC[2m` .. `ESC[0m`; only for colour terminals.
    pub dim_ansi: bool,
}

/// One table row: a main line of cells and an optional dim detail line below it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    /// Cells of the main line, one per column (missing trailing cells render empty).
    pub cells: Vec<String>,
    /// Cells of the dim detail line, aligned with `cells` (first one usually empty).
    pub dim: Option<Vec<String>>,
}

impl Row {
    /// A row with a main line only.
    pub fn new(cells: Vec<String>) -> Self {
        Row { cells, dim: None }
    }

    /// A row with a main line and a dim detail line.
    pub fn with_dim(cells: Vec<String>, dim: Vec<String>) -> Self {
        Row { cells, dim: Some(dim) }
    }
}

/// A titled table: first column left-aligned, the others right-aligned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    /// Title printed above the table, padded with spaces to the table width.
    pub title: String,
    /// Header cells; the header is separated from the body by a rule.
    pub header: Vec<String>,
    /// Body rows, printed without separators between them.
    pub rows: Vec<Row>,
}

impl Table {
    /// An empty table with a title and a header.
    pub fn new(title: impl Into<String>, header: Vec<String>) -> Self {
        Table { title: title.into(), header, rows: Vec::new() }
    }

    /// Number of columns: the widest of the header and every row line.
    pub fn column_count(&self) -> usize {
        let body = self.rows.iter().map(|r| {
            let dim = r.dim.as_ref().map_or(0, Vec::len);
            r.cells.len().max(dim)
        });
        body.fold(self.header.len(), usize::max)
    }

    /// Display width of each column's content (widest cell including the header).
    pub fn column_widths(&self) -> Vec<usize> {
        let mut widths = vec![0; self.column_count()];
        let mut measure = |cells: &[String]| {
            for (w, cell) in widths.iter_mut().zip(cells) {
                *w = (*w).max(display_width(cell));
            }
        };
        measure(&self.header);
        for row in &self.rows {
            measure(&row.cells);
            if let Some(dim) = &row.dim {
                measure(dim);
            }
        }
        widths
    }

    /// Total display width of the drawn table in columns (0 when it has no columns).
    pub fn width(&self) -> usize {
        let widths = self.column_widths();
        if widths.is_empty() {
            return 0;
        }
        widths.iter().map(|w| w + 3).sum::<usize>() + 1
    }

    /// Render the title line(s) and the table as lines without newlines.
    pub fn render_lines(&self, opts: RenderOptions) -> Vec<String> {
        let widths = self.column_widths();
        if widths.is_empty() {
            return Vec::new();
        }
        let g = opts.style.glyphs();
        let mut out = self.title_lines(self.width());
        out.push(rule(&widths, g.top_left, g.top_join, g.top_right, g.horizontal));
        out.push(cells_line(&self.header, &widths, g.vertical, None));
        out.push(rule(&widths, g.left_join, g.cross, g.right_join, g.horizontal));
        for row in &self.rows {
            out.push(cells_line(&row.cells, &widths, g.vertical, None));
            if let Some(dim) = &row.dim {
                let esc = opts.dim_ansi.then_some(("\x1b[2m", "\x1b[0m"));
                out.push(cells_line(dim, &widths, g.vertical, esc));
            }
        }
        let bottom = (g.bottom_left, g.bottom_join, g.bottom_right);
        out.push(rule(&widths, bottom.0, bottom.1, bottom.2, g.horizontal));
        out
    }

    /// Render the title and table joined with `\n` (no trailing newline).
    pub fn render(&self, opts: RenderOptions) -> String {
        self.render_lines(opts).join("\n")
    }

    /// The title wrapped to the table width, each line padded to that width.
    fn title_lines(&self, width: usize) -> Vec<String> {
        if self.title.is_empty() {
            return Vec::new();
        }
        wrap(&self.title, width).iter().map(|line| pad_right(line, width)).collect()
    }
}

/// A horizontal rule such as `╭───┬───╮` for the given column content widths.
fn rule(widths: &[usize], left: char, join: char, right: char, line: char) -> String {
    let mut s = String::new();
    s.push(left);
    for (i, w) in widths.iter().enumerate() {
        if i > 0 {
            s.push(join);
        }
        s.extend(std::iter::repeat_n(line, w + 2));
    }
    s.push(right);
    s
}

/// One line of cells; `esc` wraps each non-empty cell's text (alignment ignores it).
fn cells_line(cells: &[String], widths: &[usize], vertical: char, esc: Option<(&str, &str)>) -> String {
    let mut s = String::new();
    s.push(vertical);
    for (i, w) in widths.iter().enumerate() {
        let raw = cells.get(i).map_or("", String::as_str);
        let text = match esc {
            Some((open, close)) if !raw.is_empty() => format!("{open}{raw}{close}"),
            _ => raw.to_string(),
        };
        let padded = if i == 0 { pad_right(&text, *w) } else { pad_left(&text, *w) };
        s.push(' ');
        s.push_str(&padded);
        s.push(' ');
        s.push(vertical);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut t = Table::new("Demo", vec!["k".into(), "value".into()]);
        t.rows.push(Row::with_dim(vec!["a".into(), "1.0".into()], vec![String::new(), "7/8".into()]));
        t.rows.push(Row::new(vec!["bb".into(), "∅".into()]));
        t
    }

    #[test]
    fn unicode_layout() {
        let out = sample().render(RenderOptions::default());
        let expected = "Demo          \n\
                        ╭────┬───────╮\n\
                        │ k  │ value │\n\
                        ├────┼───────┤\n\
                        │ a  │   1.0 │\n\
                        │    │   7/8 │\n\
                        │ bb │     ∅ │\n\
                        ╰────┴───────╯";
        assert_eq!(out, expected);
    }

    #[test]
    fn ascii_layout() {
        let opts = RenderOptions { style: BoxStyle::Ascii, dim_ansi: false };
        let lines = sample().render_lines(opts);
        assert_eq!(lines[1], "+----+-------+");
        assert_eq!(lines[2], "| k  | value |");
        assert_eq!(lines[3], "+----+-------+");
        assert_eq!(lines[6], "| bb |     ∅ |");
    }

    #[test]
    fn dim_ansi_keeps_alignment() {
        let opts = RenderOptions { style: BoxStyle::Unicode, dim_ansi: true };
        let lines = sample().render_lines(opts);
        assert_eq!(lines[5], "│    │   \x1b[2m7/8\x1b[0m │");
        assert_eq!(display_width(&lines[5]), sample().width());
    }

    #[test]
    fn ragged_rows_and_empty_table() {
        let mut t = Table::new("", vec!["x".into()]);
        t.rows.push(Row::new(vec!["1".into(), "22".into()]));
        t.rows.push(Row::new(Vec::new()));
        let lines = t.render_lines(RenderOptions::default());
        assert_eq!(lines[0], "╭───┬────╮");
        assert_eq!(lines[4], "│   │    │");
        assert!(Table::default().render_lines(RenderOptions::default()).is_empty());
    }

    #[test]
    fn long_title_wraps_to_table_width() {
        let mut t = Table::new("a long title here", vec!["abcdefgh".into()]);
        t.rows.push(Row::new(vec!["x".into()]));
        let lines = t.render_lines(RenderOptions::default());
        assert_eq!(lines[0], "a long title");
        assert_eq!(lines[1], "here        ");
        assert!(lines.iter().all(|l| display_width(l) == 12));
    }
}
