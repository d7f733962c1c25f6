//! `llm-decode-bench report merge FILE... --out M.json`: merges the reports of a sharded
//! session's shards (`experiment::merge`) and writes the session's report atomically. Files
//! that are not shards of one session and plan, or an `--out` that would clobber another
//! file, are one line on stderr and exit 2 (README "Exit codes"); nothing is written then.
//! A missing or unfinished shard is a note on stderr and recorded in the report.

use super::exit;
use super::report::{check_out, load_message};
use crate::cli::report_merge::ReportMergeArgs;
use crate::experiment::merge::{ShardInput, merge};
use crate::report::load::load_report;
use crate::report::shard::MergedShardStatus;
use crate::report::writer::ReportWriter;
use std::process::ExitCode;

/// Merges the shard reports `args` names into `--out`; exit 0, or 2 with one line on stderr.
pub(crate) fn run(args: &ReportMergeArgs) -> ExitCode {
    match merge_files(args) {
        Ok(()) => ExitCode::from(exit::SUCCESS),
        Err(msg) => super::session::usage(&msg),
    }
}

fn merge_files(args: &ReportMergeArgs) -> Result<(), String> {
    check_out(&args.out, &args.files, args.overwrite)?;
    let mut inputs = Vec::with_capacity(args.files.len());
    for file in &args.files {
        let report = load_report(file).map_err(|e| load_message(file, &e))?;
        inputs.push(ShardInput { file: file.display().to_string(), report });
    }
    let merged = merge(inputs)?;
    for note in &merged.notes {
        crate::err_line!("note: {}", crate::text_safe::line(note));
    }
    let out = &args.out;
    ReportWriter::new(Some(out.clone()))
        .write(&merged.report)
        .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    if let Some(m) = &merged.report.merge {
        let n = m.shards.iter().filter(|s| s.file.is_some()).count();
        let of = |st| m.shards.iter().filter(|s| s.status == st).count();
        let (unfinished, missing) = (of(MergedShardStatus::Incomplete), of(MergedShardStatus::Missing));
        crate::err_line!(
            "merged the reports of {n} of {} shards ({unfinished} incomplete, {missing} missing) of session {} into {}",
            m.shard_count,
            crate::text_safe::line(&m.session_id),
            out.display()
        );
    }
    Ok(())
}
