//! Word wrap by display width, keeping the whitespace the reference tables keep.

use super::width::display_width;
use unicode_width::UnicodeWidthChar;

/// Word-wrap `text` to lines of at most `width` display columns.
///
/// Each word keeps the whitespace that follows it, so a broken line keeps its trailing
/// space (as `tests/fixtures/seed_000.txt` shows) unless that space would exceed `width`. Words wider
/// than `width` are folded. Embedded `\n` start a new line; empty text gives one empty line.
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    text.split('\n').flat_map(|line| wrap_line(line, width)).collect()
}

/// Wrap one line without newlines.
fn wrap_line(line: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    let mut offset = 0;
    for word in words(line) {
        let word_len = display_width(word.trim_end());
        if offset + word_len <= width {
            current.push_str(word);
            offset += display_width(word);
            continue;
        }
        if offset > 0 {
            lines.push(std::mem::take(&mut current));
        }
        if word_len > width {
            let mut pieces = fold(word, width);
            current = pieces.pop().unwrap_or_default();
            lines.extend(pieces);
        } else {
            current = word.to_string();
        }
        offset = display_width(&current);
    }
    if current.is_empty() && lines.is_empty() {
        current = line.to_string();
    }
    if !current.is_empty() || lines.is_empty() {
        lines.push(current);
    }
    lines.iter().map(|l| trim_excess_space(l, width)).collect()
}

/// Split a line into words, each with its trailing whitespace (the first keeps its indent).
fn words(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut seen_text = false;
    let mut in_space = false;
    for (i, c) in line.char_indices() {
        let space = c.is_whitespace();
        if !space && in_space && seen_text {
            out.push(&line[start..i]);
            start = i;
        }
        seen_text |= !space;
        in_space = space;
    }
    if seen_text {
        out.push(&line[start..]);
    }
    out
}

/// Chop a word into pieces of at most `width` display columns.
pub(super) fn fold(word: &str, width: usize) -> Vec<String> {
    let mut pieces = vec![String::new()];
    let mut used = 0;
    for c in word.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > width && used > 0 {
            pieces.push(String::new());
            used = 0;
        }
        if let Some(last) = pieces.last_mut() {
            last.push(c);
        }
        used += w;
    }
    pieces
}

/// Drop trailing whitespace only while the line is wider than `width`.
fn trim_excess_space(line: &str, width: usize) -> String {
    let mut s = line.to_string();
    while display_width(&s) > width && s.ends_with(char::is_whitespace) {
        s.pop();
    }
    s
}
