//! Display-width helpers: terminal cell widths that ignore ANSI escape sequences.

use unicode_width::UnicodeWidthChar;

/// Terminal display width of `s` in cells, skipping ANSI CSI escape sequences.
pub(crate) fn display_width(s: &str) -> usize {
    let mut width = 0;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            skip_escape(&mut chars);
            continue;
        }
        width += c.width().unwrap_or(0);
    }
    width
}

/// Consume the rest of an escape sequence whose `ESC` was already read.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    if chars.peek() != Some(&'[') {
        return;
    }
    chars.next();
    for c in chars.by_ref() {
        if ('\x40'..='\x7e').contains(&c) {
            break;
        }
    }
}

/// `s` followed by spaces up to `width` display cells (unchanged if already wider).
pub(crate) fn pad_right(s: &str, width: usize) -> String {
    let fill = width.saturating_sub(display_width(s));
    format!("{s}{}", " ".repeat(fill))
}

/// `s` preceded by spaces up to `width` display cells (unchanged if already wider).
pub(crate) fn pad_left(s: &str, width: usize) -> String {
    let fill = width.saturating_sub(display_width(s));
    format!("{}{s}", " ".repeat(fill))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_of_report_glyphs() {
        assert_eq!(display_width("∅"), 1);
        assert_eq!(display_width("—/—"), 3);
        assert_eq!(display_width("·"), 1);
        assert_eq!(display_width("╭─┬╮"), 4);
    }

    #[test]
    fn escapes_are_ignored() {
        assert_eq!(display_width("\x1b[2m76/7\x1b[0m"), 4);
        assert_eq!(display_width("\x1b"), 0);
        assert_eq!(display_width("\x1b[2"), 0);
        assert_eq!(pad_left("\x1b[2mab\x1b[0m", 4), "  \x1b[2mab\x1b[0m");
    }

    #[test]
    fn padding() {
        assert_eq!(pad_right("ab", 4), "ab  ");
        assert_eq!(pad_left("ab", 4), "  ab");
        assert_eq!(pad_left("abcdef", 4), "abcdef");
    }
}
