//! `compare` and sweeps: one sweep's sets side by side (`compare SWEEP.json`), or two sweeps
//! set by set, each set of BASE paired with the set of NEW that has the same parameters
//! (`compare A.json B.json`), every pair compared as two sessions are.

use super::side::side_by_side;
use super::{SweepSection, SweepSet};
use crate::report::compare::render::CompareFormat;
use crate::report::compare::{Comparison, Options, Verdict, compare};
use crate::report::json::SessionReport;
use serde::Serialize;

/// The sets of one sweep side by side, in a `compare --format`.
pub fn side_by_side_in(sweep: &SweepSection, format: CompareFormat) -> String {
    let side = side_by_side(sweep);
    if format == CompareFormat::Json {
        return serde_json::to_string_pretty(&side).map(|s| s + "\n").unwrap_or_default();
    }
    let (header, rows) = side.grid();
    let mut all = vec![header];
    all.extend(rows);
    let text = match format {
        CompareFormat::Markdown => {
            let line = |r: &[String]| {
                format!("| {} |", r.iter().map(|c| c.replace('|', "\\|")).collect::<Vec<_>>().join(" | "))
            };
            let mut out =
                vec!["### llm-decode-bench compare: sets side by side".to_string(), String::new(), line(&all[0])];
            out.push(format!("|---|---|{}", "---:|".repeat(all[0].len() - 2)));
            out.extend(all[1..].iter().map(|r| line(r)));
            out.join("\n") + "\n"
        }
        _ => columns(&all),
    };
    crate::text_safe::text(&text).into_owned()
}

/// Rows as aligned columns: the first two left-aligned, the others right-aligned.
fn columns(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width = |i: usize| rows.iter().map(|r| r.get(i).map_or(0, |c| c.chars().count())).max().unwrap_or(0);
    let w: Vec<usize> = (0..n).map(width).collect();
    let mut out = String::new();
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| if i < 2 { format!("{c:<w$}", w = w[i]) } else { format!("{c:>w$}", w = w[i]) })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// Two sets with the same parameters, one of each sweep, compared.
#[derive(Debug, Clone, Serialize)]
pub struct SetComparison {
    /// `max_num_seqs=16`.
    pub params: String,
    /// The comparison of their session reports.
    pub comparison: Comparison,
}

/// Two sweeps set by set.
#[derive(Debug, Clone, Serialize)]
pub struct SweepComparison {
    /// Pairs with a session on both sides, in BASE's order.
    pub pairs: Vec<SetComparison>,
    /// Sets of either side left out: no set with the same parameters on the other side, or no
    /// session on one side.
    pub unpaired: Vec<String>,
}

impl SweepComparison {
    /// Regression when any pair regressed; no change when every pair is unchanged.
    pub fn verdict(&self) -> Verdict {
        let all = |v: Verdict| self.pairs.iter().all(|p| p.comparison.verdict == v);
        match self.pairs.iter().any(|p| p.comparison.verdict == Verdict::Regression) {
            true => Verdict::Regression,
            false if all(Verdict::NoChange) && self.unpaired.is_empty() => Verdict::NoChange,
            false => Verdict::NoRegression,
        }
    }

    /// Cells compared over every pair.
    pub fn cells(&self) -> usize {
        self.pairs.iter().map(|p| p.comparison.cells.len()).sum()
    }
}

fn session(s: &SweepSet) -> Option<&SessionReport> {
    s.report.as_deref()
}

/// Pairs the sets of `base` and `new` by their parameters and compares each pair; refuses
/// sweeps of different parameter names.
pub fn compare_sweeps(
    base: (&str, &SweepSection),
    new: (&str, &SweepSection),
    opts: &Options,
) -> Result<SweepComparison, String> {
    let (b, n) = (base.1, new.1);
    let (mut bn, mut nn) = (b.params.clone(), n.params.clone());
    bn.sort();
    nn.sort();
    if bn != nn {
        return Err(format!(
            "{} sweeps {} and {} sweeps {}: their sets cannot be paired",
            base.0,
            b.params.join(", "),
            new.0,
            n.params.join(", ")
        ));
    }
    let mut out = SweepComparison { pairs: Vec::new(), unpaired: Vec::new() };
    for bs in &b.sets {
        let ns = n.sets.iter().find(|s| s.params == bs.params);
        let label = b.describe(bs);
        match (session(bs), ns.and_then(session)) {
            (Some(br), Some(nr)) => {
                let comparison = compare((base.0, br), (new.0, nr), opts);
                out.pairs.push(SetComparison { params: label, comparison });
            }
            (_, _) if ns.is_none() => out.unpaired.push(format!("{label}: only in {}", base.0)),
            _ => out.unpaired.push(format!("{label}: no session on one side (set not run)")),
        }
    }
    for ns in n.sets.iter().filter(|ns| !b.sets.iter().any(|bs| bs.params == ns.params)) {
        out.unpaired.push(format!("{}: only in {}", n.describe(ns), new.0));
    }
    Ok(out)
}

/// Renders two sweeps compared: each pair under its parameters, then the unpaired sets.
pub fn render_sweeps(c: &SweepComparison, format: CompareFormat) -> String {
    if format == CompareFormat::Json {
        return serde_json::to_string_pretty(c).map(|s| s + "\n").unwrap_or_default();
    }
    let mut out = String::new();
    for p in &c.pairs {
        let head = match format {
            CompareFormat::Markdown => format!("## set {}\n\n", p.params),
            _ => format!("== set {} ==\n", p.params),
        };
        out.push_str(&crate::text_safe::text(&head));
        out.push_str(&crate::report::compare::render::render(&p.comparison, format));
        out.push('\n');
    }
    for u in &c.unpaired {
        out.push_str(&crate::text_safe::line(&format!("not compared: {u}")));
        out.push('\n');
    }
    out
}
