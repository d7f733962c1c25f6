//! Why requests failed, in words: [`ErrorReason`] (a kind, its count, the first reason) as the
//! log line, the heartbeat and the monitor quote it, and the footnote of the text and markdown
//! reports: for each cell whose last attempt lost requests, every kind with its count and
//! reason, so a reader of the tables learns what `(Ne)` was without opening the JSON.

use super::json::SessionReport;
use super::text::Block;
use crate::load::sample::ErrorKind;
use std::collections::BTreeMap;

/// One error kind of an attempt: how many requests failed so, and the first one's reason.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorReason {
    /// The failure class.
    pub kind: ErrorKind,
    /// Requests that failed so.
    pub count: u64,
    /// The first one's one-line detail (the server's message or the transport error, without
    /// secrets), when kept.
    pub example: Option<String>,
}

impl ErrorReason {
    /// The kinds of `errors` (zero counts left out) with their `examples`, most frequent first.
    pub fn list(errors: &BTreeMap<ErrorKind, u64>, examples: &BTreeMap<ErrorKind, String>) -> Vec<ErrorReason> {
        let mut out: Vec<ErrorReason> = (errors.iter().filter(|(_, n)| **n > 0))
            .map(|(k, n)| ErrorReason { kind: *k, count: *n, example: examples.get(k).cloned() })
            .collect();
        out.sort_by_key(|r| std::cmp::Reverse(r.count));
        out
    }
}

/// Longest reason quoted in a log line or a footnote, characters.
pub(crate) const REASON_CHARS: usize = 72;

/// `bad_request 2: "HTTP 400: prompt too long…"; stalled 1`: each kind, its count and its
/// reason (made safe for a terminal, cut to `max` characters).
pub(crate) fn reasons_text(reasons: &[ErrorReason], max: usize) -> String {
    let one = |r: &ErrorReason| match &r.example {
        Some(e) => format!("{} {}: \"{}\"", r.kind.as_str(), r.count, crate::text_safe::clipped(e, max)),
        None => format!("{} {}", r.kind.as_str(), r.count),
    };
    reasons.iter().map(one).collect::<Vec<_>>().join("; ")
}

/// The footnote's first line: the tables' `(Ne)` legend.
const HEAD: &str = "(Ne) = N failed requests in the cell's last attempt. By kind, with the first request's reason:";

/// One cell's failures: its label, its counts and its examples.
type Entry<'a> = (String, &'a BTreeMap<ErrorKind, u64>, &'a BTreeMap<ErrorKind, String>);

/// Every cell's last attempt that has failures, labelled as `compare` labels cells.
fn entries(report: &SessionReport) -> Vec<Entry<'_>> {
    let mut out: Vec<Entry<'_>> = Vec::new();
    for c in report.decode.iter().flat_map(|d| &d.cells) {
        let Some(a) = c.attempts.last() else { continue };
        let rate = c.rate.map(|r| format!(" rate={r}")).unwrap_or_default();
        out.push((format!("ctx={} conc={}{rate}", c.ctx_label, c.conc), &a.errors, &a.error_examples));
    }
    for c in report.burst.iter().flat_map(|b| &b.cells) {
        let Some(a) = c.attempts.last() else { continue };
        out.push((format!("burst ctx={} conc={}", c.ctx_label, c.conc), &a.errors, &a.error_examples));
    }
    for p in &report.phases {
        out.push((format!("routing {}", p.phase), &p.errors_by_kind, &p.error_examples));
    }
    for c in report.serve.iter().flat_map(|s| &s.cells) {
        let Some(a) = c.attempts.last() else { continue };
        let label = format!("serve ctx={} conc={} rate={}", c.ctx_label, c.max_concurrency, c.request_rate);
        out.push((label, &a.errors, &a.error_examples));
    }
    for s in &report.extensions {
        for c in &s.cells {
            let Some(a) = c.attempts.last() else { continue };
            out.push((format!("{} {}", s.kind, c.label), &a.errors, &a.error_examples));
        }
    }
    out.retain(|(_, errors, _)| errors.values().any(|n| *n > 0));
    out
}

/// The footnote as a legend block (none when no cell lost a request): one paragraph per cell,
/// `ctx=1k conc=2: bad_request 2: "HTTP 400: …"`.
pub(crate) fn error_blocks(report: &SessionReport) -> Vec<Block> {
    let entries = entries(report);
    if entries.is_empty() {
        return Vec::new();
    }
    let mut paragraphs = vec![HEAD.to_string()];
    for (label, errors, examples) in entries {
        paragraphs.push(format!("{label}: {}", reasons_text(&ErrorReason::list(errors, examples), REASON_CHARS)));
    }
    vec![Block::Blank, Block::Legend(paragraphs)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cell_that_lost_requests_gets_its_kinds_and_reasons() {
        let mut report = crate::report::tests_schema::full_report();
        let d = report.decode.as_mut().unwrap();
        for a in d.cells.iter_mut().flat_map(|c| c.attempts.iter_mut()) {
            (a.errors, a.error_examples) = (BTreeMap::new(), BTreeMap::new());
        }
        report.phases.iter_mut().for_each(|p| p.errors_by_kind.clear());
        report
            .burst
            .iter_mut()
            .flat_map(|b| b.cells.iter_mut())
            .flat_map(|c| c.attempts.iter_mut())
            .for_each(|a| a.errors.clear());
        report
            .serve
            .iter_mut()
            .flat_map(|s| s.cells.iter_mut())
            .flat_map(|c| c.attempts.iter_mut())
            .for_each(|a| a.errors.clear());
        report.extensions.clear();
        assert!(error_blocks(&report).is_empty(), "no failures, no footnote");

        let cell = &mut report.decode.as_mut().unwrap().cells[1];
        let last = cell.attempts.last_mut().unwrap();
        last.errors = [(ErrorKind::BadRequest, 2), (ErrorKind::Stalled, 3)].into();
        last.error_examples = [(ErrorKind::BadRequest, "HTTP 400: prompt too long".to_string())].into();
        let label = format!("ctx={} conc={}", cell.ctx_label, cell.conc);
        let blocks: [Block; 2] = error_blocks(&report).try_into().expect("a blank line and one legend");
        let [Block::Blank, Block::Legend(p)] = blocks else { panic!("one legend: {blocks:?}") };
        assert_eq!(p[0], HEAD);
        assert_eq!(p[1], format!(r#"{label}: stalled 3; bad_request 2: "HTTP 400: prompt too long""#));
        assert_eq!(p.len(), 2);
    }
}
