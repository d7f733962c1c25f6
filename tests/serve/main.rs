//! The `serve` suite (`cargo test --test serve`): the serve experiment (`run --plan serve`,
//! [`plan`]) and goodput under an SLO ([`goodput`]), against the simulator.

#[path = "../common/mod.rs"]
mod common;

mod goodput;
mod plan;
