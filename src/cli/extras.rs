//! Flags of the helper subcommands: `config`, `completions`, `man`.

use clap::Args;

/// Flags of `llm-decode-bench config`.
#[derive(Debug, Clone, Args)]
pub struct ConfigArgs {
    /// Print a commented config file holding every flag of `run` at its default.
    #[arg(long)]
    pub print_default: bool,
}

/// Flags of `llm-decode-bench completions`.
#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}
