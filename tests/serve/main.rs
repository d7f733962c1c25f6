//! The `serve` suite (`cargo test --test serve`): the serve experiment (`run --plan serve`,
//! [`plan`]), its datasets ([`dataset`], [`prefix`], [`trace`]) and the `--tokenizer` file that sizes them ([`tokenizer`]), its per-request lengths ([`lengths`]) and goodput under an SLO ([`goodput`]), repeated runs of every kind of cell ([`repetitions`]),
//! against the simulator.

#[path = "../common/mod.rs"]
mod common;

mod conversation;
mod dataset;
mod goodput;
mod lengths;
mod plan;
mod prefix;
mod repetitions;
mod shards;
mod slo_search;
mod tokenizer;
mod trace;
