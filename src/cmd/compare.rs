//! `llm-decode-bench compare`: loads both reports (a bad file is one line and exit 2), compares
//! them (src/report/compare/) and prints the result; exit 1 when a headline figure regressed.

use super::exit;
use super::session::usage;
use crate::cli::compare::CompareArgs;
use crate::report::compare::render::{CompareFormat, render};
use crate::report::compare::{Options, Verdict, compare};
use crate::report::json::SessionReport;
use crate::report::load::{LoadError, load_report};
use crate::report::sweep::SweepSection;
use crate::report::sweep::compare::{compare_sweeps, render_sweeps, side_by_side_in};
use std::path::Path;
use std::process::ExitCode;

fn load(side: &str, path: &Path) -> Result<SessionReport, String> {
    load_report(path).map_err(|e| match e {
        LoadError::Unreadable { .. } => format!("{side} report: {e}"),
        _ => format!("{side} report {}: {e}", path.display()),
    })
}

/// Runs `compare`: 0 no regression, 1 a headline figure regressed beyond the threshold, 2 a
/// report that cannot be read (README "Exit codes"). One sweep report alone prints its sets
/// side by side; two sweeps are compared set by set (`src/report/sweep/compare.rs`).
pub(crate) fn run(args: CompareArgs) -> ExitCode {
    let Some(new_path) = args.new.clone() else { return one_sweep(&args) };
    let (base, new) = match (load("base", &args.base), load("new", &new_path)) {
        (Ok(b), Ok(n)) => (b, n),
        (Err(e), _) | (_, Err(e)) => return usage(&e),
    };
    let opts = Options { threshold_pct: args.threshold, percentiles: args.percentiles.clone() };
    let (bname, nname) = (args.base.display().to_string(), new_path.display().to_string());
    match (&base.sweep, &new.sweep) {
        (Some(b), Some(n)) => return sweeps((&bname, b), (&nname, n), &opts, args.format),
        (Some(_), None) | (None, Some(_)) => {
            let (sweep, plain) = if base.sweep.is_some() { (&bname, &nname) } else { (&nname, &bname) };
            return usage(&format!(
                "{sweep} is a sweep report (run --server-cmd) and {plain} is not: compare two sweeps, or give {sweep} alone for its sets side by side"
            ));
        }
        (None, None) => {}
    }
    let c = compare((&bname, &base), (&nname, &new), &opts);
    if c.cells.is_empty() {
        // A gate that compared nothing has not shown the absence of a regression.
        if let Err(code) = emit(&render(&c, args.format)) {
            return code;
        }
        return usage(&format!("{bname} and {nname} have no cell in common: nothing was compared"));
    }
    if let Err(code) = emit(&render(&c, args.format)) {
        return code;
    }
    verdict_code(c.verdict)
}

/// Prints the comparison. A closed stdout (`| head`) is not an error of the comparison; any
/// other failure to write it (a full disk behind `>`) is exit 5: a CI job reading the file
/// must not take a missing comparison for a pass.
fn emit(text: &str) -> Result<(), ExitCode> {
    crate::stdio::write_out(text.as_bytes()).map_err(|e| {
        crate::err_line!("error: cannot write the comparison to stdout: {e}");
        ExitCode::from(exit::REPORT_NOT_SAVED)
    })
}

fn verdict_code(v: Verdict) -> ExitCode {
    match v {
        Verdict::Regression => ExitCode::from(exit::REGRESSION),
        Verdict::NoChange | Verdict::NoRegression => ExitCode::from(exit::SUCCESS),
    }
}

/// `compare SWEEP.json`: the sets of one sweep side by side.
fn one_sweep(args: &CompareArgs) -> ExitCode {
    let report = match load("the", &args.base) {
        Ok(r) => r,
        Err(e) => return usage(&e),
    };
    let Some(sweep) = &report.sweep else {
        return usage(&format!(
            "{} is one session: compare needs a second report (BASE NEW), or one sweep report (run --server-cmd)",
            args.base.display()
        ));
    };
    match emit(&side_by_side_in(sweep, args.format)) {
        Ok(()) => ExitCode::from(exit::SUCCESS),
        Err(code) => code,
    }
}

/// Two sweeps set by set; exit 2 when no pair has a cell in common.
fn sweeps(base: (&str, &SweepSection), new: (&str, &SweepSection), opts: &Options, format: CompareFormat) -> ExitCode {
    let c = match compare_sweeps(base, new, opts) {
        Ok(c) => c,
        Err(e) => return usage(&e),
    };
    if let Err(code) = emit(&render_sweeps(&c, format)) {
        return code;
    }
    if c.cells() == 0 {
        return usage(&format!("{} and {} have no set with a cell in common: nothing was compared", base.0, new.0));
    }
    verdict_code(c.verdict())
}
