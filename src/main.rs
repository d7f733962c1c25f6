//! The `llm-decode-bench` binary: parse the command line and hand over to the library.

use clap::{CommandFactory, Parser};
use llm_decode_bench::cli::{Cli, config_file, resume_flags};
use std::process::ExitCode;

fn main() -> ExitCode {
    // `run --config FILE` becomes the flags it holds, and `run --resume FILE` the flags its
    // report records, before clap checks them.
    let expanded = config_file::expand(&Cli::command(), std::env::args_os().collect())
        .and_then(|argv| resume_flags::expand(&Cli::command(), argv));
    let argv = match expanded {
        Ok(argv) => argv,
        Err(e) => {
            llm_decode_bench::err_line!("error: {e}");
            return ExitCode::from(llm_decode_bench::cmd::exit::USAGE);
        }
    };
    let cli = Cli::parse_from(argv);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            llm_decode_bench::err_line!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(llm_decode_bench::cmd::run(cli)) {
        Ok(code) => code,
        Err(e) => {
            // The error may quote the server (a preflight answer): its control characters are escaped.
            llm_decode_bench::err_line!("error: {}", llm_decode_bench::text_safe::line(&format!("{e:#}")));
            ExitCode::FAILURE
        }
    }
}
