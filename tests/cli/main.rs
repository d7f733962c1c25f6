//! The `cli` suite (`cargo test --test cli`): the helper subcommands ([`extras`]), the example
//! configs ([`example_configs`]), the bench instrument ([`bench`], its frames and chunk shapes
//! [`bench_frames`]), the runner's control paths ([`runner_control`]), `report merge` ([`report_merge`]) and the README's set-up
//! ([`setup`]).

#[path = "../common/mod.rs"]
mod common;

mod bench;
mod bench_frames;
mod bench_smoke;
mod bench_whole;
mod ca_store;
mod example_configs;
mod extras;
mod report_merge;
mod runner_control;
mod setup;
