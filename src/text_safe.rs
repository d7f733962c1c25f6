//! Server text made safe for a terminal. A model id, an error body, a Prometheus label or a
//! header value is the server's to choose, and may hold `ESC ] 0; … BEL` (retitle the
//! window), `ESC [2J` (clear the screen), their one-character C1 forms (`U+009B` is CSI) or a
//! bidi override that reorders what follows. At every place such text reaches a terminal or a
//! log (headless progress, the monitor, `--log-file`, text and markdown reports, error lines),
//! it goes through [`line`] or [`text`]: each unsafe character becomes a visible escape
//! (`\x1b`, `\u{9b}`, `\u{202e}`), printable text is left as it is. The data itself is never
//! changed, so the JSON report keeps the exact string (HTML escapes it its own way).

use std::borrow::Cow;
use std::fmt;

/// True for a character that must not reach a terminal raw: the C0 controls, DEL, the C1
/// controls, the bidi embeddings, overrides, isolates and marks, and the line and paragraph
/// separators.
pub fn is_unsafe(c: char) -> bool {
    c.is_control() || is_bidi(c) || matches!(c, '\u{2028}' | '\u{2029}')
}

/// The bidi formatting characters (Unicode's `Bidi_Control`).
fn is_bidi(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// [`line`], cut to at most `max` characters with `…` at the cut: a server's reason in a
/// table footnote or a log line.
pub fn clipped(s: &str, max: usize) -> String {
    let safe = line(s.trim());
    if safe.chars().count() <= max {
        return safe.into_owned();
    }
    let mut out: String = safe.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `s` on one line with every unsafe character escaped (newlines and tabs too); borrowed
/// when there is nothing to escape.
pub fn line(s: &str) -> Cow<'_, str> {
    escape(s, |_| false)
}

/// `s` with every unsafe character escaped except the line ends (`\n`) of multi-line text.
pub fn text(s: &str) -> Cow<'_, str> {
    escape(s, |c| c == '\n')
}

/// `s` with the unsafe characters that `keep` does not keep escaped.
fn escape(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(|c| is_unsafe(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            c if !is_unsafe(c) || keep(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// Displays a string as [`line`] escapes it: `format!("model {}", Safe(&id))`.
#[derive(Debug, Clone, Copy)]
pub struct Safe<'a>(pub &'a str);

impl fmt::Display for Safe<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&line(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn escapes_are_visible_and_printable_text_is_kept() {
        let evil = "evil\u{1b}]0;pwned\u{7}\u{1b}[2Jx";
        assert_eq!(line(evil), "evil\\x1b]0;pwned\\x07\\x1b[2Jx");
        assert_eq!(line("a\u{9b}2J\u{202e}b\u{7f}"), "a\\u{9b}2J\\u{202e}b\\x7f");
        assert_eq!(line("two\nlines\r\tx"), "two\\nlines\\r\\tx");
        assert_eq!(text("two\nlines\u{1b}"), "two\nlines\\x1b");
        assert!(matches!(line("sim-llama-27b ✓ 模型 ★ \\x1b"), Cow::Borrowed(_)));
        assert_eq!(Safe("a\u{1b}b").to_string(), "a\\x1bb");
    }

    /// Any text, with control characters, bidi controls and separators in plenty.
    fn hostile() -> impl Strategy<Value = String> {
        let mixed = "(\\PC|\\p{Cc}|[\u{61c}\u{200e}\u{200f}\u{202a}-\u{202e}\u{2066}-\u{2069}\u{2028}\u{2029}]){0,64}";
        prop_oneof![any::<String>(), mixed]
    }

    proptest! {
        #[test]
        fn the_safe_form_has_no_unsafe_character(s in hostile()) {
            prop_assert!(!line(&s).chars().any(is_unsafe));
            prop_assert!(!text(&s).chars().any(|c| is_unsafe(c) && c != '\n'));
        }

        #[test]
        fn printable_text_is_unchanged(s in hostile().prop_map(|s| s.replace(is_unsafe, ""))) {
            prop_assert_eq!(line(&s), s.as_str());
            prop_assert_eq!(text(&s), s.as_str());
        }

        #[test]
        fn line_never_spans_lines(s in "(\\PC|\n|\r|\u{1b}|\u{9b}|\u{202e}){0,40}") {
            let safe = line(&s);
            prop_assert_eq!(safe.lines().count(), usize::from(!s.is_empty()));
        }
    }
}
