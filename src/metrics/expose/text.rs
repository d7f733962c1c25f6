//! The page's text in the Prometheus text exposition format (version 0.0.4): every series of
//! docs/metrics.md, names without colons, seconds and `_total` counters, the labels `session`,
//! `shard` and (per cell) `cell` on every series.

use super::{CellTotals, Exposition, SessionLabels};
use crate::load::live_hist::{BOUNDS_NS, HistCounts};
use std::fmt::Write;

/// The content type of the page.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Prefix of every series name.
pub const PREFIX: &str = "llm_decode_bench_";

/// `v` as a label value: backslash, double quote and newline escaped.
fn escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Nanoseconds as seconds in plain decimal (`0.00001`, `1.5`, `70`): the same text for the same
/// boundary in every process, so buckets of several shards sum by their `le` label.
pub fn seconds_text(ns: u64) -> String {
    let (whole, frac) = (ns / 1_000_000_000, ns % 1_000_000_000);
    if frac == 0 {
        return whole.to_string();
    }
    let digits = format!("{frac:09}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Writes the page.
struct Page {
    out: String,
    base: String,
}

impl Page {
    fn new(labels: &SessionLabels) -> Self {
        let base = format!("session=\"{}\",shard=\"{}\"", escape(&labels.session), labels.shard);
        Self { out: String::with_capacity(16 * 1024), base }
    }

    fn header(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP {PREFIX}{name} {help}");
        let _ = writeln!(self.out, "# TYPE {PREFIX}{name} {kind}");
    }

    fn line(&mut self, name: &str, extra: &str, value: impl std::fmt::Display) {
        let sep = if extra.is_empty() { "" } else { "," };
        let _ = writeln!(self.out, "{PREFIX}{name}{{{}{sep}{extra}}} {value}", self.base);
    }

    /// One series per cell.
    fn per_cell(&mut self, cells: &[CellTotals], name: &str, kind: &str, help: &str, v: impl Fn(&CellTotals) -> u64) {
        self.header(name, kind, help);
        for c in cells {
            self.line(name, &cell_label(c), v(c));
        }
    }

    fn histogram(&mut self, cells: &[CellTotals], name: &str, help: &str, h: impl Fn(&CellTotals) -> &HistCounts) {
        self.header(name, "histogram", help);
        for c in cells {
            let (cell, h) = (cell_label(c), h(c));
            let mut acc = 0;
            for (i, n) in h.counts.iter().enumerate() {
                acc += n;
                let le = BOUNDS_NS.get(i).map_or_else(|| "+Inf".to_string(), |b| seconds_text(*b));
                self.line(&format!("{name}_bucket"), &format!("{cell},le=\"{le}\""), acc);
            }
            self.line(&format!("{name}_sum"), &cell, h.sum_ns as f64 / 1e9);
            self.line(&format!("{name}_count"), &cell, acc);
        }
    }
}

fn cell_label(c: &CellTotals) -> String {
    format!("cell=\"{}\"", escape(&c.label))
}

/// The page of `expo` now.
pub fn render(expo: &Exposition) -> String {
    let labels = expo.labels();
    let cells = expo.totals();
    let mut p = Page::new(labels);
    p.header("info", "gauge", "The session: tool version, plan kinds and shard count; always 1.");
    let info = format!(
        "shards=\"{}\",plan=\"{}\",version=\"{}\"",
        labels.shards,
        escape(&labels.plan),
        escape(&labels.version)
    );
    p.line("info", &info, 1);
    p.header("up", "gauge", "1 while the process serves this page.");
    p.line("up", "", 1);
    p.header("start_time_seconds", "gauge", "When the session started, seconds since the epoch.");
    p.line("start_time_seconds", "", expo.started_unix());
    p.header(
        "heartbeat_timestamp_seconds",
        "gauge",
        "Last sign of life of the measuring side (every 250 ms while a cell runs), seconds since the epoch.",
    );
    p.line("heartbeat_timestamp_seconds", "", expo.heartbeat_unix());
    p.header("session_finished", "gauge", "1 once the session ended and its report is written (see --metrics-linger).");
    p.line("session_finished", "", u8::from(expo.is_finished()));
    p.per_cell(&cells, "cell_active", "gauge", "1 while an attempt of the cell runs.", |c| u64::from(c.active));
    p.per_cell(&cells, "output_tokens_total", "counter", "Output tokens received.", |c| c.tokens);
    p.per_cell(&cells, "requests_started_total", "counter", "Requests sent.", |c| c.started);
    p.per_cell(&cells, "requests_completed_total", "counter", "Requests the server finished.", |c| c.completed);
    p.per_cell(&cells, "requests_cut_total", "counter", "Requests the client cut (window or attempt end).", |c| c.cut);
    p.header("request_errors_total", "counter", "Failed requests by error kind (the report's names).");
    for c in &cells {
        for (kind, n) in &c.errors {
            p.line("request_errors_total", &format!("{},kind=\"{kind}\"", cell_label(c)), n);
        }
    }
    p.per_cell(&cells, "requests_in_flight", "gauge", "Requests sent and not ended.", |c| c.in_flight);
    p.per_cell(&cells, "streams_running", "gauge", "Requests in flight past their first token.", |c| c.streaming);
    p.histogram(&cells, "ttft_seconds", "Time to first token per request.", |c| &c.ttft);
    p.histogram(&cells, "itl_seconds", "Time between tokens, per token.", |c| &c.itl);
    p.histogram(&cells, "tpot_seconds", "Time per output token per request (2 tokens or more).", |c| &c.tpot);
    p.out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_print_in_plain_decimal() {
        assert_eq!(seconds_text(10_000), "0.00001");
        assert_eq!(seconds_text(1_500_000_000), "1.5");
        assert_eq!(seconds_text(70_000_000_000), "70");
        assert_eq!(seconds_text(0), "0");
        for b in BOUNDS_NS {
            let back: f64 = seconds_text(b).parse().unwrap();
            assert!((back * 1e9 - b as f64).abs() < 1e-3, "{b}");
        }
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
