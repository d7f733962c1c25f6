//! The tool's version string, shared by `--version` (cli) and the bench report (bench).

/// `--version`: the crate version and the git commit it was built from (src/build.rs).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("LLM_DECODE_BENCH_COMMIT"), ")");
