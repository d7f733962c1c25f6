//! `llm-decode-bench report FILE...`: render saved session reports again, in any format of
//! `report::formats::ReportFormat`, to stdout or atomically to `--out`. Several files make one
//! HTML page (each report's sections, one Pareto chart over all), or text and markdown each in
//! turn; csv and vllm take one. A file that is not a readable report, or a flag that does not
//! fit, is one line on stderr and exit 2 (README "Exit codes"); nothing is written then.

use super::exit;
use super::run::print_tables;
use crate::cli::report::ReportArgs;
use crate::report::atomic::write_atomic;
use crate::report::formats::{RenderSettings, ReportFormat};
use crate::report::html::render_many;
use crate::report::json::SessionReport;
use crate::report::load::{LoadError, load_report};
use crate::report::pareto::Source;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Renders the report `args` name; exit 0, or 2 with one line on stderr.
pub(crate) fn run(args: &ReportArgs) -> ExitCode {
    if let Some(crate::cli::report_merge::ReportCommand::Merge(merge)) = &args.command {
        return super::report_merge::run(merge);
    }
    match render(args) {
        Ok(()) => ExitCode::from(exit::SUCCESS),
        Err(msg) => super::session::usage(&msg),
    }
}

/// Checks the flags, loads the reports, renders them and writes them out.
fn render(args: &ReportArgs) -> Result<(), String> {
    if args.per_request && args.format != ReportFormat::Csv {
        return Err(format!("--per-request needs --format csv (not {})", args.format.as_str()));
    }
    let n = args.files.len();
    if n > 1 && matches!(args.format, ReportFormat::Csv | ReportFormat::Vllm) {
        return Err(format!(
            "--format {} takes one FILE ({n} given): render them one at a time, or use --format html for one page over all",
            args.format.as_str()
        ));
    }
    if let Some(out) = &args.out {
        check_out(out, &args.files, args.overwrite)?;
    }
    let mut reports = Vec::with_capacity(n);
    for file in &args.files {
        let report = load_report(file).map_err(|e| load_message(file, &e))?;
        reports.push(report);
    }
    for (file, report) in args.files.iter().zip(&reports) {
        notes(file, report, args.format);
    }
    if args.format == ReportFormat::Text && args.out.is_none() {
        // The very code that printed the tables at the end of the run (its dim rules too).
        return print_each(&args.files, &reports, args.ascii).map_err(|e| format!("cannot write to stdout: {e}"));
    }
    let body = match &reports[..] {
        [one] => body(one, args),
        _ => several(&args.files, &reports, args),
    };
    match &args.out {
        Some(out) => write_atomic(out, body.as_bytes()).map_err(|e| format!("cannot write {}: {e}", out.display())),
        None => crate::stdio::write_out(body.as_bytes()).map_err(|e| format!("cannot write to stdout: {e}")),
    }
}

/// The line that heads each report's output when several are rendered in turn (as `head`
/// heads each file).
fn heading(file: &Path) -> String {
    format!("==> {} <==", crate::text_safe::text(&file.display().to_string()))
}

/// Prints the tables of each report as a run prints them, each under its file's heading
/// when there are several.
fn print_each(files: &[PathBuf], reports: &[SessionReport], ascii: bool) -> std::io::Result<()> {
    for (i, (file, report)) in files.iter().zip(reports).enumerate() {
        if reports.len() > 1 {
            let gap = if i > 0 { "\n" } else { "" };
            crate::out_line!("{gap}{}\n", heading(file))?;
        }
        print_tables(report, ascii)?;
    }
    Ok(())
}

/// The output of several reports: html one page over all of them ([`render_many`], each
/// labelled by its file stem, `report::pareto::labels`); text and markdown each report in
/// turn under its file's heading.
fn several(files: &[PathBuf], reports: &[SessionReport], args: &ReportArgs) -> String {
    if args.format == ReportFormat::Html {
        let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        let labels = crate::report::pareto::labels::file_labels(&paths);
        // A sweep's file is one source per set that ran (`stem · set 1 · max_num_seqs=8`).
        let expanded: Vec<(String, &SessionReport)> = labels
            .iter()
            .zip(reports)
            .flat_map(|(label, report)| match &report.sweep {
                Some(sweep) => sweep.sessions().into_iter().map(|(set, r)| (format!("{label} · {set}"), r)).collect(),
                None => vec![(label.clone(), report)],
            })
            .collect();
        let sources: Vec<Source<'_>> =
            expanded.iter().map(|(label, report)| Source { label: label.as_str(), report }).collect();
        return render_many(&sources);
    }
    let parts: Vec<String> = files
        .iter()
        .zip(reports)
        .map(|(file, report)| format!("{}\n\n{}", heading(file), body(report, args)))
        .collect();
    parts.join("\n")
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

/// `--out` must take a file, must not be one of the reports being read, and replaces an
/// existing file only with `overwrite` (src/report/clobber.rs).
pub(super) fn check_out(out: &Path, files: &[PathBuf], overwrite: bool) -> Result<(), String> {
    crate::report::fallback::check_writable(out, "--out")?;
    if files.iter().any(|file| crate::report::clobber::same_file(out, file)) {
        return Err(format!("--out {} is the report being read; name another file", out.display()));
    }
    crate::report::clobber::check_output(out, "--out", overwrite, |_| false)
}

/// One line naming the file and what is wrong with it.
pub(super) fn load_message(file: &Path, e: &LoadError) -> String {
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
