//! Line tokeniser for the Prometheus text exposition format (0.0.4, tolerating OpenMetrics).
//!
//! Why this exists instead of relying on `prometheus_parse::Scrape::parse` (0.2.5) alone
//! (the first four points are pinned by tests in `tests_prom.rs`):
//!
//! * it matches names with the regex `\w+`, so every name containing `:` (all of `vllm:*`,
//!   `sglang:*`, `llamacpp:*`) is silently dropped, `# TYPE` lines and sample lines alike;
//! * it splits label pairs on `,` and `=` without honouring quotes, so `a="x,y"` becomes
//!   `a="x"` and `c="a=b"` disappears; escapes stay raw (`\"` is kept as two characters);
//! * `name{} 1` and label values containing `}` drop the whole line;
//! * histogram `_sum`/`_count` come back as untyped samples, and histogram/summary groups
//!   are emitted in `HashMap` order;
//! * a `# TYPE` line records the family under `<name>_bucket` for histograms only, so the
//!   family name itself is not kept.
//!
//! The crate does get right: `# TYPE` without `# HELP`, `-1.0`, exponent floats,
//! `NaN`/`+Inf`, blank lines, `\r\n` (it trims lines), unknown `# TYPE` words (untyped),
//! `<name>_created` gauge families, histograms without `+Inf`/`_count`, and odd comments.
//! Since names with `:` are the main input, every line is tokenised here instead, and the
//! crate is kept as a cross-check oracle in the tests for the inputs it handles correctly.

use std::collections::BTreeMap;

use super::types::{MetricType, Sample};

/// One classified line of an exposition.
pub(crate) enum Line {
    /// Empty or whitespace only.
    Blank,
    /// A comment that is neither `# HELP` nor `# TYPE` (also `# UNIT`, `# EOF`).
    Comment,
    /// `# HELP name text`, with `\\` and `\n` unescaped.
    Help { name: String, text: String },
    /// `# TYPE name kind`.
    Type { name: String, kind: MetricType },
    /// A sample line.
    Sample(Sample),
}

/// Classifies and parses one line (without its line terminator).
pub(crate) fn parse_line(raw: &str) -> Result<Line, &'static str> {
    let line = raw.trim();
    if line.is_empty() {
        return Ok(Line::Blank);
    }
    if let Some(rest) = line.strip_prefix('#') {
        return parse_comment(rest);
    }
    parse_sample(line).map(Line::Sample)
}

/// Parses a sample value the way Go's `strconv.ParseFloat` does for exposition values:
/// decimal or exponent notation, `NaN`, `Inf`/`+Inf`/`-Inf` (any case).
pub(crate) fn parse_value(tok: &str) -> Option<f64> {
    let (neg, body) = match tok.strip_prefix('-') {
        Some(body) => (true, body),
        None => (false, tok.strip_prefix('+').unwrap_or(tok)),
    };
    let v = match body.to_ascii_lowercase().as_str() {
        "inf" | "infinity" => f64::INFINITY,
        "nan" => f64::NAN,
        _ => {
            let starts_ok = body.as_bytes().first().is_some_and(|b| b.is_ascii_digit() || *b == b'.');
            let chars_ok = body.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
            if !starts_ok || !chars_ok {
                return None;
            }
            body.parse::<f64>().ok()?
        }
    };
    Some(if neg { -v } else { v })
}

fn parse_comment(rest: &str) -> Result<Line, &'static str> {
    let (keyword, tail) = split_word(rest.trim_start());
    match keyword {
        "HELP" => {
            let mut c = Cursor::new(tail.trim_start());
            let name = c.metric_name()?;
            let text = unescape_help(c.rest().trim_start());
            Ok(Line::Help { name, text })
        }
        "TYPE" => {
            let mut c = Cursor::new(tail.trim_start());
            let name = c.metric_name()?;
            let (kind, _) = split_word(c.rest().trim_start());
            if kind.is_empty() {
                return Err("# TYPE line without a type");
            }
            let kind = MetricType::from_keyword(kind);
            Ok(Line::Type { name, kind })
        }
        _ => Ok(Line::Comment),
    }
}

fn parse_sample(line: &str) -> Result<Sample, &'static str> {
    let mut c = Cursor::new(line);
    let mut labels = BTreeMap::new();
    let (name, ws) = if c.peek() == Some('{') {
        let name = label_block(&mut c, &mut labels)?.ok_or("no metric name")?;
        (name, c.skip_ws())
    } else {
        let name = c.metric_name()?;
        let mut ws = c.skip_ws();
        if c.peek() == Some('{') {
            if label_block(&mut c, &mut labels)?.is_some() {
                return Err("metric name given twice");
            }
            ws = c.skip_ws();
        }
        (name, ws)
    };
    if !ws {
        return Err("missing whitespace before the value");
    }
    let value = parse_value(c.token()).ok_or("bad sample value")?;
    c.skip_ws();
    // Optional timestamp (ignored), then an optional OpenMetrics exemplar `# {...} v`.
    if !c.rest().is_empty() && !c.rest().starts_with('#') {
        if parse_value(c.token()).is_none_or(|t| !t.is_finite()) {
            return Err("bad timestamp");
        }
        c.skip_ws();
        if !c.rest().is_empty() && !c.rest().starts_with('#') {
            return Err("trailing characters after the sample");
        }
    }
    Ok(Sample { name, labels, value })
}

/// Parses `{...}` into `labels`; returns the metric name if the block holds one as a bare
/// quoted string (the UTF-8 form `{"metric.name", label="v"}`).
fn label_block(c: &mut Cursor<'_>, labels: &mut BTreeMap<String, String>) -> Result<Option<String>, &'static str> {
    c.eat('{');
    let mut name = None;
    loop {
        c.skip_ws();
        if c.eat('}') {
            return Ok(name);
        }
        let quoted = c.peek() == Some('"');
        let key = if quoted { c.quoted()? } else { c.ident(false).ok_or("bad label name")?.to_string() };
        c.skip_ws();
        if c.eat('=') {
            c.skip_ws();
            if c.peek() != Some('"') {
                return Err("label value not quoted");
            }
            let value = c.quoted()?;
            labels.insert(key, value);
        } else if quoted && name.is_none() {
            name = Some(key);
        } else {
            return Err("expected '=' after a label name");
        }
        c.skip_ws();
        if c.eat('}') {
            return Ok(name);
        }
        if !c.eat(',') {
            return Err("expected ',' or '}' in labels");
        }
    }
}

fn split_word(s: &str) -> (&str, &str) {
    s.split_once(char::is_whitespace).unwrap_or((s, ""))
}

fn unescape_help(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(ch) = chars.next() {
        match (ch, chars.clone().next()) {
            ('\\', Some('\\')) => {
                out.push('\\');
                chars.next();
            }
            ('\\', Some('n')) => {
                out.push('\n');
                chars.next();
            }
            _ => out.push(ch),
        }
    }
    out
}

/// A byte position in one line, always on a char boundary.
struct Cursor<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(s: &'a str) -> Self {
        Self { s, pos: 0 }
    }

    fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn eat(&mut self, want: char) -> bool {
        if self.peek() == Some(want) {
            self.pos += want.len_utf8();
            true
        } else {
            false
        }
    }

    /// Skips spaces and tabs; true if at least one was skipped.
    fn skip_ws(&mut self) -> bool {
        let start = self.pos;
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.pos += 1;
        }
        self.pos > start
    }

    /// Everything up to the next space or tab.
    fn token(&mut self) -> &'a str {
        let rest = self.rest();
        let end = rest.find([' ', '\t']).unwrap_or(rest.len());
        self.pos += end;
        &rest[..end]
    }

    /// `[a-zA-Z_:][a-zA-Z0-9_:]*` (colons only when `colon`).
    fn ident(&mut self, colon: bool) -> Option<&'a str> {
        let rest = self.rest();
        let ok = |i: usize, b: u8| {
            b.is_ascii_alphabetic() || b == b'_' || (colon && b == b':') || (i > 0 && b.is_ascii_digit())
        };
        let end = rest.bytes().enumerate().find(|&(i, b)| !ok(i, b)).map_or(rest.len(), |(i, _)| i);
        if end == 0 {
            return None;
        }
        self.pos += end;
        Some(&rest[..end])
    }

    fn metric_name(&mut self) -> Result<String, &'static str> {
        if self.peek() == Some('"') {
            return self.quoted();
        }
        self.ident(true).map(str::to_string).ok_or("bad metric name")
    }

    /// A double-quoted string with `\\`, `\"` and `\n` unescaped; other escapes kept verbatim.
    fn quoted(&mut self) -> Result<String, &'static str> {
        if !self.eat('"') {
            return Err("expected '\"'");
        }
        let mut out = String::new();
        let mut chars = self.rest().char_indices();
        while let Some((i, ch)) = chars.next() {
            match ch {
                '"' => {
                    self.pos += i + 1;
                    return Ok(out);
                }
                '\\' => match chars.next() {
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, '\\')) => out.push('\\'),
                    Some((_, '"')) => out.push('"'),
                    Some((_, other)) => {
                        out.push('\\');
                        out.push(other);
                    }
                    None => return Err("unterminated escape"),
                },
                _ => out.push(ch),
            }
        }
        Err("unterminated quoted string")
    }
}
