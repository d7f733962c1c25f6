//! `llm-decode-bench report merge`: flags of merging the shard reports of one sharded session.

use clap::{Args, Subcommand};
use std::path::PathBuf;

/// Subcommands of `llm-decode-bench report`.
#[derive(Debug, Clone, Subcommand)]
pub enum ReportCommand {
    /// Merge the reports of a sharded session's shards (`run --shard i/N`) into one session
    /// report: counts add, percentiles are recomputed from every shard's values, rates add.
    Merge(ReportMergeArgs),
}

/// Flags of `llm-decode-bench report merge`.
#[derive(Debug, Clone, Args)]
pub struct ReportMergeArgs {
    /// The shard reports, one per shard of one session (any order; a missing shard is
    /// recorded in the merged report's `merge.shards`).
    #[arg(value_name = "FILE", required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    /// Where the merged session report goes (JSON, written atomically); an existing file is
    /// refused unless --overwrite is given, and it is never one of the shard reports.
    #[arg(long, value_name = "PATH", required = true)]
    pub out: PathBuf,
    /// Let --out replace an existing file (never a shard report being read).
    #[arg(long)]
    pub overwrite: bool,
}
