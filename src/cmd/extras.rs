//! The helper subcommands: a default config file, shell completions and the man page, all
//! generated from the clap definition of the command line (src/cli/).

use super::session;
use crate::cli::extras::ConfigArgs;
use crate::cli::{Cli, config_file};
use clap::CommandFactory;
use std::process::ExitCode;

/// `config --print-default`: a commented config holding every flag of `run`.
pub(crate) fn config(args: &ConfigArgs) -> ExitCode {
    if !args.print_default {
        return session::usage("config: nothing to do; `config --print-default` prints a full config");
    }
    let cli = Cli::command();
    match cli.find_subcommand("run") {
        Some(run) => printed(crate::stdio::write_out(config_file::print_default(run).as_bytes())),
        None => ExitCode::FAILURE,
    }
}

/// Exit 0 once the output is out (or its reader gone), 1 when stdout failed otherwise.
fn printed(written: std::io::Result<()>) -> ExitCode {
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            crate::err_line!("error: cannot write to stdout: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `completions SHELL`: the completion script on stdout.
pub(crate) fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut cli = Cli::command();
    // Generated in memory: clap_complete panics on a failed write (a closed pipe).
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cli, "llm-decode-bench", &mut script);
    printed(crate::stdio::write_out(&script))
}

/// `man`: the man page of the command and its subcommands (roff) on stdout.
pub(crate) fn man() -> anyhow::Result<ExitCode> {
    let cli = Cli::command();
    let mut out = Vec::new();
    clap_mangen::Man::new(cli.clone()).render(&mut out)?;
    for sub in cli.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("llm-decode-bench-{}", sub.get_name());
        let page = sub.clone().name(name).version(crate::cli::VERSION);
        out.extend_from_slice(b"\n");
        clap_mangen::Man::new(page).render(&mut out)?;
    }
    Ok(printed(crate::stdio::write_out(&out)))
}
