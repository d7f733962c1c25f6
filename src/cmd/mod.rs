//! Subcommand implementations: each turns parsed flags into a call into the library.

pub mod run;
pub mod sim;

use crate::cli::{Cli, Command};
use std::process::ExitCode;

/// Runs the parsed command line.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Some(Command::Sim(args)) => sim::run(*args).await,
        Some(Command::Run(args)) => run::run_headless(*args).await,
        None => sim::run_default().await,
    }
}
