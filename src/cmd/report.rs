//! `llm-decode-bench report FILE`: render a saved session report again, in any format of
//! `report::formats::ReportFormat`, to stdout or atomically to `--out`. A file that is not a
//! readable report, or a flag that does not fit, is one line on stderr and exit 2 (README
//! "Exit codes"); nothing is written then.

use super::exit;
use super::run::print_tables;
use crate::cli::report::ReportArgs;
use crate::report::atomic::write_atomic;
use crate::report::formats::{RenderSettings, ReportFormat};
use crate::report::json::SessionReport;
use crate::report::load::{LoadError, load_report};
use std::path::Path;
use std::process::ExitCode;

/// Renders the report `args` name; exit 0, or 2 with one line on stderr.
pub(crate) fn run(args: &ReportArgs) -> ExitCode {
    match render(args) {
        Ok(()) => ExitCode::from(exit::SUCCESS),
        Err(msg) => super::session::usage(&msg),
    }
}

/// Checks the flags, loads the report, renders it and writes it out.
fn render(args: &ReportArgs) -> Result<(), String> {
    if args.per_request && args.format != ReportFormat::Csv {
        return Err(format!("--per-request needs --format csv (not {})", args.format.as_str()));
    }
    if let Some(out) = &args.out {
        check_out(out, &args.file, args.overwrite)?;
    }
    let report = load_report(&args.file).map_err(|e| load_message(&args.file, &e))?;
    notes(&args.file, &report, args.format);
    if args.format == ReportFormat::Text && args.out.is_none() {
        // The very code that printed the tables at the end of the run (its dim rules too).
        return print_tables(&report, args.ascii).map_err(|e| format!("cannot write to stdout: {e}"));
    }
    let body = body(&report, args);
    match &args.out {
        Some(out) => write_atomic(out, body.as_bytes()).map_err(|e| format!("cannot write {}: {e}", out.display())),
        None => crate::stdio::write_out(body.as_bytes()).map_err(|e| format!("cannot write to stdout: {e}")),
    }
}

/// The bytes of the output: text gets the newline a run prints it with (nothing when it is
/// empty), never ANSI dim (it is not going to a terminal).
fn body(report: &SessionReport, args: &ReportArgs) -> String {
    if args.per_request {
        return match &report.sweep {
            Some(sweep) => {
                crate::report::sweep::render::per_set_csv(report, sweep, crate::report::csv::render_requests)
            }
            None => crate::report::csv::render_requests(report),
        };
    }
    if args.format == ReportFormat::Vllm {
        return crate::report::formats::vllm_json(report, &args.percentiles);
    }
    let settings = RenderSettings { ascii: args.ascii, dim_ansi: false, width: RenderSettings::terminal_width() };
    let out = args.format.render(report, settings);
    match args.format {
        ReportFormat::Text if !out.is_empty() => format!("{out}\n"),
        _ => out,
    }
}

/// `--out` must take a file, must not be the report being read, and replaces an existing
/// file only with `overwrite` (src/report/clobber.rs).
fn check_out(out: &Path, file: &Path, overwrite: bool) -> Result<(), String> {
    crate::report::fallback::check_writable(out, "--out")?;
    if crate::report::clobber::same_file(out, file) {
        return Err(format!("--out {} is the report being read; name another file", out.display()));
    }
    crate::report::clobber::check_output(out, "--out", overwrite, |_| false)
}

/// One line naming the file and what is wrong with it.
fn load_message(file: &Path, e: &LoadError) -> String {
    match e {
        LoadError::Unreadable { .. } => e.to_string(),
        _ => format!("{}: {e}", file.display()),
    }
}

/// Notes on stderr: an interrupted session, a report with nothing the tables show.
fn notes(file: &Path, report: &SessionReport, format: ReportFormat) {
    if !report.complete {
        crate::err_line!("note: {} is an unfinished session (complete: false)", file.display());
    }
    let tables =
        report.decode.is_some() || report.serve.is_some() || !report.phases.is_empty() || report.sweep.is_some();
    if !tables && matches!(format, ReportFormat::Text | ReportFormat::Markdown) {
        crate::err_line!(
            "note: {} has no decode matrix, serve cell or routing phase: no tables to show",
            file.display()
        );
    }
}
