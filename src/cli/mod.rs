//! Command-line interface: clap derive definitions of every subcommand and flag.

pub(crate) mod bench;
pub(crate) mod compare;
pub mod config_file;
pub(crate) mod conversation_flags;
pub(crate) mod demo;
pub(crate) mod extras;
pub(crate) mod observe_flags;
pub(crate) mod prometheus;
pub(crate) mod report;
pub(crate) mod report_merge;
pub mod resume_flags;
pub(crate) mod run;
pub(crate) mod run_bounds;
pub(crate) mod runs_flags;
pub(crate) mod shard_flags;
pub(crate) mod shard_session;
pub(crate) mod sim;
pub(crate) mod slo_search_flags;
pub(crate) mod source_addrs;
pub(crate) mod sweep_flags;
pub(crate) mod vllm_compat;
pub(crate) mod vllm_prefix;
pub(crate) mod vllm_refused;
pub(crate) mod vllm_trace;

#[cfg(test)]
mod extreme_tests;

use clap::{Parser, Subcommand};

pub use crate::version::VERSION;

/// Live benchmark and monitor for LLM serving: sustained-decode matrices and prefix-cache
/// routing experiments against OpenAI-compatible servers and gateways.
#[derive(Debug, Parser)]
#[command(name = "llm-decode-bench", version = VERSION, about, long_about = None)]
pub struct Cli {
    /// What to do (default: the demo, on an embedded simulated cluster).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Demo flags (used when no subcommand is given).
    #[command(flatten)]
    pub demo: demo::DemoArgs,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve a simulated cluster (vLLM- or llama.cpp-like replicas behind an AIBrix-like gateway) on loopback.
    Sim(Box<sim::SimArgs>),
    /// Run a benchmark session (decode matrix, routing experiment) against a server or gateway.
    Run(Box<run::RunArgs>),
    /// Render saved session reports again: text, markdown, html (several as one page), csv or the vllm bench serve fields; `report merge` merges a sharded session's reports.
    #[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true, disable_help_subcommand = true)]
    Report(Box<report::ReportArgs>),
    /// Compare two session reports cell by cell (two sweeps set by set, or one sweep's sets side
    /// by side); exit 1 when a headline figure regressed.
    Compare(Box<compare::CompareArgs>),
    /// Print a `run --config` file (`--print-default`: every flag at its default, commented).
    Config(extras::ConfigArgs),
    /// Print a shell completion script (bash, zsh, fish, ...) on stdout.
    Completions(extras::CompletionsArgs),
    /// Print the man page (roff) on stdout, e.g. `llm-decode-bench man > llm-decode-bench.1`.
    Man,
    /// The firehose bench: the tool's client cost, lag and memory against a raw baseline client (BENCHMARKS.md).
    Bench(Box<bench::BenchArgs>),
    /// The bench instrument's streaming server (firehose or paced), run in its own process.
    #[command(hide = true)]
    BenchServer(Box<bench::BenchServerArgs>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_flag_is_documented() {
        fn walk(cmd: &clap::Command) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if id == "help" || id == "version" {
                    continue;
                }
                assert!(arg.get_help().is_some(), "{} --{id} has no help", cmd.get_name());
            }
            cmd.get_subcommands().for_each(walk);
        }
        walk(&Cli::command());
    }
}
