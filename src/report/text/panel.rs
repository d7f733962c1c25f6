//! Rounded 80-column panels with a centred title, and legend paragraphs wrapped to their width.

use super::table::BoxStyle;
use super::width::{display_width, pad_right};
use super::wrap::fold;
pub(crate) use super::wrap::wrap;

/// Width of the report's panels and legend paragraphs, in columns.
pub(crate) const PANEL_WIDTH: usize = 80;

/// Wrap each paragraph to the panel width, one after another.
pub(crate) fn wrap_paragraphs(paragraphs: &[&str]) -> Vec<String> {
    paragraphs.iter().flat_map(|p| wrap(p, PANEL_WIDTH)).collect()
}

/// A bordered panel: centred title in the top border, word-wrapped body paragraphs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Panel {
    /// Title shown centred in the top border (empty for a plain border).
    pub title: String,
    /// Body paragraphs; each is wrapped separately to the inner width.
    pub paragraphs: Vec<String>,
}

impl Panel {
    /// A panel with a title and body paragraphs.
    pub fn new(title: impl Into<String>, paragraphs: &[&str]) -> Self {
        Panel { title: title.into(), paragraphs: paragraphs.iter().map(|p| p.to_string()).collect() }
    }

    /// Render the panel `width` columns wide (one space of padding inside each border).
    pub fn render_lines(&self, width: usize, style: BoxStyle) -> Vec<String> {
        let g = style.glyphs();
        let inner = width.saturating_sub(4).max(1);
        let mut out = vec![self.top_border(width, style)];
        for paragraph in &self.paragraphs {
            for line in wrap(paragraph, inner) {
                let body = pad_right(&line, inner);
                out.push(format!("{v} {body} {v}", v = g.vertical));
            }
        }
        let rule = horizontal(g.horizontal, width.saturating_sub(2));
        out.push(format!("{}{rule}{}", g.bottom_left, g.bottom_right));
        out
    }

    /// `╭──── title ────╮`, the title centred (left side takes the shorter half).
    fn top_border(&self, width: usize, style: BoxStyle) -> String {
        let g = style.glyphs();
        let span = width.saturating_sub(2);
        let title = if self.title.is_empty() {
            String::new()
        } else {
            let fitted: String =
                fold(&self.title, span.saturating_sub(4).max(1)).into_iter().next().unwrap_or_default();
            format!(" {fitted} ")
        };
        let excess = span.saturating_sub(display_width(&title));
        let left = horizontal(g.horizontal, excess / 2);
        let right = horizontal(g.horizontal, excess - excess / 2);
        format!("{}{left}{title}{right}{}", g.top_left, g.top_right)
    }
}

/// `n` copies of a border character.
fn horizontal(c: char, n: usize) -> String {
    std::iter::repeat_n(c, n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_keeps_trailing_space_of_broken_lines() {
        let text = "Sustained mode: client latency metrics explain request UX variance; aggregate \
                    tok/s remains the primary throughput signal. \
                    ITL=(last_token_time-first_token_time)/(output_tokens-1), user tok/s=1/ITL.";
        let lines = wrap(text, 80);
        assert_eq!(lines.len(), 3);
        assert!(lines[0].ends_with("aggregate "));
        assert_eq!(lines[1], "tok/s remains the primary throughput signal. ");
        assert!(lines[2].starts_with("ITL="));
    }

    #[test]
    fn wrap_trims_space_beyond_width() {
        assert_eq!(wrap("abc def", 3), vec!["abc", "def"]);
        assert_eq!(wrap("ab cd", 6), vec!["ab cd"]);
        assert_eq!(wrap("ab cd ", 5), vec!["ab cd"]);
    }

    #[test]
    fn wrap_edge_cases() {
        assert_eq!(wrap("", 10), vec![""]);
        assert_eq!(wrap("a\n\nb", 10), vec!["a", "", "b"]);
        assert_eq!(wrap("abcdefgh", 3), vec!["abc", "def", "gh"]);
        assert_eq!(wrap("x abcdefgh", 3), vec!["x ", "abc", "def", "gh"]);
        assert_eq!(wrap("   ", 2), vec!["  "]);
        assert_eq!(wrap("  indented", 20), vec!["  indented"]);
        assert_eq!(wrap("a b", 0), vec!["a", "b"]);
    }

    #[test]
    fn panel_layout() {
        let p = Panel::new("T", &["hello world"]);
        let lines = p.render_lines(12, BoxStyle::Unicode);
        assert_eq!(lines[0], "╭─── T ────╮");
        assert_eq!(lines[1], "│ hello    │");
        assert_eq!(lines[2], "│ world    │");
        assert_eq!(lines[3], "╰──────────╯");
        let ascii = p.render_lines(12, BoxStyle::Ascii);
        assert_eq!(ascii[0], "+--- T ----+");
        assert_eq!(ascii[3], "+----------+");
    }

    #[test]
    fn panel_never_exceeds_width() {
        let p = Panel::new("a very long panel title indeed", &["x".repeat(50).as_str()]);
        for width in [0, 1, 4, 10, 20] {
            for line in p.render_lines(width, BoxStyle::Unicode) {
                assert!(display_width(&line) <= width.max(5), "{line:?}");
            }
        }
    }
}
