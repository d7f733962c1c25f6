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
    /// Widest line a table may draw, columns (None: as wide as its cells): a wider table is
    /// drawn as several, each with the first column and as many others as fit.
    pub max_width: Option<usize>,
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

    /// Render the title line(s) and the table as lines without newlines; a table wider than
    /// `opts.max_width` as consecutive tables of its first column and the columns that fit,
    /// the later ones titled `(continued)`.
    pub fn render_lines(&self, opts: RenderOptions) -> Vec<String> {
        let parts = self.column_groups(opts.max_width);
        if parts.len() <= 1 {
            return self.render_whole(opts);
        }
        let mut out = Vec::new();
        for (i, cols) in parts.iter().enumerate() {
            let pick = |cells: &[String]| cols.iter().map(|c| cells.get(*c).cloned().unwrap_or_default()).collect();
            let part = Table {
                title: if i == 0 { self.title.clone() } else { format!("{} (continued)", self.title) },
                header: pick(&self.header),
                rows: self
                    .rows
                    .iter()
                    .map(|r| Row { cells: pick(&r.cells), dim: r.dim.as_deref().map(pick) })
                    .collect(),
            };
            out.extend(part.render_whole(opts));
        }
        out
    }

    /// The column indices of each part when the table must fit in `max` columns: column 0,
    /// then the next columns while they fit (at least one per part); one part when it fits.
    fn column_groups(&self, max: Option<usize>) -> Vec<Vec<usize>> {
        let widths = self.column_widths();
        let all: Vec<usize> = (0..widths.len()).collect();
        let Some(max) = max.filter(|m| self.width() > *m && widths.len() > 2) else { return vec![all] };
        let mut parts: Vec<Vec<usize>> = Vec::new();
        let mut part = vec![0];
        let mut used = widths[0] + 4;
        for (c, w) in widths.iter().enumerate().skip(1) {
            if part.len() > 1 && used + w + 3 > max {
                parts.push(std::mem::replace(&mut part, vec![0]));
                used = widths[0] + 4;
            }
            part.push(c);
            used += w + 3;
        }
        parts.push(part);
        parts
    }

    fn render_whole(&self, opts: RenderOptions) -> Vec<String> {
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
        let opts = RenderOptions { style: BoxStyle::Ascii, dim_ansi: false, max_width: None };
        let lines = sample().render_lines(opts);
        assert_eq!(lines[1], "+----+-------+");
        assert_eq!(lines[2], "| k  | value |");
        assert_eq!(lines[3], "+----+-------+");
        assert_eq!(lines[6], "| bb |     ∅ |");
    }

    #[test]
    fn dim_ansi_keeps_alignment() {
        let opts = RenderOptions { style: BoxStyle::Unicode, dim_ansi: true, max_width: None };
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
    fn a_table_wider_than_the_limit_is_split_keeping_its_first_column() {
        let header: Vec<String> =
            std::iter::once("ctx".to_string()).chain((1..=6).map(|i| format!("conc {i}"))).collect();
        let mut t = Table::new("Wide", header);
        let cells: Vec<String> =
            std::iter::once("128k".to_string()).chain((1..=6).map(|i| format!("{i}234.5 (7/8)*kv"))).collect();
        t.rows.push(Row::with_dim(cells, vec![String::new(); 7]));
        assert!(t.width() > 80);
        let opts = RenderOptions { max_width: Some(80), ..RenderOptions::default() };
        let lines = t.render_lines(opts);
        assert!(lines.iter().all(|l| display_width(l) <= 80), "{}", lines.join("\n"));
        assert!(lines.iter().any(|l| l.starts_with("Wide (continued)")));
        let shown: usize = lines.iter().filter(|l| l.contains("(7/8)*kv")).map(|l| l.matches("(7/8)*kv").count()).sum();
        assert_eq!(shown, 6, "every column is drawn once");
        assert_eq!(lines.iter().filter(|l| l.contains("128k")).count(), 2, "the first column in each part");
        let whole = t.render_lines(RenderOptions::default());
        assert!(!whole.iter().any(|l| l.contains("(continued)")) && whole.iter().any(|l| display_width(l) > 80));
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
