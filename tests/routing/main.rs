//! The `routing` suite (`cargo test --test routing`): routing sessions through the simulated
//! gateway ([`run`]), family-map balancing on larger fleets ([`fleet`]) and the router modes that
//! reproduce real vllm-router and sglang-router ([`real`]), and the prefix cache of phases run
//! again ([`warm`]); a sharded session's phases merged ([`sharded`]).

#[path = "../common/mod.rs"]
mod common;

mod conversation;
mod fleet;
mod real;
mod run;
mod sharded;
mod warm;
