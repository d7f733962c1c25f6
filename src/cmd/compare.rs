//! `llm-decode-bench compare`: loads both reports (a bad file is one line and exit 2), compares
//! them (src/report/compare/) and prints the result; exit 1 when a headline figure regressed.

use super::exit;
use super::session::usage;
use crate::cli::compare::CompareArgs;
use crate::report::compare::render::render;
use crate::report::compare::{Options, Verdict, compare};
use crate::report::json::SessionReport;
use crate::report::load::{LoadError, load_report};
use std::path::Path;
use std::process::ExitCode;

fn load(side: &str, path: &Path) -> Result<SessionReport, String> {
    load_report(path).map_err(|e| match e {
        LoadError::Unreadable { .. } => format!("{side} report: {e}"),
        _ => format!("{side} report {}: {e}", path.display()),
    })
}

/// Runs `compare`: 0 no regression, 1 a headline figure regressed beyond the threshold, 2 a
/// report that cannot be read (README "Exit codes").
pub(crate) fn run(args: CompareArgs) -> ExitCode {
    let (base, new) = match (load("base", &args.base), load("new", &args.new)) {
        (Ok(b), Ok(n)) => (b, n),
        (Err(e), _) | (_, Err(e)) => return usage(&e),
    };
    let opts = Options { threshold_pct: args.threshold, percentiles: args.percentiles.clone() };
    let (bname, nname) = (args.base.display().to_string(), args.new.display().to_string());
    let c = compare((&bname, &base), (&nname, &new), &opts);
    if c.cells.is_empty() {
        // A gate that compared nothing has not shown the absence of a regression.
        let _ = crate::stdio::write_out(render(&c, args.format).as_bytes());
        return usage(&format!("{bname} and {nname} have no cell in common: nothing was compared"));
    }
    // A closed stdout (`| head`) is not an error of the comparison.
    let _ = crate::stdio::write_out(render(&c, args.format).as_bytes());
    match c.verdict {
        Verdict::Regression => ExitCode::from(exit::REGRESSION),
        Verdict::NoChange | Verdict::NoRegression => ExitCode::from(exit::SUCCESS),
    }
}
