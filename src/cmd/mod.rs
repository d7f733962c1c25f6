//! Subcommand implementations: each turns parsed flags into a call into the library.

pub(crate) mod bench;
pub(crate) mod compare;
pub(crate) mod demo;
pub mod exit;
pub(crate) mod extras;
pub mod headless;
pub(crate) mod metrics_page;
pub(crate) mod observe;
pub(crate) mod report;
pub(crate) mod report_merge;
pub mod run;
pub(crate) mod session;
pub(crate) mod sim;
pub(crate) mod sweep;

use crate::cli::{Cli, Command};
use std::process::ExitCode;

/// Runs the parsed command line.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Some(_) if cli.demo.demo => Ok(session::usage("--demo runs on its own; drop the subcommand or --demo")),
        Some(Command::Sim(args)) => sim::run(*args).await,
        Some(Command::Run(args)) => run::run(*args).await,
        Some(Command::Config(args)) => Ok(extras::config(&args)),
        Some(Command::Completions(args)) => Ok(extras::completions(args.shell)),
        Some(Command::Man) => extras::man(),
        Some(Command::Report(args)) => Ok(report::run(&args)),
        Some(Command::Compare(args)) => Ok(compare::run(*args)),
        Some(Command::Bench(args)) => bench::bench(*args).await,
        Some(Command::BenchServer(args)) => bench::bench_server(*args).await,
        None => demo::run_demo(cli.demo).await,
    }
}
