//! Command-line interface: clap derive definitions of every subcommand and flag.

pub mod compare;
pub mod demo;
pub mod run;
pub mod sim;

use clap::{Parser, Subcommand};

/// Live benchmark and monitor for LLM serving: sustained-decode matrices and prefix-cache
/// routing experiments against OpenAI-compatible servers and gateways.
#[derive(Debug, Parser)]
#[command(name = "llm-decode-bench", version, about, long_about = None)]
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
    /// Serve a simulated cluster (vLLM-like replicas behind an AIBrix-like gateway) on loopback.
    Sim(Box<sim::SimArgs>),
    /// Run a benchmark session (decode matrix, routing experiment) against a server or gateway.
    Run(Box<run::RunArgs>),
    /// Compare two session reports cell by cell; exit 1 when a headline figure regressed.
    Compare(Box<compare::CompareArgs>),
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
