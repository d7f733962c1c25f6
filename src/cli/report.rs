//! `llm-decode-bench report`: flags of re-rendering saved session reports.

use crate::report::formats::ReportFormat;
use crate::stats::{PercentileList, percentile_list};
use clap::Args;
use std::path::PathBuf;

/// Flags of `llm-decode-bench report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// `report merge`: one report from the reports of a sharded session's shards.
    #[command(subcommand)]
    pub command: Option<super::report_merge::ReportCommand>,
    /// The session reports to render (the JSON a run wrote). Several: html makes one page
    /// (each report's sections and one Pareto chart over all of them), text and markdown render
    /// each in turn under a `==> FILE <==` line, csv and vllm take one.
    #[arg(value_name = "FILE", required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    /// Output format: text (the tables the run printed), markdown (the same as GitHub tables),
    /// html (one self-contained page), csv (one row per cell or phase), vllm (`vllm bench
    /// serve`'s result fields per cell and phase, JSON).
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    /// Write the output to this file (atomically) instead of stdout; an existing file is
    /// refused unless --overwrite is given.
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
    /// Let --out replace an existing file (never the report being read).
    #[arg(long)]
    pub overwrite: bool,
    /// With --format csv: one row per request (decode and burst attempts) instead of per cell.
    #[arg(long)]
    pub per_request: bool,
    /// Plain ASCII tables (text format).
    #[arg(long)]
    pub ascii: bool,
    /// With --format vllm: the latency percentiles exported, comma-separated, e.g.
    /// 50,90,99,99.9 (vLLM's `--metric-percentiles`; its default is 99).
    #[arg(long, value_parser = percentile_list, default_value = "99")]
    pub percentiles: PercentileList,
}
